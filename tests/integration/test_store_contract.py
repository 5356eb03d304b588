"""The store contract (tests/store_contract.py), run on SQLite, PostgreSQL and MySQL.

`store` and `open_store` come from tests/stores.py, which runs each test once per store.
"""

import pytest

from tests.store_contract import ChangeContract, OperatorContract, StoreContract


@pytest.mark.mysql
class TestStore(StoreContract, OperatorContract, ChangeContract):
    """Every test of both contracts, on every store."""
