"""test_retry_e2e.py again, with the database on PostgreSQL (see tests/pg.rerun_on_postgres)."""

import pytest

from tests import test_retry_e2e
from tests.pg import rerun_on_postgres

rerun_on_postgres(
    test_retry_e2e,
    globals(),
    skip={"test_a_target_that_already_has_the_fire_is_not_sent_again_after_retry"},
)


@pytest.fixture
def db_path(pg_url: str) -> str:
    return pg_url
