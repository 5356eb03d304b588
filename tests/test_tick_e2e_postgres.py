"""The end-to-end tick tests of test_tick_e2e.py again, with the database on PostgreSQL.

Every command must work the same on both stores; these run the real CLI (add, tick, inspect)
against a PostgreSQL database through the same tests. A test that opens the SQLite file itself
is left out.
"""

import pytest

from tests import test_tick_e2e
from tests.test_tick_e2e import cli, http, smtp  # noqa: F401 - the fixtures those tests use

SQLITE_ONLY = {"test_a_row_with_its_email_sent_before_a_crash_gets_only_the_webhook"}


@pytest.fixture
def db_path(pg_url: str) -> str:
    """Hand the tests a postgresql:// URL where they expect an SQLite path: the CLI takes both."""
    return pg_url


for _name in dir(test_tick_e2e):
    if _name.startswith("test_") and _name not in SQLITE_ONLY:
        globals()[_name] = getattr(test_tick_e2e, _name)
