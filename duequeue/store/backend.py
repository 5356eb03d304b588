"""The seam between the one SQL store (sqlstore.py) and a database driver: a Backend.

A backend is one adapter, one module: it connects (and creates or upgrades the schema, from its
dialect's schema file and numbered migrations, see schema.py), runs a unit of work as one
transaction, maps its driver's errors to StoreError / StoreBusyError, adds the health checks only
its database has, and names its Dialect (sql.py: what its SQL spells differently, as data).
Every query lives above it, written once. Backends are chosen by the URL scheme of `--db`
(store/__init__.py's registry): sqlite.py, postgres.py.
"""

from collections.abc import Callable
from typing import Protocol, TypeVar

from duequeue.store.base import HealthCheck
from duequeue.store.sql import Dialect, Run

T = TypeVar("T")


class Backend(Protocol):
    """One open database, adapted for the SQL store."""

    dialect: Dialect
    where: str  # the database as an error message may name it (a password masked)

    def transact(
        self, work: Callable[[Run], T], *, what: str, write: bool, repeatable: bool = True
    ) -> T:
        """Run `work` in one transaction and return its result; roll back if it raises.

        `write`: the transaction writes (SQLite takes the write lock up front, so concurrent
        writers queue on the busy timeout instead of failing on a lock upgrade). `repeatable`:
        the work may run a second time if the connection broke during the first (a backend
        that reconnects, PostgreSQL, repeats only such work). Driver errors leave as StoreError,
        or StoreBusyError when the same work may succeed later (a lock held past the busy
        timeout, a full disk, a lost connection); `what` names the work in the message.
        """

    def health(self, run: Run) -> list[HealthCheck]:
        """Return doctor's checks of the database itself (schema version first)."""

    def close(self) -> None:
        """Release the connection."""
