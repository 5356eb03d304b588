"""test_worker.py again, with the database on PostgreSQL (see tests/pg.rerun_on_postgres)."""

import pytest

from tests import test_worker
from tests.pg import rerun_on_postgres

rerun_on_postgres(test_worker, globals(), skip=set())


@pytest.fixture
def db_path(pg_url: str) -> str:
    return pg_url
