"""What `migrate` copies (store/transfer.py): the tables in order, one column list per table, and
what each database's reader and writer provide (copy_sqlite.py, copy.py, copy_mysql.py).

The columns are the SQLite schema's, which the schema parity tests hold the other two to
(MySQL's generated columns are left to its server); leases are not copied.
"""

import functools
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import apsw

from duequeue.errors import StoreError
from duequeue.store import schema
from duequeue.store.sqlite import schema_sql

if TYPE_CHECKING:
    from duequeue.store.backend import Backend

T = TypeVar("T")

# Parents before children, so the foreign keys hold row by row.
TABLES = (
    "reminders",
    "targets",
    "deliveries",
    "dead_letters",
    "target_retries",
    "reminder_changes",
    "tick_marks",
    "fire_moves",
)
# Copied as they are, without ids: the queue's tz release and its zones' digests.
META = "queue_meta"
META_COLUMNS = ("name", "value")
# What search finds of each reminder: an FTS5 table keyed by rowid in SQLite, a plain table
# (reminder_id, text) in PostgreSQL and MySQL.
SEARCH = "reminder_search"
SEARCH_COLUMNS = ("reminder_id", "text")
_NOT_COPIED = {"lease_owner", "lease_until"}
BATCH = 1000  # rows a batch carries (an executemany, a fetch of a server-side cursor)
Row = tuple[Any, ...]


@dataclass(frozen=True, slots=True)
class Copied:
    """How many rows of each table went over."""

    reminders: int
    targets: int
    deliveries: int
    dead_letters: int
    target_retries: int
    reminder_changes: int = 0  # what reschedule and edit did (history)
    tick_marks: int = 0  # the last successful tick's time (one row at most)
    fire_moves: int = 0


@functools.cache
def columns(table: str) -> tuple[str, ...]:
    """Return the columns `migrate` copies of `table`: the SQLite schema's, leases left out."""
    conn = apsw.Connection(":memory:")
    try:
        conn.execute(schema_sql())
        names = [str(r[1]) for r in conn.execute(f'PRAGMA table_info("{table}")')]
    finally:
        conn.close()
    return tuple(c for c in names if c not in _NOT_COPIED)


def select(table: str, names: Sequence[str]) -> str:
    """Return the SELECT of `names` from `table`, in the order of its first column."""
    return f"SELECT {quoted(names)} FROM {table} ORDER BY 1"


def quoted(names: Sequence[str]) -> str:
    # `change` is a reserved word in MySQL (whose sessions run with ANSI_QUOTES).
    return ", ".join(f'"{n}"' for n in names)


class Reader(Protocol):
    """A source database, read in one snapshot while open."""

    where: str

    def rows(self, table: str, names: Sequence[str]) -> Iterator[Row]:
        """Yield `names` of every row of `table`, in the order of the first column."""
        ...

    def close(self) -> None: ...


class Load(Protocol):
    """A target database inside the one transaction that fills it."""

    def refuse_unless_empty(self) -> None: ...

    def insert(self, table: str, names: Sequence[str], rows: Iterable[Row]) -> int:
        """Write `rows` into `table`'s `names`; return how many."""
        ...

    def move_ids(self, table: str) -> None:
        """Move `table`'s id counter past the ids copied into it."""
        ...


class Writer(Protocol):
    where: str

    def transact(self, work: Callable[[Load], T]) -> T:
        """Run `work` in one transaction on the target: committed when it returns."""
        ...

    def close(self, ok: bool) -> None: ...


def refuse_other_version(where: str, backend: "Backend") -> None:
    """Refuse a database at another schema version than this duequeue's (one a newer duequeue
    expanded, its floor still this one's, opens fine): the columns copied are this version's.
    A database refused, or one whose version cannot be read, is closed before the error leaves."""
    try:
        found = backend.transact(backend.shape, what="reading the schema version", write=False)
    except BaseException:
        backend.close()
        raise
    if found.version != schema.VERSION:
        backend.close()
        raise StoreError(
            f"{where} has schema version {found.version}; this duequeue's migrate copies "
            f"schema {schema.VERSION} only: run the migrate of the duequeue that made it"
        )


def refuse_rows(where: str, table: str, count: object) -> None:
    """Raise the error of a target that already holds `count` rows of `table`."""
    if count:
        raise StoreError(
            f"{where} already holds {count} {table.replace('_', ' ')}: "
            "migrate copies into an empty database only"
        )
