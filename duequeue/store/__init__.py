"""Stores: where reminders, targets and the delivery ledger live."""

from duequeue.store.base import Store


def open_store(db: str) -> Store:
    """Open the store a --db value names: a file path selects SQLite."""
    from duequeue.store.sqlite import SQLiteStore

    return SQLiteStore(db)
