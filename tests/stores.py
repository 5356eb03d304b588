"""One database per test on every store: the `db`, `open_store` and `store` fixtures.

A test that asks for `db` (directly or through a fixture such as a module's `cli`) runs once on
SQLite and once on PostgreSQL (`tests/conftest.py` parametrises it, ids `sqlite` and `postgres`).
`db` is what the CLI takes for `--db`: the SQLite file's path (the same as `db_path`), or the
PostgreSQL URL of a fresh, empty schema (`tests/pg.py`'s `pg_url`, which fails instead of
skipping when DUEQUEUE_TEST_PG_REQUIRED=1). A test that opens the SQLite file itself, or asserts
what only SQLite has, is marked `@pytest.mark.sqlite_only` and runs on SQLite alone.
"""

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from duequeue.store.store import Store

STORES = ("sqlite", "postgres")

# The database location a command takes: an SQLite file or a postgresql:// URL.
Db = Path | str


def stores_for(marked_sqlite_only: bool) -> tuple[str, ...]:
    """Return the stores a test runs on."""
    return ("sqlite",) if marked_sqlite_only else STORES


def is_sqlite(db: Db) -> bool:
    """Tell whether `db` is an SQLite file rather than a PostgreSQL URL."""
    return isinstance(db, Path)


@pytest.fixture
def db(request: pytest.FixtureRequest, db_path: Path) -> Db:
    """Return a fresh database on the store this run of the test is for."""
    if request.param == "sqlite":
        return db_path
    url: str = request.getfixturevalue("pg_url")
    return url


@pytest.fixture
def open_store(db: Db) -> Callable[[], Store]:
    """Return a function that opens another connection (another Store) to `db`."""
    if is_sqlite(db):
        from duequeue.store.sqlite import connect as open_sqlite

        return lambda: open_sqlite(Path(db))
    from duequeue.store.postgres import connect as open_postgres

    return lambda: open_postgres(str(db))


@pytest.fixture
def store(open_store: Callable[[], Store]) -> Iterator[Store]:
    """Yield an open Store on `db`, closed after the test."""
    s = open_store()
    yield s
    s.close()


def created(db: Db) -> bool:
    """Tell whether duequeue has created its database at `db`: the SQLite file, or its tables."""
    if is_sqlite(db):
        return Path(db).exists()
    from tests.pg import admin_connect

    with admin_connect(str(db)) as conn:
        (found,) = conn.execute("SELECT to_regclass('reminders') IS NOT NULL").fetchall()
    return bool(found[0])


def reminder_count(db: Db) -> int:
    """Count the reminders in `db` from outside duequeue; 0 where it was never created."""
    if not created(db):
        return 0
    if is_sqlite(db):
        import apsw

        lite = apsw.Connection(str(db))
        try:
            (count,) = lite.execute("SELECT count(*) FROM reminders").fetchall()[0]
        except apsw.SQLError:  # the file exists but holds no duequeue tables
            return 0
        finally:
            lite.close()
        assert isinstance(count, int)
        return count
    from tests.pg import admin_connect

    with admin_connect(str(db)) as conn:
        (found,) = conn.execute("SELECT count(*) FROM reminders").fetchall()
    return int(found[0])
