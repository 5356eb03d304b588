"""Stores: where reminders, targets and the delivery ledger live."""

from duequeue.store.base import Store


def open_store(db: str, busy_timeout_s: float = 5.0) -> Store:
    """Open the store a --db value names: a file path selects SQLite.

    `busy_timeout_s` is how long a write waits for another process's lock before failing.
    """
    from duequeue.store.sqlite import SQLiteStore

    return SQLiteStore(db, busy_timeout_ms=max(1, round(busy_timeout_s * 1000)))
