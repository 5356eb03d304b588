"""test_no_target_lost.py again, on PostgreSQL (see tests/pg.rerun_on_postgres)."""

import pytest

from tests import test_no_target_lost
from tests.pg import rerun_on_postgres

rerun_on_postgres(test_no_target_lost, globals(), skip=set())


@pytest.fixture
def db_path(pg_url: str) -> str:
    return pg_url
