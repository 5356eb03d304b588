"""test_cli_ops.py again, with the database on PostgreSQL (see tests/pg.rerun_on_postgres)."""

import pytest

from tests import test_cli_ops
from tests.pg import rerun_on_postgres

rerun_on_postgres(
    test_cli_ops,
    globals(),
    skip={
        # SQLite-only: the journal-mode check, and a missing database file
        "test_doctor_passes_against_a_real_smtp_server_and_sends_nothing",
        "test_doctor_reports_a_missing_database_without_creating_it",
        "test_doctor_reports_a_damaged_database",
    },
)


@pytest.fixture
def db_path(pg_url: str) -> str:
    return pg_url
