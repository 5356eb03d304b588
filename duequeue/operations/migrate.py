"""What `migrate` does: one duequeue database copied into another, any of SQLite, PostgreSQL and
MySQL each way (store/transfer.py)."""

from typing import TYPE_CHECKING

from duequeue.shared.lazy import LazyModule

if TYPE_CHECKING:
    from duequeue.store import transfer
    from duequeue.store.copy_rows import Copied
else:
    # Loaded on first use, by migrate alone.
    transfer = LazyModule("duequeue.store.transfer")


def copy(db: str, to: str) -> "Copied":
    """Copy the database `db` into the empty database `to` (a new SQLite file is created)."""
    return transfer.copy(db, to)
