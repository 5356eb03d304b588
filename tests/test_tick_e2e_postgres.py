"""test_tick_e2e.py again, with the database on PostgreSQL (see tests/pg.rerun_on_postgres)."""

import pytest

from tests import test_tick_e2e
from tests.pg import rerun_on_postgres

rerun_on_postgres(
    test_tick_e2e,
    globals(),
    skip={"test_a_row_with_its_email_sent_before_a_crash_gets_only_the_webhook"},
)


@pytest.fixture
def db_path(pg_url: str) -> str:
    return pg_url
