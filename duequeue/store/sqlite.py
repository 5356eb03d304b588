"""The SQLite store (apsw): WAL, a busy timeout, and BEGIN IMMEDIATE for every write."""

import contextlib
import os
import secrets
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, cast

import apsw

from duequeue.errors import StoreError
from duequeue.store import access, reads, retries, schema, tick_sql
from duequeue.store import rows as shared
from duequeue.store.base import (
    Change,
    Claimed,
    DeliveryRecord,
    NewReminder,
    PendingRetry,
    ReminderView,
    Store,
    View,
    WriteBack,
)
from duequeue.store.sql import SQLITE, Row
from duequeue.store.sqlite_errors import guarded, one_line, store_error
from duequeue.store.sqlite_ops import REMINDER_PARAMS, OperatorQueries, SQLiteRun

SCHEMA_VERSION = schema.VERSION
APPLICATION_ID = 0x64717565  # 'dque', also set by schema.sql
BUSY_TIMEOUT_MS = 5000

_ANY_DUE = f"""SELECT EXISTS (SELECT 1 FROM reminders WHERE next_fire_at <= :now
    AND error_count < :max AND (lease_until IS NULL OR lease_until < :now))
    OR EXISTS ({retries.ANY_DUE})"""
_CLAIM = tick_sql.claim(SQLITE)


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
        # Whether a claim first reads if anything is due (see claim_due); a claimer does not.
        self._read_first = True
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

    def claimer(self) -> "SQLiteStore | None":
        # A claim of a batch is a millisecond of work on a local file: a draining tick makes it
        # on its event loop's own thread, where it costs less than on the database thread (each
        # row's step there hands the GIL back and forth: 200 claims of 100 rows took 2.5 s more
        # than one of 20,000). With no busy timeout it never waits: a lock held elsewhere fails
        # it at once and the tick tries again. It never checkpoints the WAL either (a checkpoint
        # is the other connections' work), so a claim never stalls the loop on the disk.
        try:
            twin = SQLiteStore(self.path, busy_timeout_ms=0, create=False)
        except StoreError:
            return None
        twin._conn.execute("PRAGMA wal_autocheckpoint = 0")
        # A claimer serves a tick that is draining a backlog: rows are due, so a read first
        # would only walk the index over the leased rows twice (54 of a 20,000-row drain's
        # 430 ms of claims). Its last claim, which finds nothing, takes the lock for nothing
        # once; that lock never waits (no busy timeout).
        twin._read_first = False
        return twin

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
    def claim_due(
        self, now: int, limit: int, max_errors: int, lease_ms: int, owner: str
    ) -> list[Claimed]:
        # A read first: the usual tick (nothing due) then never takes the write lock.
        if (
            self._read_first
            and not _fetch(self._conn, _ANY_DUE, {"now": now, "max": max_errors})[0][0]
        ):
            return []
        with self._write() as cur:
            run = SQLiteRun(cur)
            again = retries.claim(run, SQLITE, owner, now, now + lease_ms, limit)
            rows = _fetch(
                cur,
                _CLAIM,
                {
                    "owner": owner,
                    "until": now + lease_ms,
                    "now": now,
                    "max": max_errors,
                    "limit": limit,
                },
            )
            if not rows:
                return again
            shared.sort_claimed(rows)
            ids = [int(row[0]) for row in rows]
            targets = reads.targets(run, SQLITE, ids)
            retried = self._retried(cur, ids)
            fires = [(rid, int(row[9])) for rid, row in zip(ids, rows, strict=True)]
            ledger = self._ledger_state(cur, fires, retried)
            claimed = [
                shared.claimed(
                    row,
                    targets.get(rid, ()),
                    ledger.get(rid),
                    (rid, fire) in retried,
                )
                for (rid, fire), row in zip(fires, rows, strict=True)
            ]
        return claimed + again

    @guarded
    def record(self, records: Sequence[DeliveryRecord]) -> None:
        if not records:
            return
        with self._write() as cur:
            # The partial unique index turns a second `sent` of one target and fire into a no-op.
            cur.executemany(
                """INSERT INTO deliveries
                       (reminder_id, target_id, fire_at, outcome, error, attempt, at)
                   VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING""",
                [
                    (d.reminder_id, d.target_id, d.fire_at, d.outcome, d.error, d.attempt, d.at)
                    for d in records
                ],
            )

    @guarded
    def write_back(self, owner: str, now: int, items: Sequence[WriteBack]) -> int:
        applied = 0
        with self._write() as cur:
            # One executemany for the common case (no dead letter): a statement per row cost
            # a measurable share of a 20,000-row tick. A row whose lease was lost matches
            # nothing, so the change count says how many applied.
            plain = [_write_back_params(w, now, owner) for w in items if _plain(w)]
            if plain:
                before = self._conn.total_changes()
                cur.executemany(_WRITE_BACK, plain)
                applied += self._conn.total_changes() - before
            run = SQLiteRun(cur)
            for w in items:
                if _plain(w):
                    continue
                if w.retry_id is not None:
                    applied += retries.write_retry(run, SQLITE, w, owner, now)
                    continue
                cur.execute(_WRITE_BACK, _write_back_params(w, now, owner))
                if self._conn.changes() != 1:
                    continue  # the lease was lost: the row is someone else's now
                applied += 1
                if w.dead_letter:
                    cur.execute(
                        """INSERT INTO dead_letters
                               (reminder_id, fire_at, error_count, last_error, dead_at)
                           VALUES (?, ?, ?, ?, ?)
                           ON CONFLICT (reminder_id, fire_at) DO UPDATE SET
                               error_count = excluded.error_count,
                               last_error = excluded.last_error, dead_at = excluded.dead_at,
                               retried_at = NULL""",
                        (
                            w.reminder_id,
                            w.fire_at,
                            w.dead_errors,
                            w.last_error,
                            now if w.dead_at is None else w.dead_at,
                        ),
                    )
                retries.after_row(run, SQLITE, w, now)
        return applied

    @guarded
    def release(self, owner: str, ids: Sequence[int], now: int) -> int:
        if not ids:
            return 0
        with self._write() as cur:
            run = SQLiteRun(cur)
            tick_sql.release(run, SQLITE, owner, [i for i in ids if i > 0], now)
            retries.release(run, SQLITE, owner, [-i for i in ids if i < 0])
        return len(ids)

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

    @staticmethod
    def _retried(cur: apsw.Cursor, ids: Sequence[int]) -> dict[tuple[int, int], int]:
        """Return (reminder id, fire) -> retried_at of the re-armed dead fires of these rows."""
        rows = _fetch(
            cur,
            """SELECT reminder_id, fire_at, retried_at FROM dead_letters
               WHERE retried_at IS NOT NULL
                 AND reminder_id IN (SELECT value FROM json_each(?))""",
            (SQLITE.ids(ids),),
        )
        return {(int(rid), int(fire)): int(at) for rid, fire, at in rows}

    @staticmethod
    def _ledger_state(
        cur: apsw.Cursor,
        fires: Sequence[tuple[int, int]],
        retried: dict[tuple[int, int], int],
    ) -> dict[int, shared.LedgerState]:
        """Return, per reminder, the ledger of the fire being claimed; rows without ledger
        entries for that fire are left out. `retried` maps a re-armed (reminder, fire) to when
        the operator retried it."""
        fire_of = dict(fires)
        found: dict[int, shared.LedgerState] = {}
        # One statement for the whole batch (a query per row cost more than the claim itself);
        # each (reminder, fire) pair is looked up through the deliveries_fire index.
        for rid, tid, outcome, n, last in _fetch(
            cur,
            """SELECT d.reminder_id, d.target_id, d.outcome, count(*), max(d.at)
               FROM json_each(?) AS f
               JOIN deliveries AS d
                 ON d.reminder_id = f.value ->> 0 AND d.fire_at = f.value ->> 1
               GROUP BY d.reminder_id, d.target_id, d.outcome""",
            ("[" + ",".join(f"[{int(r)},{int(f)}]" for r, f in fires) + "]",),
        ):
            state = found.setdefault(int(rid), shared.LedgerState())
            state.add(int(tid), outcome, int(n), int(last), retried.get((rid, fire_of[rid])))
        return found


# The write-back of one row, only while we hold its lease; parameters from _write_back_params.
_WRITE_BACK = """UPDATE reminders SET
       fire_at = ?1, next_fire_at = ?2, error_count = ?3, last_error = ?4,
       last_fired_at = CASE WHEN ?5 THEN ?6 ELSE last_fired_at END,
       skipped_fires = skipped_fires + ?7,
       done_at = CASE WHEN ?8 = 'done' THEN ?9 END,
       dead_at = CASE WHEN ?8 = 'dead' THEN ?12 END,
       lease_owner = NULL, lease_until = NULL, updated_at = ?9
   WHERE id = ?10 AND lease_owner = ?11"""


def _plain(w: WriteBack) -> bool:
    """Tell whether a write-back is the row's update alone (the common case, batched)."""
    return not (w.dead_letter or w.retries or w.disable or w.retry_id is not None)


def _write_back_params(w: WriteBack, now: int, owner: str) -> Row:
    return (
        w.pending_fire_at,
        w.next_fire_at,
        w.error_count,
        w.last_error,
        w.fired,
        w.fire_at,
        w.skipped,
        w.state,
        now,
        w.reminder_id,
        owner,
        now if w.dead_at is None else w.dead_at,
    )


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
