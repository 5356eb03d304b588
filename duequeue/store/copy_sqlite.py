"""`migrate`'s reader and writer of an SQLite file (store/transfer.py does the copy).

The reader reads in one read transaction of a read-only connection. The writer fills an existing
file that holds no rows in one write transaction, or builds a new one under a private name beside
the path and links it into place once the copy committed: everything or nothing.
"""

import contextlib
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import TypeVar

import apsw

from duequeue.errors import StoreError
from duequeue.store.copy_rows import (
    SEARCH,
    TABLES,
    Load,
    Row,
    quoted,
    refuse_other_version,
    refuse_rows,
    select,
)
from duequeue.store.sqlite import SQLiteBackend

T = TypeVar("T")


class SQLiteReader:
    """An SQLite file, read in one read transaction of a read-only connection."""

    def __init__(self, path: str) -> None:
        if not Path(path).is_file():
            raise StoreError(f"no SQLite database at {path} to migrate from")
        self.where = f"SQLite {path}"
        # Refuses a foreign file; brings an older one up to date.
        backend = SQLiteBackend(path, create=False)
        try:
            refuse_other_version(self.where, backend)
        finally:
            backend.close()
        try:
            self.conn = apsw.Connection(path, flags=apsw.SQLITE_OPEN_READONLY)
            self.conn.execute("BEGIN")
            self.conn.execute("SELECT count(*) FROM reminders").fetchall()  # the snapshot
        except apsw.Error as exc:
            raise StoreError(f"reading {path}: {exc}") from exc

    def rows(self, table: str, names: Sequence[str]) -> Iterator[Row]:
        if table == SEARCH:
            sql = f"SELECT rowid, text FROM {SEARCH} ORDER BY rowid"
        else:
            sql = select(table, names)
        try:
            yield from self.conn.execute(sql)
        except apsw.Error as exc:
            raise StoreError(f"reading {self.where}: {exc}") from exc

    def close(self) -> None:
        self.conn.close()


class SQLiteWriter:
    """An SQLite file to copy into: an existing one must hold no rows; a new one is built
    under a private name beside it and linked into place only once the copy committed."""

    def __init__(self, path: str) -> None:
        self.path = Path(path)
        self.where = f"SQLite {path}"
        self.fresh: Path | None = None
        if self.path.exists():
            self.backend = SQLiteBackend(self.path, create=False)
            refuse_other_version(self.where, self.backend)  # closes it when refused
        else:
            self.fresh = self.path.with_name(f".{self.path.name}.migrating-{os.getpid()}")
            self._remove_fresh()
            self.backend = SQLiteBackend(self.fresh, create=True)

    def transact(self, work: Callable[[Load], T]) -> T:
        conn = self.backend.conn
        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                result = work(_SQLiteLoad(conn, self.where))
                conn.execute("COMMIT")
            except BaseException:
                with contextlib.suppress(apsw.Error):
                    conn.execute("ROLLBACK")
                raise
        except apsw.Error as exc:
            raise StoreError(f"writing {self.where}: {exc}") from exc
        return result

    def close(self, ok: bool) -> None:
        self.backend.close()
        if self.fresh is None:
            return
        try:
            if ok:
                try:
                    os.link(self.fresh, self.path)  # never over a file made meanwhile
                except FileExistsError:
                    raise StoreError(
                        f"{self.path} appeared while migrate copied into it: left as it is"
                    ) from None
                except OSError as exc:
                    raise StoreError(f"cannot create {self.path}: {exc.strerror}") from exc
        finally:
            self._remove_fresh()

    def _remove_fresh(self) -> None:
        assert self.fresh is not None
        for suffix in ("", "-wal", "-shm", "-journal"):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(f"{self.fresh}{suffix}")


class _SQLiteLoad:
    def __init__(self, conn: apsw.Connection, where: str) -> None:
        self.conn = conn
        self.where = where

    def refuse_unless_empty(self) -> None:
        for table in TABLES:
            refuse_rows(self.where, table, self.conn.execute(f"SELECT count(*) FROM {table}").get)

    def insert(self, table: str, names: Sequence[str], rows: Iterable[Row]) -> int:
        if table == SEARCH:
            sql = f"INSERT INTO {SEARCH} (rowid, text) VALUES (?, ?)"
        else:
            sql = f"INSERT INTO {table} ({quoted(names)}) VALUES ({', '.join('?' * len(names))})"
        counted = _Counted(rows)
        self.conn.executemany(sql, counted)
        return counted.n

    def move_ids(self, table: str) -> None:
        """Nothing to do: an INTEGER PRIMARY KEY goes on from the largest id."""


class _Counted:
    """An iterable that counts what it hands out."""

    def __init__(self, rows: Iterable[Row]) -> None:
        self.rows = rows
        self.n = 0

    def __iter__(self) -> Iterator[Row]:
        for row in self.rows:
            self.n += 1
            yield row
