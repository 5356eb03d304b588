"""Stores: where reminders, targets and the delivery ledger live."""

from types import ModuleType

from duequeue.errors import StoreError
from duequeue.store.base import Store


def is_postgres_url(db: str) -> bool:
    """Return whether a --db value names a PostgreSQL database rather than an SQLite file."""
    return db.startswith(("postgresql://", "postgres://"))


def safe_url(url: str) -> str:
    """Return a --db value fit to print: a PostgreSQL URL with its password masked."""
    from duequeue import redact

    return redact.url(url)


def postgres_module() -> ModuleType:
    """Import the PostgreSQL store, or say how to install what it needs."""
    # Imported only on demand: the SQLite path never loads psycopg (an optional dependency).
    try:
        from duequeue.store import postgres
    except ImportError as exc:
        raise StoreError(
            "a postgresql:// database needs psycopg: pip install 'duequeue[postgres]'"
        ) from exc
    return postgres


def open_store(db: str, busy_timeout_s: float = 5.0, create: bool = True) -> Store:
    """Open the store a --db value names: a postgresql:// URL selects PostgreSQL, a path SQLite.

    `busy_timeout_s` is how long an SQLite write waits for another process's lock before
    failing; PostgreSQL locks rows, not the database, and a tick never waits on one. Without
    `create`, a missing SQLite file is an error instead of a new empty database.
    """
    if is_postgres_url(db):
        store: Store = postgres_module().PostgresStore(db)
        return store
    from duequeue.store.sqlite import SQLiteStore

    return SQLiteStore(db, busy_timeout_ms=max(1, round(busy_timeout_s * 1000)), create=create)
