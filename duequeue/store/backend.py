"""The seam between the store (store.py) and a database driver: a Backend.

A backend is one adapter, one module: it connects (and creates or expands the schema, from its
dialect's schema file and numbered migrations, by schema_steps.py's rules; `contract` applies the
rest), runs a unit of work as one transaction, maps its driver's errors to StoreError /
StoreBusyError, adds the health checks only its database has, says whose clock judges what is
due, and names its Dialect (sql.py: what its SQL spells differently, as data, its locking style
among them). Every query lives above it,
written once. Backends are chosen by the URL scheme of `--db` (store/__init__.py's registry):
sqlite.py, postgres.py.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol, TypeVar

from duequeue.store.sql import Dialect, Run

if TYPE_CHECKING:
    from duequeue.store import schema_steps
    from duequeue.store.records import HealthCheck, HostTick

T = TypeVar("T")


class Listener(Protocol):
    """A wait that ends early when a write elsewhere makes a fire due (`worker`'s, between
    ticks): PostgreSQL's LISTEN (pg_listen.py)."""

    def wait(self, timeout_s: float) -> list[int | None] | None:
        """Wait up to `timeout_s`; return the instants (unix ms; None: not named) of fires made
        due meanwhile, [] if none, or None if it cannot listen now (poll as without it)."""

    def close(self) -> None:
        """Stop listening."""


class Backend(Protocol):
    """One open database, adapted for the store: everything the store asks of a database.

    A database with one host and no server (SQLite) answers the clock and host questions with
    None and (), and `bound` and `interrupt` do nothing.
    """

    # What its SQL spells differently, as data; among it the locking style: `skip_locked`
    # (concurrent claims pass each other's rows by, or "" where one writer at a time already
    # excludes them), `for_update` (an operator's change locks the rows it read), and
    # `read_before_claim` (a single-writer database reads before it takes the write lock).
    dialect: Dialect
    where: str  # the database as an error message may name it (a password masked)
    created: bool  # opening it created the database (or its tables)

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

    def shape(self, run: Run) -> schema_steps.Shape:
        """Return the schema's floor and version as the database records them (schema_steps.py)."""

    def contract(self) -> tuple[schema_steps.Shape, list[str]]:
        """Apply the pending contract steps in one transaction, under the lock that opening
        takes to expand; return the shape after them and the names of the steps applied."""

    def server_ms(self) -> int | None:
        """Return the database server's clock in unix ms (one round trip), or None where the
        host's own clock is the queue's."""

    def note_tick(self, host: str, host_ms: int, release: str | None = None) -> int | None:
        """Note that `host`, whose clock reads `host_ms` and which reads tz data `release`,
        ticks now (for `stats`, `doctor`); return the server's clock in unix ms, or None where
        the host's own clock is the queue's."""

    def hosts(self, run: Run, now: int) -> tuple[HostTick, ...]:
        """Return the hosts noted ticking in the last day, the latest first; () when one host
        is all there can be."""

    def bound(self, until: float | None) -> None:
        """Let no wait, connecting included, end later than `until` (time.monotonic()); None
        lifts the bound. Nothing where every wait is shorter than a tick's margin anyway."""

    def interrupt(self) -> None:
        """Cut the call running on another thread short and fail every later one at once
        (safe from any thread); nothing where every call is bounded by a timeout of its own."""

    def drain(self) -> None:
        """Tune the connection for a process that will commit without pause (a tick's commit
        helper draining a backlog); nothing where the server does that work (SQLite: a
        larger page cache and checkpoints on a thread of their own)."""

    def listener(self) -> Listener | None:
        """Return a way to wait for fires made due by other processes, or None where only
        polling can tell (SQLite)."""

    def close(self) -> None:
        """Release the connection."""
