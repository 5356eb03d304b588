"""Shared fixtures: an isolated environment and a fresh database on every store."""

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from tests.servers import HttpSink

T0 = datetime(2027, 1, 5, 8, 0, tzinfo=UTC)


@pytest.fixture(autouse=True)
def isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Keep every test away from the user's real config, data dir and DUEQUEUE_* settings."""
    import os

    for name in list(os.environ):
        if name.startswith("DUEQUEUE_"):
            monkeypatch.delenv(name)
    # In-process tests freeze this host's clock (freezegun); a PostgreSQL server's clock cannot
    # be frozen, so they tick by the host's. Processes (tests/procs.py) get the default, the
    # server's: tests/e2e/test_clock_skew.py.
    monkeypatch.setenv("DUEQUEUE_CLOCK", "host")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))
    yield


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "dq.db"


@pytest.fixture
def http() -> Iterator["HttpSink"]:
    """A loopback HTTP receiver (tests/servers.py) for the test, closed after it."""
    from tests.servers import HttpSink

    with HttpSink() as sink:
        yield sink


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "sqlite_only: run a test that asks for `db` on SQLite alone (tests/stores.py)"
    )
    config.addinivalue_line(
        "markers", "mysql: run a test that asks for `db` on MySQL too (tests/stores.py)"
    )


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Run every test that needs `db` once per store, ids `sqlite` and `postgres` (and `mysql`
    for a test marked so)."""
    if "db" in metafunc.fixturenames:
        marked = metafunc.definition.get_closest_marker
        kinds = stores_for(marked("sqlite_only") is not None, marked("mysql") is not None)
        metafunc.parametrize("db", kinds, indirect=True)


from tests.my import mysql_url  # noqa: E402, F401 - MySQL fixtures, see tests/my.py
from tests.pg import pg_database, pg_url  # noqa: E402, F401 - PostgreSQL fixtures, see tests/pg.py
from tests.stores import db, open_store, store, stores_for  # noqa: E402, F401 - see tests/stores.py
