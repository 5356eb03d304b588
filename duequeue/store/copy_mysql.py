"""`migrate`'s reader and writer of a MySQL / MariaDB database (store/transfer.py does the copy).

The reader streams each table through an unbuffered cursor (SSCursor) in one REPEATABLE READ
transaction started WITH CONSISTENT SNAPSHOT: one snapshot, bounded memory. The writer loads the
target in one transaction, in batched INSERTs (one multi-row statement a batch), after locking
each table's rows and the gap after them; the generated columns (schema_mysql.sql) are the
server's to compute, and InnoDB moves each id counter past the ids copied by itself.
"""

import contextlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TypeVar

import pymysql
import pymysql.cursors

from duequeue.errors import StoreError
from duequeue.store.copy_rows import (
    BATCH,
    TABLES,
    Load,
    Row,
    quoted,
    refuse_other_version,
    refuse_rows,
    select,
)
from duequeue.store.mysql import Cursor, MySQLBackend, _line

T = TypeVar("T")


class MySQLReader:
    """A MySQL database, read in one snapshot while open."""

    def __init__(self, url: str) -> None:
        # Refuses a newer schema; brings an older one up to date.
        self.backend = MySQLBackend(url)
        self.where = f"MySQL {self.backend.where}"
        refuse_other_version(self.where, self.backend)  # closes it when refused
        self.conn = self.backend.conn
        try:
            with self.conn.cursor() as cur:
                if self.backend.mariadb:
                    # The snapshot idles while the target is opened (its schema made) and
                    # between tables: not the end of a client cut mid-transaction.
                    cur.execute("SET SESSION idle_transaction_timeout = 0")
                cur.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
                cur.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY")
        except pymysql.Error as exc:
            self.backend.close()
            raise StoreError(f"reading {self.where}: {_line(exc)}") from exc

    def rows(self, table: str, names: Sequence[str]) -> Iterator[Row]:
        try:
            with self.conn.cursor(pymysql.cursors.SSCursor) as cur:
                cur.execute(select(table, names))
                while batch := cur.fetchmany(BATCH):
                    yield from batch
        except pymysql.Error as exc:
            raise StoreError(f"reading {self.where}: {_line(exc)}") from exc

    def close(self) -> None:
        with contextlib.suppress(pymysql.Error):
            self.conn.rollback()
        self.backend.close()


class MySQLWriter:
    """A MySQL database to copy into; it must hold no duequeue rows."""

    def __init__(self, url: str) -> None:
        self.backend = MySQLBackend(url)  # creates the tables of an empty database
        self.where = f"MySQL {self.backend.where}"
        refuse_other_version(self.where, self.backend)  # closes it when refused

    def transact(self, work: Callable[[Load], T]) -> T:
        return self.backend.transact_cursor(
            lambda cur: work(_MySQLLoad(cur, self.where)), what="migrate", repeatable=False
        )

    def close(self, ok: bool) -> None:
        self.backend.close()


class _MySQLLoad:
    def __init__(self, cur: Cursor, where: str) -> None:
        self.cur = cur
        self.where = where

    def refuse_unless_empty(self) -> None:
        for table in TABLES:
            # Locks the rows read (none, when empty) and the gap after them: an add or a tick
            # elsewhere waits until the copy commits.
            self.cur.execute(f"SELECT count(*) FROM {table} FOR UPDATE")
            row = self.cur.fetchone()
            refuse_rows(self.where, table, row[0] if row else 0)

    def insert(self, table: str, names: Sequence[str], rows: Iterable[Row]) -> int:
        places = ", ".join(["%s"] * len(names))
        insert = f"INSERT INTO {table} ({quoted(names)}) VALUES ({places})"
        source = iter(rows)
        n = 0
        while batch := [tuple(r) for _, r in zip(range(BATCH), source, strict=False)]:
            self.cur.executemany(insert, batch)  # one multi-row INSERT a batch
            n += len(batch)
        return n

    def move_ids(self, table: str) -> None:
        """Nothing to do: InnoDB's AUTO_INCREMENT goes on past the largest id inserted."""
