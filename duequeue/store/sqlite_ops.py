"""The operator's queries on SQLite: bulk add, cancel, retry, stats, prune and health.

`OperatorQueries` gives SQLiteStore these Store methods; each opens one transaction and hands its
cursor to a function below, which never commits or reads the clock.
"""

import contextlib
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, cast

import apsw

from duequeue.errors import NotFoundError
from duequeue.store import retries
from duequeue.store.base import (
    Change,
    DeadLetter,
    HealthCheck,
    NewReminder,
    PruneCounts,
    Stats,
)
from duequeue.store.rows import (
    PENDING_CHANNELS,
    REMINDER_COLUMNS,
    REMINDER_FIELDS,
    cancel_refusal,
    chunked,
    reminder_values,
    retry_refusal,
)
from duequeue.store.sqlite_errors import guarded


class OperatorQueries:
    """The operator's Store methods, mixed into SQLiteStore (which provides _conn and _write)."""

    path: Path
    _conn: apsw.Connection
    schema_version: int

    def _write(self) -> contextlib.AbstractContextManager[apsw.Cursor]:
        raise NotImplementedError  # pragma: no cover - SQLiteStore's own

    @guarded
    def add_many(self, reminders: Iterable[NewReminder], now: int) -> tuple[int, int]:
        with self._write() as cur:
            return add_many(cur, reminders, now)

    @guarded
    def dead_letters(self, reminder_id: int) -> list[DeadLetter]:
        return dead_letters(self._conn.cursor(), reminder_id)

    @guarded
    def cancel(self, ids: Sequence[int], now: int) -> list[Change]:
        with self._write() as cur:
            return cancel(cur, ids, now)

    @guarded
    def retry_dead(self, ids: Sequence[int] | None, now: int) -> list[Change]:
        with self._write() as cur:
            return retry_dead(cur, ids, now)

    @guarded
    def stats(self, now: int) -> Stats:
        with self._read() as cur:  # one snapshot, so the counts agree with each other
            return stats(cur, now)

    @guarded
    def prune(self, before: int, *, dry_run: bool = False) -> PruneCounts:
        try:
            with self._write() as cur:
                counts = prune(cur, before)
                if dry_run:
                    raise _DryRun(counts)  # rolls the deletions back
        except _DryRun as undone:
            counts = undone.counts
        return counts

    @guarded
    def pending_channels(self) -> set[str]:
        return {str(c) for (c,) in _fetch(self._conn.cursor(), PENDING_CHANNELS)}

    def health(self) -> list[HealthCheck]:
        return health(self._conn, str(self.path), self.schema_version)

    @contextlib.contextmanager
    def _read(self) -> Iterator[apsw.Cursor]:
        self._conn.execute("BEGIN")
        try:
            yield self._conn.cursor()
        finally:
            self._conn.execute("COMMIT")


class _DryRun(Exception):
    """Raised inside a write transaction to roll it back, carrying what it would have done."""

    def __init__(self, counts: PruneCounts) -> None:
        super().__init__("dry run")
        self.counts = counts


HOUR_MS = 3_600_000
DAY_MS = 24 * HOUR_MS

Row = tuple[Any, ...]


def _fetch(cur: apsw.Cursor, sql: str, args: Any = None) -> list[Row]:
    return cast(list[Row], cur.execute(sql, args).fetchall())


def _run(cur: apsw.Cursor) -> retries.Run:
    return lambda sql, args: _fetch(cur, sql, args)


def _ids_json(ids: Sequence[int]) -> str:
    return "[" + ",".join(str(int(i)) for i in ids) + "]"


def add_many(cur: apsw.Cursor, reminders: Iterable[NewReminder], now: int) -> tuple[int, int]:
    """Insert reminders and their targets a chunk at a time; return (added, skipped)."""
    added = skipped = 0
    for chunk in chunked(reminders):
        a, s = _add_chunk(cur, chunk, now)
        added, skipped = added + a, skipped + s
    return added, skipped


def _add_chunk(cur: apsw.Cursor, reminders: Sequence[NewReminder], now: int) -> tuple[int, int]:
    # Ids are given, not returned one by one, so both inserts run as executemany (about twice as
    # fast for 100,000 rows). Safe: the transaction holds the write lock, and max(id) + n is the
    # id SQLite would pick itself. The UNIQUE key still decides, as in `add`: a key seen before,
    # even earlier in this batch, inserts nothing, and its id is simply left unused.
    base = int(_fetch(cur, "SELECT coalesce(max(id), 0) FROM reminders")[0][0])
    cur.executemany(
        f"""INSERT INTO reminders (id, {REMINDER_COLUMNS})
           VALUES (?, {REMINDER_PARAMS})
           ON CONFLICT (key) DO NOTHING""",
        [(base + i, *reminder_values(r, now)) for i, r in enumerate(reminders, 1)],
    )
    added = {int(row[0]) for row in _fetch(cur, "SELECT id FROM reminders WHERE id > ?", (base,))}
    cur.executemany(
        "INSERT OR IGNORE INTO targets (reminder_id, channel, address) VALUES (?, ?, ?)",
        [
            (base + i, t.channel, t.address)
            for i, r in enumerate(reminders, 1)
            if base + i in added
            for t in r.targets
        ],
    )
    return len(added), len(reminders) - len(added)


def dead_letters(cur: apsw.Cursor, reminder_id: int) -> list[DeadLetter]:
    """Return a reminder's dead letters, oldest fire first."""
    rows = _fetch(
        cur,
        """SELECT reminder_id, fire_at, error_count, last_error, dead_at, retried_at
           FROM dead_letters WHERE reminder_id = ? ORDER BY fire_at""",
        (reminder_id,),
    )
    return [DeadLetter(*row) for row in rows]


def _states(cur: apsw.Cursor, ids: Sequence[int]) -> dict[int, Row]:
    """Return id -> (rule, fire_at, lease_until, done_at, cancelled_at); raise on unknown ids."""
    rows = _fetch(
        cur,
        """SELECT id, rule, fire_at, lease_until, done_at, cancelled_at FROM reminders
           WHERE id IN (SELECT value FROM json_each(?))""",
        (_ids_json(ids),),
    )
    found = {int(row[0]): row[1:] for row in rows}
    missing = [i for i in ids if i not in found]
    if missing:
        raise NotFoundError(f"no reminder with id {missing[0]}")
    return found


def cancel(cur: apsw.Cursor, ids: Sequence[int], now: int) -> list[Change]:
    """Cancel rows; see Store.cancel."""
    states = _states(cur, ids)
    changes = []
    run = _run(cur)
    for rid in dict.fromkeys(ids):
        refusal = cancel_refusal(states[rid], retries.has_any(run, retries.SQLITE, rid))
        if refusal is not None:
            changes.append(Change(rid, skipped=refusal))
            continue
        retries.drop(run, retries.SQLITE, rid, None, None)
        # Clearing the lease is what makes cancellation win: a running tick's write-back
        # requires its lease, so it cannot put a next fire back on this row.
        cur.execute(
            """UPDATE reminders SET cancelled_at = ?, next_fire_at = NULL,
                   lease_owner = NULL, lease_until = NULL, updated_at = ?
               WHERE id = ?""",
            (now, now, rid),
        )
        changes.append(Change(rid))
    return changes


def retry_dead(cur: apsw.Cursor, ids: Sequence[int] | None, now: int) -> list[Change]:
    """Re-arm dead fires; see Store.retry_dead."""
    if ids is None:
        ids = [
            int(r[0])
            for r in _fetch(
                cur,
                """SELECT DISTINCT d.reminder_id FROM dead_letters d
                   JOIN reminders r ON r.id = d.reminder_id
                   WHERE d.retried_at IS NULL AND r.cancelled_at IS NULL
                   ORDER BY d.reminder_id""",
            )
        ]
    states = _states(cur, ids)
    changes = []
    for rid in dict.fromkeys(ids):
        oldest = _fetch(
            cur,
            """SELECT min(fire_at) FROM dead_letters
               WHERE reminder_id = ? AND retried_at IS NULL""",
            (rid,),
        )[0][0]
        reason = retry_refusal(states[rid], oldest, now)
        # The re-armed fire delivers to every target that lacks it, so it takes over its
        # targets' own retries; not while a tick is sending one of them.
        if (
            reason is None
            and oldest is not None
            and not retries.drop(_run(cur), retries.SQLITE, rid, int(oldest), now)
        ):
            reason = "a tick is delivering it; retry after the tick"
        if reason is not None or oldest is None:  # no dead fire always has a reason
            changes.append(Change(rid, skipped=reason))
            continue
        cur.execute(
            """UPDATE reminders SET fire_at = :fire, next_fire_at = :now, error_count = 0,
                   last_error = NULL, dead_at = NULL, done_at = NULL,
                   lease_owner = NULL, lease_until = NULL, updated_at = :now
               WHERE id = :id""",
            {"fire": oldest, "now": now, "id": rid},
        )
        cur.execute(
            "UPDATE dead_letters SET retried_at = ? WHERE reminder_id = ? AND fire_at = ?",
            (now, rid, oldest),
        )
        changes.append(Change(rid, fire_at=int(oldest)))
    return changes


def stats(cur: apsw.Cursor, now: int) -> Stats:
    """Count rows by state and recent ledger outcomes."""
    (row,) = _fetch(
        cur,
        """SELECT
             count(*) FILTER (WHERE next_fire_at IS NOT NULL AND cancelled_at IS NULL),
             count(*) FILTER (WHERE done_at IS NOT NULL AND cancelled_at IS NULL),
             count(*) FILTER (WHERE dead_at IS NOT NULL AND cancelled_at IS NULL),
             count(*) FILTER (WHERE cancelled_at IS NOT NULL),
             count(*) FILTER (WHERE next_fire_at <= :now AND cancelled_at IS NULL),
             count(*) FILTER (WHERE next_fire_at IS NOT NULL AND error_count > 0
                              AND cancelled_at IS NULL),
             count(*) FILTER (WHERE lease_until >= :now),
             min(next_fire_at) FILTER (WHERE next_fire_at <= :now AND cancelled_at IS NULL)
           FROM reminders""",
        {"now": now},
    )
    dead_letters = _fetch(
        cur,
        """SELECT count(*) FROM dead_letters d JOIN reminders r ON r.id = d.reminder_id
           WHERE d.retried_at IS NULL AND r.cancelled_at IS NULL""",
    )[0][0]
    (ledger,) = _fetch(
        cur,
        """SELECT
             count(*) FILTER (WHERE outcome = 'sent' AND at > :hour),
             count(*) FILTER (WHERE outcome != 'sent' AND at > :hour),
             count(*) FILTER (WHERE outcome = 'sent'),
             count(*) FILTER (WHERE outcome != 'sent')
           FROM deliveries WHERE at > :day AND at <= :now""",
        {"hour": now - HOUR_MS, "day": now - DAY_MS, "now": now},
    )
    retrying, disabled = retries.counts(_run(cur), retries.SQLITE)
    return Stats(
        retrying_targets=retrying,
        disabled_targets=disabled,
        pending=row[0],
        done=row[1],
        dead=row[2],
        cancelled=row[3],
        due=row[4],
        retrying=row[5],
        leased=row[6],
        oldest_due_at=row[7],
        dead_letters=dead_letters,
        sent_last_hour=ledger[0],
        failed_last_hour=ledger[1],
        sent_last_day=ledger[2],
        failed_last_day=ledger[3],
    )


# Ledger rows of a fire that may still be delivered: the row's pending fire, or a dead fire
# awaiting retry. Deleting them would let that fire reach a target a second time.
_PROTECTED = (
    """EXISTS (SELECT 1 FROM reminders r
                        WHERE r.id = deliveries.reminder_id AND r.fire_at = deliveries.fire_at)
             OR EXISTS (SELECT 1 FROM dead_letters x
                        WHERE x.reminder_id = deliveries.reminder_id
                          AND x.fire_at = deliveries.fire_at AND x.retried_at IS NULL)
             OR """
    + retries.PROTECTED
)

_DOOMED = f"""(done_at < :before AND cancelled_at IS NULL AND NOT EXISTS (
                 SELECT 1 FROM dead_letters x WHERE x.reminder_id = reminders.id
                   AND x.retried_at IS NULL) AND NOT {retries.RETRYING})
             OR cancelled_at < :before"""


def prune(cur: apsw.Cursor, before: int) -> PruneCounts:
    """Delete finished rows and old ledger rows; see Store.prune."""
    args = {"before": before}
    done, cancelled = _fetch(
        cur,
        f"""SELECT count(*) FILTER (WHERE cancelled_at IS NULL),
                   count(*) FILTER (WHERE cancelled_at IS NOT NULL)
            FROM reminders WHERE {_DOOMED}""",
        args,
    )[0]
    letters = _fetch(
        cur,
        f"""SELECT count(*) FROM dead_letters
            WHERE reminder_id IN (SELECT id FROM reminders WHERE {_DOOMED})""",
        args,
    )[0][0]
    ledger = _fetch(
        cur,
        f"""SELECT count(*) FROM deliveries
            WHERE reminder_id IN (SELECT id FROM reminders WHERE {_DOOMED})""",
        args,
    )[0][0]
    cur.execute(f"DELETE FROM reminders WHERE {_DOOMED}", args)  # cascades to targets, ledger
    old = _fetch(
        cur,
        f"DELETE FROM deliveries WHERE at < :before AND NOT ({_PROTECTED}) RETURNING 1",
        args,
    )
    return PruneCounts(
        deliveries=int(ledger) + len(old),
        done=int(done),
        cancelled=int(cancelled),
        dead_letters=int(letters),
    )


def health(conn: apsw.Connection, path: str, expected_version: int) -> list[HealthCheck]:
    """Check schema version, integrity and journal mode."""
    cur = conn.cursor()
    version = int(_fetch(cur, "PRAGMA user_version")[0][0])
    checks = [
        HealthCheck(
            "database schema",
            version == expected_version,
            f"{path}: schema version {version} (this duequeue: {expected_version})",
            None if version == expected_version else "upgrade duequeue or restore a backup",
        )
    ]
    problems = [str(r[0]) for r in _fetch(cur, "PRAGMA integrity_check(20)")]
    ok = problems == ["ok"]
    checks.append(
        HealthCheck(
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
        HealthCheck(
            "database journal",
            mode == "wal",
            f"journal_mode={mode}",
            None if mode == "wal" else "`sqlite3 FILE 'PRAGMA journal_mode=WAL'`",
        )
    )
    return checks


REMINDER_PARAMS = ", ".join("?" for _ in REMINDER_FIELDS)
