"""What `migrate` does: one duequeue database copied into another, any of SQLite, PostgreSQL and
MySQL each way (store/transfer.py); with `--contract`, the schema's pending contract steps applied
(store/schema_steps.py)."""

from typing import TYPE_CHECKING

from duequeue.shared.lazy import LazyModule
from duequeue.store.schema_steps import Shape
from duequeue.store.store import Store

if TYPE_CHECKING:
    from duequeue.store import transfer
    from duequeue.store.copy_rows import Copied
else:
    # Loaded on first use, by migrate alone.
    transfer = LazyModule("duequeue.store.transfer")


def copy(db: str, to: str) -> "Copied":
    """Copy the database `db` into the empty database `to` (a new SQLite file is created)."""
    return transfer.copy(db, to)


def contract(store: Store, now: int) -> tuple[Shape, Shape, tuple[str, ...]]:
    """Apply the pending contract steps once every host runs a duequeue that knows them; the
    hosts' clock is the database server's where it has one. Return the schema's shape before
    and after, and the steps applied."""
    server = store.server_ms()
    return store.contract(server if server is not None else now)
