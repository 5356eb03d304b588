"""test_cli_import.py again, with the database on PostgreSQL (see tests/pg.rerun_on_postgres)."""

import pytest

from tests import test_cli_import
from tests.pg import rerun_on_postgres

rerun_on_postgres(
    test_cli_import,
    globals(),
    skip={
        # these count rows by opening the SQLite file
        "test_a_bad_line_is_reported_by_number_and_nothing_is_written",
        "test_a_bad_line_leaves_an_existing_database_unchanged",
        "test_a_line_that_is_not_utf8_is_reported",
        "test_import_reads_stdin",
    },
)


@pytest.fixture
def db_path(pg_url: str) -> str:
    return pg_url
