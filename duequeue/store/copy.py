"""`migrate`'s reader and writer of a PostgreSQL database (store/transfer.py does the copy).

The reader streams each table through a server-side (named) cursor in one REPEATABLE READ, READ
ONLY transaction: one snapshot, bounded memory. The writer loads the target in one transaction
with COPY, the fastest way in, after locking the tables so that nobody adds or ticks between its
emptiness check and its commit; each id sequence is then moved past the ids copied.
"""

import contextlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TypeVar

import psycopg

from duequeue.errors import StoreError
from duequeue.store.copy_rows import (
    BATCH,
    META,
    SEARCH,
    TABLES,
    Load,
    Row,
    quoted,
    refuse_other_version,
    refuse_rows,
    select,
)
from duequeue.store.postgres import Cursor, PostgresBackend

T = TypeVar("T")
# No statement of a copy is bounded by the store's timeouts (30 s at most a statement by
# default): a table of 10^6 rows takes longer, and the source idles while the target writes.
_UNBOUNDED = (
    "SET LOCAL statement_timeout = 0",
    "SET LOCAL idle_in_transaction_session_timeout = 0",
)


class PostgresReader:
    """A PostgreSQL database, read in one snapshot while open."""

    def __init__(self, url: str) -> None:
        # Refuses a newer schema; brings an older one up to date.
        self.backend = PostgresBackend(url)
        self.where = f"PostgreSQL {self.backend.where}"
        refuse_other_version(self.where, self.backend)  # closes it when refused
        self.conn = self.backend.conn
        try:
            self.conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            for sql in _UNBOUNDED:
                self.conn.execute(sql)
        except psycopg.Error as exc:
            self.backend.close()
            raise StoreError(f"reading {self.where}: {self.backend._line(exc)}") from exc
        self._cursors = 0

    def rows(self, table: str, names: Sequence[str]) -> Iterator[Row]:
        self._cursors += 1
        try:
            with self.conn.cursor(name=f"duequeue_migrate_{self._cursors}") as cur:
                cur.itersize = BATCH
                cur.execute(select(table, names).encode())
                yield from cur
        except psycopg.Error as exc:
            raise StoreError(f"reading {self.where}: {self.backend._line(exc)}") from exc

    def close(self) -> None:
        with contextlib.suppress(psycopg.Error):  # a broken link ends its transaction anyway
            self.conn.execute("ROLLBACK")
        self.backend.close()


class PostgresWriter:
    """A PostgreSQL database to copy into; it must hold no duequeue rows."""

    def __init__(self, url: str) -> None:
        self.backend = PostgresBackend(url)  # creates the tables of an empty database
        self.where = f"PostgreSQL {self.backend.where}"
        refuse_other_version(self.where, self.backend)  # closes it when refused

    def transact(self, work: Callable[[Load], T]) -> T:
        return self.backend.transact_cursor(
            lambda cur: work(_PostgresLoad(cur, self.where)),
            what="migrate",
            repeatable=False,  # a lost connection rolls it all back; run migrate again
        )

    def close(self, ok: bool) -> None:
        self.backend.close()


class _PostgresLoad:
    def __init__(self, cur: Cursor, where: str) -> None:
        self.cur = cur
        self.where = where

    def refuse_unless_empty(self) -> None:
        for sql in _UNBOUNDED:
            self.cur.execute(sql.encode())
        # Nobody may add or tick in between the emptiness check and the copy.
        self.cur.execute(
            f"LOCK TABLE {', '.join(TABLES)}, {META}, {SEARCH} IN EXCLUSIVE MODE".encode()
        )
        for table in TABLES:
            self.cur.execute(f"SELECT count(*) FROM {table}".encode())
            row = self.cur.fetchone()
            refuse_rows(self.where, table, row[0] if row else 0)

    def insert(self, table: str, names: Sequence[str], rows: Iterable[Row]) -> int:
        n = 0
        with self.cur.copy(f"COPY {table} ({quoted(names)}) FROM STDIN".encode()) as copy:
            for values in rows:
                copy.write_row(values)
                n += 1
        return n

    def move_ids(self, table: str) -> None:
        # Rows came with their ids: move the id sequence past them, or the next add collides.
        self.cur.execute(
            f"""SELECT setval(pg_get_serial_sequence('{table}', 'id'),
                              (SELECT coalesce(max(id), 0) + 1 FROM {table}), false)""".encode()
        )
