"""Stores: where reminders, targets and the delivery ledger live."""

from duequeue.errors import StoreError
from duequeue.store.base import Store


def is_postgres_url(db: str) -> bool:
    """Return whether a --db value names a PostgreSQL database rather than an SQLite file."""
    return db.startswith(("postgresql://", "postgres://"))


def open_store(db: str) -> Store:
    """Open the store a --db value names: a postgresql:// URL selects PostgreSQL, a path SQLite."""
    if is_postgres_url(db):
        # Imported only here: the SQLite path never loads psycopg (an optional dependency).
        try:
            from duequeue.store.postgres import PostgresStore
        except ImportError as exc:
            raise StoreError(
                "a postgresql:// database needs psycopg: pip install 'duequeue[postgres]'"
            ) from exc
        return PostgresStore(db)
    from duequeue.store.sqlite import SQLiteStore

    return SQLiteStore(db)
