"""The store contract (tests/store_contract.py), run on SQLite and on PostgreSQL.

`store` and `open_store` come from tests/stores.py, which runs each test once per store.
"""

from tests.store_contract import ChangeContract, OperatorContract, StoreContract


class TestStore(StoreContract, OperatorContract, ChangeContract):
    """Every test of both contracts, on every store."""
