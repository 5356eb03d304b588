"""What `migrate` does: an SQLite database copied into an empty PostgreSQL one (store/copy.py)
or an empty MySQL one (store/copy_mysql.py)."""

from typing import TYPE_CHECKING

from duequeue.errors import BadInputError
from duequeue.shared.lazy import LazyModule
from duequeue.store import backend_module, is_postgres_url, scheme

if TYPE_CHECKING:
    from duequeue.store import copy as store_copy
    from duequeue.store import copy_mysql
    from duequeue.store.copy import Copied
else:
    # Loaded on first use, by migrate alone: the copies need psycopg or PyMySQL.
    store_copy = LazyModule("duequeue.store.copy")
    copy_mysql = LazyModule("duequeue.store.copy_mysql")


def copy(db: str, to: str) -> "Copied":
    """Copy the SQLite database `db` into the empty PostgreSQL or MySQL database `to`."""
    if scheme(db) != "sqlite":
        raise BadInputError(
            f"migrate copies from an SQLite file, not a {scheme(db)}:// URL", field="db"
        )
    if scheme(to) in ("mysql", "mariadb"):
        backend_module(to)  # a clear error when PyMySQL is missing
        return copy_mysql.sqlite_to_mysql(db, to)
    if not is_postgres_url(to):
        raise BadInputError(
            "give the postgresql:// or mysql:// URL of an empty database to copy into",
            field="to",
        )
    backend_module(to)  # a clear error when psycopg is missing
    return store_copy.sqlite_to_postgres(db, to)
