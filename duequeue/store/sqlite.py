"""The SQLite store (apsw): WAL, a busy timeout, and BEGIN IMMEDIATE for every write."""

import contextlib
import os
import secrets
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, cast

import apsw

from duequeue.errors import StoreError
from duequeue.store import access, claim_sql, commit_sql, reads, retries, schema
from duequeue.store import rows as shared
from duequeue.store.base import (
    Change,
    Claim,
    Committed,
    DeliveryRecord,
    Fire,
    NewReminder,
    PendingRetry,
    ReminderView,
    Resolution,
    Store,
    View,
)
from duequeue.store.sql import SQLITE, Row
from duequeue.store.sqlite_errors import guarded, one_line, store_error
from duequeue.store.sqlite_ops import REMINDER_PARAMS, OperatorQueries, SQLiteRun

SCHEMA_VERSION = schema.VERSION
APPLICATION_ID = 0x64717565  # 'dque', also set by schema.sql
BUSY_TIMEOUT_MS = 5000


def schema_sql() -> str:
    """Return the schema shipped inside the package."""
    return schema.current("sqlite")


class SQLiteStore(OperatorQueries, Store):
    """A Store on one SQLite file."""

    schema_version = SCHEMA_VERSION

    def __init__(
        self, path: str | Path, busy_timeout_ms: int = BUSY_TIMEOUT_MS, create: bool = True
    ) -> None:
        self.path = Path(path)
        self.busy_timeout_ms = busy_timeout_ms
        self._conn = _connect(self.path, busy_timeout_ms, create)
        try:
            self._ensure_schema()
        except apsw.Error as exc:
            self._conn.close()
            raise store_error(self.path, busy_timeout_ms, exc) from exc
        except BaseException:
            self._conn.close()
            raise

    # -- plumbing ---------------------------------------------------------------------------

    @contextlib.contextmanager
    def _write(self) -> Iterator[apsw.Cursor]:
        """Run a write transaction; IMMEDIATE so that concurrent writers queue on the busy
        timeout instead of failing when a read lock would have to be upgraded."""
        _fetch(self._conn, "BEGIN IMMEDIATE")
        try:
            yield self._conn.cursor()
        except BaseException:
            # SQLite may already have rolled back (after an I/O error, say); the original error
            # is the one worth reporting.
            with contextlib.suppress(apsw.Error):
                self._conn.execute("ROLLBACK")
            raise
        try:
            self._conn.execute("COMMIT")
        except apsw.Error:
            with contextlib.suppress(apsw.Error):
                self._conn.execute("ROLLBACK")
            raise

    def _ensure_schema(self) -> None:
        # Only reads until the file is known to be ours: a foreign database is left untouched,
        # not even switched to WAL.
        app_id, version = self._header()
        if version == SCHEMA_VERSION and app_id == APPLICATION_ID:
            _use_wal(self._conn, self.path)
            return
        if version == 0 and app_id == 0:
            tables = _fetch(self._conn, "SELECT count(*) FROM sqlite_schema")[0][0]
            if tables:
                raise StoreError(f"{self.path} is an SQLite database, but not duequeue's")
            _use_wal(self._conn, self.path)
            with self._write() as cur:
                app_id, version = self._header()  # another process may have won the race
                if version == 0 and app_id == 0:
                    cur.execute(schema_sql())
                    return
        if app_id == APPLICATION_ID and 0 < version < SCHEMA_VERSION:
            _use_wal(self._conn, self.path)
            with self._write() as cur:
                # Read again under the write lock: another process may have upgraded it.
                _upgrade(cur, self._header()[1])
            return
        if app_id != APPLICATION_ID:
            raise StoreError(f"{self.path} is an SQLite database, but not duequeue's")
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"{self.path} has schema version {version}; this duequeue knows {SCHEMA_VERSION}"
            )

    def _header(self) -> tuple[int, int]:
        app_id = _fetch(self._conn, "PRAGMA application_id")[0][0]
        version = _fetch(self._conn, "PRAGMA user_version")[0][0]
        return int(app_id), int(version)

    @guarded
    def close(self) -> None:
        self._conn.close()

    # -- writes -----------------------------------------------------------------------------

    @guarded
    def add(self, reminder: NewReminder, now: int) -> tuple[int, bool]:
        r = reminder
        with self._write() as cur:
            # The UNIQUE key decides, not a check-then-insert: concurrent adds of one key land once.
            rows = _fetch(
                cur,
                f"""INSERT INTO reminders ({shared.REMINDER_COLUMNS})
                   VALUES ({REMINDER_PARAMS})
                   ON CONFLICT (key) DO NOTHING RETURNING id""",
                shared.reminder_values(r, now),
            )
            if not rows:
                existing = _fetch(cur, "SELECT id FROM reminders WHERE key = ?", (r.key,))
                return int(existing[0][0]), False
            reminder_id = int(rows[0][0])
            cur.executemany(
                """INSERT OR IGNORE INTO targets (reminder_id, channel, address, secret)
                   VALUES (?, ?, ?, ?)""",
                [(reminder_id, t.channel, t.address, t.secret) for t in r.targets],
            )
        return reminder_id, True

    @guarded
    def claim(self, now: int, limit: int, max_errors: int, lease_ms: int, owner: str) -> list[Fire]:
        # A read first: the usual tick (nothing due) then never takes the write lock.
        if not _fetch(self._conn, claim_sql.ANY_DUE, {"now": now, "max": max_errors})[0][0]:
            return []
        with self._write() as cur:
            return claim_sql.claim(SQLiteRun(cur), SQLITE, now, limit, max_errors, lease_ms, owner)

    @guarded
    def commit(
        self,
        owner: str,
        now: int,
        records: Sequence[DeliveryRecord],
        resolutions: Sequence[Resolution],
        releases: Sequence[Claim],
    ) -> Committed:
        with self._write() as cur:
            return commit_sql.commit(
                SQLiteRun(cur), SQLITE, owner, now, records, resolutions, releases
            )

    @guarded
    def pending_retries(self, reminder_id: int) -> list[PendingRetry]:
        return retries.pending(SQLiteRun(self._conn.cursor()), SQLITE, reminder_id)

    @guarded
    def enable_targets(self, ids: Sequence[int], now: int) -> list[Change]:
        with self._write() as cur:
            run = SQLiteRun(cur)
            known = reads.known(run, SQLITE, ids)
            return shared.enabled(ids, known, retries.enable(run, SQLITE, ids))

    # -- reads ------------------------------------------------------------------------------

    @guarded
    def list_view(
        self,
        view: View,
        now: int,
        limit: int | None = None,
        *,
        subject_like: str | None = None,
        target_like: str | None = None,
    ) -> list[ReminderView]:
        run = SQLiteRun(self._conn.cursor())
        return reads.view(run, SQLITE, view, now, limit, subject_like, target_like)

    @guarded
    def get(self, reminder_id: int) -> ReminderView | None:
        return reads.get(SQLiteRun(self._conn.cursor()), SQLITE, reminder_id)

    @guarded
    def deliveries(self, reminder_id: int) -> list[DeliveryRecord]:
        return reads.deliveries(SQLiteRun(self._conn.cursor()), SQLITE, reminder_id)


def _upgrade(cur: apsw.Cursor, version: int) -> None:
    """Bring an older database to SCHEMA_VERSION with the numbered migrations, in one
    transaction (the caller's)."""
    for step in schema.migrations("sqlite", version):
        cur.execute(step.sql)
        # A migration may edit a table's stored CREATE text (writable_schema); a higher
        # schema_version makes every connection read the new text. Harmless otherwise.
        changed = int(_fetch(cur, "PRAGMA schema_version")[0][0])
        cur.execute(f"PRAGMA schema_version = {changed + 1}")
    cur.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")


def _fetch(cur: apsw.Cursor | apsw.Connection, sql: str, args: Any = None) -> list[Row]:
    """Run one statement and return its rows, typed loosely as SQLite values are."""
    return cast(list[Row], cur.execute(sql, args).fetchall())


def _connect(path: Path, busy_timeout_ms: int, create: bool) -> apsw.Connection:
    try:
        if not path.exists():
            if not create:
                raise StoreError(
                    f"database {path} does not exist (check --db / DUEQUEUE_DB; "
                    "`duequeue add` or `import` creates it)"
                )
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            _create(path)
        elif _empty(path):
            # SQLite would take a zero-byte file as a new database and we would write a schema
            # into it; but duequeue never leaves one (see _create), so it is someone else's file
            # or a truncated database, and either way not ours to fill.
            raise StoreError(
                f"{path} is an empty file, not a duequeue database (remove it to start a new one)"
            )
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
    return conn


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


def _create(path: Path) -> None:
    """Create a complete, empty duequeue database at `path`, atomically.

    The schema is written to a private temporary file that is then hard-linked into place, so
    the file never exists half-made: a concurrent first `add` sees either nothing or a whole
    database, and a zero-byte file at the path can safely be refused as foreign.
    """
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.new")
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
            pass  # another process created it first; use theirs
        except OSError:
            # A filesystem without hard links: fall back to an in-place create, which a
            # concurrent first open could see empty for a moment.
            with contextlib.suppress(FileExistsError):
                os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    finally:
        for leftover in (tmp, tmp.with_name(tmp.name + "-wal"), tmp.with_name(tmp.name + "-shm")):
            with contextlib.suppress(FileNotFoundError):
                leftover.unlink()
