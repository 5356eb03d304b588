"""One database per test on every store: the `db`, `open_store` and `store` fixtures.

A test that asks for `db` (directly or through a fixture such as a module's `cli`) runs once on
SQLite and once on PostgreSQL (`tests/conftest.py` parametrises it, ids `sqlite` and `postgres`);
one marked `@pytest.mark.mysql` (the store contract, the guarantee, overlap and fault suites)
runs on MySQL too (id `mysql`, `tests/my.py`'s `mysql_url`): the rest of the suite runs the same
statements through the same store, and MySQL's minutes are kept for what tells backends apart.
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
WITH_MYSQL = (*STORES, "mysql")

# The database location a command takes: an SQLite file or a postgresql:// URL.
Db = Path | str


def stores_for(marked_sqlite_only: bool, marked_mysql: bool = False) -> tuple[str, ...]:
    """Return the stores a test runs on."""
    if marked_sqlite_only:
        return ("sqlite",)
    return WITH_MYSQL if marked_mysql else STORES


def is_sqlite(db: Db) -> bool:
    """Tell whether `db` is an SQLite file rather than a database server's URL."""
    return isinstance(db, Path)


def is_mysql(db: Db) -> bool:
    """Tell whether `db` is a mysql:// URL."""
    return isinstance(db, str) and db.startswith("mysql://")


@pytest.fixture
def db(request: pytest.FixtureRequest, db_path: Path) -> Db:
    """Return a fresh database on the store this run of the test is for."""
    if request.param == "sqlite":
        return db_path
    url: str = request.getfixturevalue("mysql_url" if request.param == "mysql" else "pg_url")
    return url


@pytest.fixture
def open_store(db: Db) -> Callable[[], Store]:
    """Return a function that opens another connection (another Store) to `db`."""
    if is_sqlite(db):
        from duequeue.store.sqlite import connect as open_sqlite

        return lambda: open_sqlite(Path(db))
    if is_mysql(db):
        from duequeue.store.mysql import connect as open_mysql

        return lambda: open_mysql(str(db))
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
    if is_mysql(db):
        from tests.my import query

        return bool(query(str(db), "SHOW TABLES LIKE 'reminders'"))
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
    if is_mysql(db):
        from tests.my import query

        return int(query(str(db), "SELECT count(*) FROM reminders")[0][0])
    from tests.pg import admin_connect

    with admin_connect(str(db)) as conn:
        (found,) = conn.execute("SELECT count(*) FROM reminders").fetchall()
    return int(found[0])
