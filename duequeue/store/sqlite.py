"""The SQLite backend (apsw): one file, WAL, a busy timeout, and BEGIN IMMEDIATE for every write.

The database is created whole or not at all (a private file hard-linked into place), owner-only,
and refused when it is someone else's (an empty file, a foreign application id, a newer schema).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast
from urllib.parse import quote, urlsplit

import apsw

from duequeue.errors import StoreError
from duequeue.shared.lazy import LazyModule
from duequeue.store import access, schema
from duequeue.store.sql import SQLITE, Row, Run
from duequeue.store.sqlite_errors import one_line, store_error
from duequeue.store.store import Store

if TYPE_CHECKING:
    from duequeue.store import records, schema_steps, sqlite_checkpoint, sqlite_steps
    from duequeue.store.records import HealthCheck, HostTick
else:
    # On first use: cron's tick with nothing due never builds these (tick_records.py), nor
    # opens a database whose floor is not this version (the rules of a rolling upgrade).
    records = LazyModule("duequeue.store.records")
    schema_steps = LazyModule("duequeue.store.schema_steps")
    sqlite_steps = LazyModule("duequeue.store.sqlite_steps")
    sqlite_checkpoint = LazyModule("duequeue.store.sqlite_checkpoint")  # a draining tick's

SCHEMA_VERSION = schema.VERSION  # the newest step this code knows (schema.py)
APPLICATION_ID = 0x64717565  # 'dque', also set by schema.sql
BUSY_TIMEOUT_MS = 5000
# The page cache of a connection draining a backlog (drain()), in KiB: at 10^6 rows a claim and
# its write-back touch pages all over the due index and the tables, which SQLite's 2 MB default
# reads again from the OS for each batch. Per process, and only while it drains.
DRAIN_CACHE_KIB = 32 * 1024

T = TypeVar("T")


def schema_sql() -> str:
    """Return the schema shipped inside the package."""
    return schema.current("sqlite")


class SQLiteBackend:
    """One SQLite file, open for the store: one host, whose clock is the queue's."""

    dialect = SQLITE

    def __init__(
        self,
        path: str | os.PathLike[str],
        busy_timeout_ms: int = BUSY_TIMEOUT_MS,
        create: bool = True,
    ) -> None:
        path = Path(path)
        self.path = path
        self.where = str(path)
        self.busy_timeout_ms = busy_timeout_ms
        # Why this user may not write the file, if so: it is then open read-only, so that the
        # commands that only read it (inspect, history, stats) still work; a write says why not.
        self.read_only = _read_only_because(path)
        self._checkpointer: sqlite_checkpoint.Checkpointer | None = None
        self.conn, self.created = _connect(
            path, busy_timeout_ms, create, read_only=self.read_only is not None
        )
        try:
            self._ensure_schema()
        except apsw.Error as exc:
            self.conn.close()
            raise store_error(path, busy_timeout_ms, exc) from exc
        except BaseException:
            self.conn.close()
            raise

    def transact(
        self, work: Callable[[Run], T], *, what: str, write: bool, repeatable: bool = True
    ) -> T:
        # A write takes the lock up front (IMMEDIATE), so concurrent writers queue on the busy
        # timeout instead of failing when a read lock would have to be upgraded. A local file
        # never loses its connection: nothing is ever repeated here.
        if write and self.read_only is not None:
            raise StoreError(f"cannot open database {self.path}: {self.read_only}")
        try:
            try:
                with self._transaction("BEGIN IMMEDIATE" if write else "BEGIN"):
                    cur = self.conn.cursor()
                    try:
                        return work(SQLiteRun(cur))
                    except UnicodeDecodeError:
                        # Its statement stopped mid-row: closed, or the transaction cannot end.
                        cur.close(force=True)
                        raise
            except UnicodeDecodeError as exc:
                # A cell that is not UTF-8, stored by a hand: mended (its reminder held for a
                # person) and the work run once more, so one such row never stops the queue.
                # Imported here: a rare repair, not the empty tick's.
                from duequeue.store import sqlite_mend

                if self.read_only is not None or not sqlite_mend.mend(
                    self.conn, self.dialect, SQLiteRun
                ):
                    raise StoreError(
                        f"cannot read database {self.path}: a text is not UTF-8 ({exc})"
                    ) from exc
                with self._transaction("BEGIN IMMEDIATE" if write else "BEGIN"):
                    return work(SQLiteRun(self.conn.cursor()))
        except apsw.Error as exc:
            raise store_error(self.path, self.busy_timeout_ms, exc) from exc

    def health(self, run: Run) -> list[HealthCheck]:
        return health(self.conn, str(self.path))

    # One host, one file: the host's clock judges what is due, there are no other hosts to
    # note, and every call is bounded by the busy timeout, so there is nothing to interrupt.

    def server_ms(self) -> None:
        return None

    def note_tick(self, host: str, host_ms: int, release: str | None = None) -> None:
        return None  # the tick's tz release: Store.note_release

    def hosts(self, run: Run, now: int) -> tuple[HostTick, ...]:
        return ()

    def listener(self) -> None:
        # One host, no server to carry a notification: `worker` polls.
        return None

    def interrupt(self) -> None:
        return None

    def bound(self, until: float | None) -> None:
        return None  # no connect to bound; the busy timeout bounds every wait

    def drain(self) -> None:
        """Tune this connection for committing without pause: a larger page cache, and the
        write-ahead log checkpointed on a thread of its own (sqlite_checkpoint.py)."""
        if self._checkpointer is not None or self.read_only is not None:
            return
        try:
            self.conn.execute(f"PRAGMA cache_size = -{DRAIN_CACHE_KIB}")
            self._checkpointer = sqlite_checkpoint.Checkpointer(
                self.conn, str(self.path), self.busy_timeout_ms
            )
        except apsw.Error as exc:
            raise store_error(self.path, self.busy_timeout_ms, exc) from exc

    def close(self) -> None:
        checkpointer, self._checkpointer = self._checkpointer, None
        if checkpointer is not None:
            checkpointer.close()
        try:
            self.conn.close()
        except apsw.Error as exc:
            raise store_error(self.path, self.busy_timeout_ms, exc) from exc

    @contextlib.contextmanager
    def _transaction(self, begin: str) -> Any:
        _fetch(self.conn, begin)
        try:
            yield
        except BaseException:
            # SQLite may already have rolled back (after an I/O error, say); the original error
            # is the one worth reporting.
            with contextlib.suppress(apsw.Error):
                self.conn.execute("ROLLBACK")
            raise
        try:
            self.conn.execute("COMMIT")
        except apsw.Error:
            with contextlib.suppress(apsw.Error):
                self.conn.execute("ROLLBACK")
            raise

    def _ensure_schema(self) -> None:
        # Only reads until the file is known to be ours: a foreign database is left untouched,
        # not even switched to WAL.
        app_id, floor = self._header()
        if floor == schema.VERSION and app_id == APPLICATION_ID:
            # The usual open: a floor at this code's version means nothing newer to expand.
            if self.read_only is None:  # a file duequeue wrote is in WAL mode already
                _use_wal(self.conn, self.path)
            return
        if floor == 0 and app_id == 0:
            tables = _fetch(self.conn, "SELECT count(*) FROM sqlite_schema")[0][0]
            if tables:
                raise StoreError(f"{self.path} is an SQLite database, but not duequeue's")
            _use_wal(self.conn, self.path)
            with self._transaction("BEGIN IMMEDIATE"):
                app_id, floor = self._header()  # another process may have won the race
                if floor == 0 and app_id == 0:
                    self.conn.execute(schema_sql())
                    return
        if app_id != APPLICATION_ID:
            raise StoreError(f"{self.path} is an SQLite database, but not duequeue's")
        found = sqlite_steps.shape(self.conn.cursor(), floor)
        if not found.runs():
            raise StoreError(schema_steps.refusal(str(self.path), found))
        if found.version >= schema.VERSION:
            # A newer version expanded it (and left the floor for this one): run as it is.
            if self.read_only is None:
                _use_wal(self.conn, self.path)
            return
        if self.read_only is not None:
            raise StoreError(
                f"cannot open database {self.path}: it needs an upgrade and {self.read_only}"
            )
        _use_wal(self.conn, self.path)
        # A migration may rebuild a table (0009): with foreign keys on, dropping the old one
        # would cascade to every row that refers to it. The pragma is a no-op inside a
        # transaction, hence around it; sqlite_steps.apply checks the keys before the commit.
        self.conn.execute("PRAGMA foreign_keys = OFF")
        try:
            with self._transaction("BEGIN IMMEDIATE"):
                # Read again under the write lock: another process may have upgraded it.
                cur = self.conn.cursor()
                found = sqlite_steps.shape(cur, self._header()[1])
                sqlite_steps.apply(cur, found, schema_steps.to_expand("sqlite", found), expand=True)
        finally:
            self.conn.execute("PRAGMA foreign_keys = ON")

    def shape(self, run: Run) -> schema_steps.Shape:
        return sqlite_steps.shape(self.conn.cursor(), self._header()[1])

    def contract(self) -> tuple[schema_steps.Shape, list[str]]:
        """Apply the pending contract steps (`migrate --contract`); return the database's
        shape after them and the names of the steps applied."""
        if self.read_only is not None:
            raise StoreError(f"cannot open database {self.path}: {self.read_only}")
        self.conn.execute("PRAGMA foreign_keys = OFF")
        try:
            with self._transaction("BEGIN IMMEDIATE"):
                cur = self.conn.cursor()
                found = sqlite_steps.shape(cur, self._header()[1])
                steps = schema_steps.to_contract("sqlite", found)
                return sqlite_steps.apply(cur, found, steps), [m.name for m in steps]
        except apsw.Error as exc:
            raise store_error(self.path, self.busy_timeout_ms, exc) from exc
        finally:
            self.conn.execute("PRAGMA foreign_keys = ON")

    def _header(self) -> tuple[int, int]:
        app_id = _fetch(self.conn, "PRAGMA application_id")[0][0]
        version = _fetch(self.conn, "PRAGMA user_version")[0][0]
        return int(app_id), int(version)


class SQLiteRun:
    """A cursor as the Run that SQL written once goes through (see sql.py)."""

    __slots__ = ("_cur",)

    def __init__(self, cur: apsw.Cursor) -> None:
        self._cur = cur

    def __call__(self, sql: str, args: Mapping[str, Any], /) -> list[Row]:
        return _fetch(self._cur, sql, args)

    def many(self, sql: str, rows: Sequence[Mapping[str, Any]], /) -> list[Row]:
        if not rows:
            return []
        return cast(list[Row], self._cur.executemany(sql, rows).fetchall())

    def changed(self) -> int:
        return int(self._cur.connection.changes())


def health(conn: apsw.Connection, path: str) -> list[HealthCheck]:
    """Check schema version, integrity and journal mode."""
    cur = conn.cursor()
    found = sqlite_steps.shape(cur, int(_fetch(cur, "PRAGMA user_version")[0][0]))
    pending = schema_steps.to_contract("sqlite", found) if found.runs() else []
    checks = [schema_steps.check(path, found, pending)]
    problems = [str(r[0]) for r in _fetch(cur, "PRAGMA integrity_check(20)")]
    ok = problems == ["ok"]
    checks.append(
        records.HealthCheck(
            "database integrity",
            ok,
            "PRAGMA integrity_check: ok" if ok else "; ".join(problems),
            None
            if ok
            else "stop cron, copy the file, then `sqlite3 FILE '.recover' | sqlite3 NEW` "
            "and point --db at NEW",
        )
    )
    mode = str(_fetch(cur, "PRAGMA journal_mode")[0][0]).lower()
    checks.append(
        records.HealthCheck(
            "database journal",
            mode == "wal",
            f"journal_mode={mode}",
            None if mode == "wal" else "`sqlite3 FILE 'PRAGMA journal_mode=WAL'`",
        )
    )
    return checks


def _fetch(cur: apsw.Cursor | apsw.Connection, sql: str, args: Any = None) -> list[Row]:
    """Run one statement and return its rows, typed loosely as SQLite values are."""
    return cast(list[Row], cur.execute(sql, args).fetchall())


def _read_only_because(path: Path) -> str | None:
    """Return why this user may read the database file but not write it, else None."""
    try:
        if not path.is_file():
            return None
    except OSError:
        return None
    if access.problem(path, write=False) is not None:
        return None  # not even readable: opening it says why
    return access.problem(path, write=True)


def _connect(
    path: Path, busy_timeout_ms: int, create: bool, *, read_only: bool = False
) -> tuple[apsw.Connection, bool]:
    """Open the file (creating it if allowed); return the connection and whether we made it."""
    created = False
    try:
        if not path.exists():
            if not create:
                raise StoreError(
                    f"database {path} does not exist (check --db / DUEQUEUE_DB; "
                    "`duequeue init` creates it, as do `add` and `import`)"
                )
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            created = _create(path)
        elif _empty(path):
            # SQLite would take a zero-byte file as a new database and we would write a schema
            # into it; but duequeue never leaves one (see _create), so it is someone else's file
            # or a truncated database, and either way not ours to fill.
            raise StoreError(
                f"{path} is an empty file, not a duequeue database (remove it to start a new one)"
            )
        if read_only:
            conn = _connect_read_only(path)
        else:
            conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READWRITE)
    except OSError as exc:
        # The OS names whichever path failed (a parent, the temporary file of _create); say
        # which one this user lacks access to, and how to fix it.
        why = access.problem(path, write=True) or exc.strerror or one_line(exc)
        raise StoreError(f"cannot open database {path}: {why}") from exc
    except apsw.Error as exc:
        raise store_error(path, busy_timeout_ms, exc) from exc
    try:
        conn.setbusytimeout(busy_timeout_ms)
        _fetch(conn, "PRAGMA foreign_keys = ON")
    except apsw.Error as exc:
        conn.close()
        raise store_error(path, busy_timeout_ms, exc) from exc
    return conn, created


def _connect_read_only(path: Path) -> apsw.Connection:
    """Open a database this user may read but not write.

    A WAL database is read through its -shm file, which a reader who may not write the
    directory cannot create (SQLite then refuses even a read). With no -wal file beside it
    every commit is in the main file (the last writer checkpointed it on close), so it is read
    as it stands (immutable): what `inspect` shows is the queue as of that instant.
    """
    conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        _fetch(conn, "PRAGMA application_id")
        return conn
    except (apsw.ReadOnlyError, apsw.CantOpenError):
        conn.close()
        if path.with_name(path.name + "-wal").exists():
            raise
    uri = "file:" + quote(str(path.absolute())) + "?immutable=1"
    return apsw.Connection(uri, flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)


def _use_wal(conn: apsw.Connection, path: Path) -> None:
    mode = _fetch(conn, "PRAGMA journal_mode = WAL")
    if not mode or str(mode[0][0]).lower() != "wal":
        raise StoreError(f"database {path}: could not switch to WAL mode")
    # NORMAL is durable against a crash of the process (the WAL is fsynced at checkpoints);
    # only an OS crash or power cut can lose the last commits. docs/guarantees.md says so.
    conn.execute("PRAGMA synchronous = NORMAL")


def _empty(path: Path) -> bool:
    # A database whose content still sits in its write-ahead log (a crash before the first
    # checkpoint) can have a zero-byte main file; that one is not empty.
    wal = path.with_name(path.name + "-wal")
    return path.stat().st_size == 0 and not (wal.exists() and wal.stat().st_size > 0)


def _create(path: Path) -> bool:
    """Create a complete, empty duequeue database at `path`, atomically; return False if
    another process created it first.

    The schema is written to a private temporary file that is then hard-linked into place, so
    the file never exists half-made: a concurrent first `add` sees either nothing or a whole
    database, and a zero-byte file at the path can safely be refused as foreign.
    """
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}.new")
    # Owner-only from the first byte: the file holds addresses and webhook URLs. SQLite gives
    # the -wal and -shm files the mode of the database file.
    os.close(os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    try:
        conn = apsw.Connection(str(tmp), flags=apsw.SQLITE_OPEN_READWRITE)
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("BEGIN")
            conn.execute(schema_sql())
            conn.execute("COMMIT")
        finally:
            conn.close()  # the last connection checkpoints and removes the -wal file
        try:
            os.link(tmp, path)
        except FileExistsError:
            return False  # another process created it first; use theirs
        except OSError:
            # A filesystem without hard links: fall back to an in-place create, which a
            # concurrent first open could see empty for a moment.
            try:
                os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
            except FileExistsError:
                return False
        return True
    finally:
        for leftover in (tmp, tmp.with_name(tmp.name + "-wal"), tmp.with_name(tmp.name + "-shm")):
            with contextlib.suppress(FileNotFoundError):
                leftover.unlink()


def connect(db: str | os.PathLike[str], busy_timeout_s: float = 5.0, create: bool = True) -> Store:
    """Open the store on the SQLite file `db` (a path, or sqlite:///path)."""
    db = os.fspath(db)
    path = urlsplit(db).path if db.startswith("sqlite://") else db
    busy_timeout_ms = max(1, round(busy_timeout_s * 1000))
    return Store(SQLiteBackend(path, busy_timeout_ms, create))
