"""The operator's queries on PostgreSQL: bulk add, cancel, retry, stats, prune and health.

The counterparts of sqlite_ops, with the same contracts (see Store). Each function runs inside a
transaction the PostgresStore opened and gets its cursor; none of them commits or reads the clock.
"""

from collections.abc import Iterable, Sequence
from typing import Any

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
from duequeue.store.pg_session import Cursor
from duequeue.store.rows import (
    REMINDER_COLUMNS,
    REMINDER_FIELDS,
    cancel_refusal,
    chunked,
    reminder_values,
    retry_refusal,
)


def runner(cur: Cursor) -> retries.Run:
    """Return cur as the runner the shared statements of store/retries.py take."""

    def run(sql: str, args: Any) -> list[tuple[Any, ...]]:
        cur.execute(sql.encode(), args)
        return cur.fetchall() if cur.description is not None else []

    return run


HOUR_MS = 3_600_000
DAY_MS = 24 * HOUR_MS

_INSERT = f"""INSERT INTO reminders ({REMINDER_COLUMNS})
             VALUES ({", ".join("%s" for _ in REMINDER_FIELDS)})
             ON CONFLICT (key) DO NOTHING RETURNING id"""


def _insert_targets(cur: Cursor, added: Sequence[tuple[int, NewReminder]]) -> None:
    """Insert the targets of added reminders in one statement, in their given order."""
    rows = [(rid, t.channel, t.address) for rid, r in added for t in r.targets]
    if not rows:
        return
    rids, channels, addresses = (list(c) for c in zip(*rows, strict=True))
    cur.execute(
        """INSERT INTO targets (reminder_id, channel, address)
           SELECT rid, c, a FROM unnest(%s::bigint[], %s::text[], %s::text[])
               WITH ORDINALITY AS t(rid, c, a, n)
           ORDER BY n ON CONFLICT DO NOTHING""",
        (rids, channels, addresses),
    )


def insert_reminder(cur: Cursor, r: NewReminder, now: int) -> int | None:
    """Insert one reminder and its targets; return its id, or None if its key exists."""
    cur.execute(_INSERT, reminder_values(r, now))
    row = cur.fetchone()
    if row is None:
        return None
    rid = int(row[0])
    _insert_targets(cur, [(rid, r)])
    return rid


def add_many(cur: Cursor, reminders: Iterable[NewReminder], now: int) -> tuple[int, int]:
    """Insert reminders and their targets a chunk at a time; return (added, skipped)."""
    added = skipped = 0
    for chunk in chunked(reminders):
        a, s = _add_chunk(cur, chunk, now)
        added, skipped = added + a, skipped + s
    return added, skipped


def _add_chunk(cur: Cursor, reminders: Sequence[NewReminder], now: int) -> tuple[int, int]:
    # Pipelined: one round trip for the batch, not one per reminder. Each statement still runs
    # in order, so the UNIQUE key decides as in `add`: a key seen before (even earlier in this
    # batch) inserts nothing and returns no row.
    cur.executemany(_INSERT, [reminder_values(r, now) for r in reminders], returning=True)
    added: list[tuple[int, NewReminder]] = []
    for r in reminders:
        row = cur.fetchone()
        if row is not None:
            added.append((int(row[0]), r))
        cur.nextset()
    _insert_targets(cur, added)
    return len(added), len(reminders) - len(added)


def dead_letters(cur: Cursor, reminder_id: int) -> list[DeadLetter]:
    """Return a reminder's dead letters, oldest fire first."""
    cur.execute(
        """SELECT reminder_id, fire_at, error_count, last_error, dead_at, retried_at
           FROM dead_letters WHERE reminder_id = %s ORDER BY fire_at""",
        (reminder_id,),
    )
    return [DeadLetter(*row) for row in cur.fetchall()]


def _states(cur: Cursor, ids: Sequence[int]) -> dict[int, tuple[Any, ...]]:
    """Return id -> (rule, fire_at, lease_until, done_at, cancelled_at); raise on unknown ids.

    The rows are locked (FOR UPDATE) so that a tick cannot claim one between the check and the
    change.
    """
    cur.execute(
        """SELECT id, rule, fire_at, lease_until, done_at, cancelled_at FROM reminders
           WHERE id = ANY(%s) ORDER BY id FOR UPDATE""",
        (list(ids),),
    )
    found = {int(row[0]): row[1:] for row in cur.fetchall()}
    missing = [i for i in ids if i not in found]
    if missing:
        raise NotFoundError(f"no reminder with id {missing[0]}")
    return found


def cancel(cur: Cursor, ids: Sequence[int], now: int) -> list[Change]:
    """Cancel rows; see Store.cancel."""
    states = _states(cur, ids)
    changes = []
    run = runner(cur)
    for rid in dict.fromkeys(ids):
        refusal = cancel_refusal(states[rid], retries.has_any(run, retries.POSTGRES, rid))
        if refusal is not None:
            changes.append(Change(rid, skipped=refusal))
            continue
        retries.drop(run, retries.POSTGRES, rid, None, None)
        # Clearing the lease is what makes cancellation win: a running tick's write-back
        # requires its lease, so it cannot put a next fire back on this row.
        cur.execute(
            """UPDATE reminders SET cancelled_at = %s, next_fire_at = NULL,
                   lease_owner = NULL, lease_until = NULL, updated_at = %s
               WHERE id = %s""",
            (now, now, rid),
        )
        changes.append(Change(rid))
    return changes


def retry_dead(cur: Cursor, ids: Sequence[int] | None, now: int) -> list[Change]:
    """Re-arm dead fires; see Store.retry_dead."""
    if ids is None:
        cur.execute(
            """SELECT DISTINCT d.reminder_id FROM dead_letters d
               JOIN reminders r ON r.id = d.reminder_id
               WHERE d.retried_at IS NULL AND r.cancelled_at IS NULL
               ORDER BY d.reminder_id"""
        )
        ids = [int(r[0]) for r in cur.fetchall()]
    states = _states(cur, ids)
    changes = []
    for rid in dict.fromkeys(ids):
        cur.execute(
            "SELECT min(fire_at) FROM dead_letters WHERE reminder_id = %s AND retried_at IS NULL",
            (rid,),
        )
        row = cur.fetchone()
        oldest = None if row is None else row[0]
        reason = retry_refusal(states[rid], oldest, now)
        # See sqlite_ops.retry_dead: the re-armed fire takes over its targets' retries.
        if (
            reason is None
            and oldest is not None
            and not retries.drop(runner(cur), retries.POSTGRES, rid, int(oldest), now)
        ):
            reason = "a tick is delivering it; retry after the tick"
        if reason is not None or oldest is None:  # no dead fire always has a reason
            changes.append(Change(rid, skipped=reason))
            continue
        cur.execute(
            """UPDATE reminders SET fire_at = %(fire)s, next_fire_at = %(now)s, error_count = 0,
                   last_error = NULL, dead_at = NULL, done_at = NULL,
                   lease_owner = NULL, lease_until = NULL, updated_at = %(now)s
               WHERE id = %(id)s""",
            {"fire": oldest, "now": now, "id": rid},
        )
        cur.execute(
            "UPDATE dead_letters SET retried_at = %s WHERE reminder_id = %s AND fire_at = %s",
            (now, rid, oldest),
        )
        changes.append(Change(rid, fire_at=int(oldest)))
    return changes


def stats(cur: Cursor, now: int) -> Stats:
    """Count rows by state and recent ledger outcomes."""
    cur.execute(
        """SELECT
             count(*) FILTER (WHERE next_fire_at IS NOT NULL AND cancelled_at IS NULL),
             count(*) FILTER (WHERE done_at IS NOT NULL AND cancelled_at IS NULL),
             count(*) FILTER (WHERE dead_at IS NOT NULL AND cancelled_at IS NULL),
             count(*) FILTER (WHERE cancelled_at IS NOT NULL),
             count(*) FILTER (WHERE next_fire_at <= %(now)s AND cancelled_at IS NULL),
             count(*) FILTER (WHERE next_fire_at IS NOT NULL AND error_count > 0
                              AND cancelled_at IS NULL),
             count(*) FILTER (WHERE lease_until >= %(now)s),
             min(next_fire_at) FILTER (WHERE next_fire_at <= %(now)s AND cancelled_at IS NULL)
           FROM reminders""",
        {"now": now},
    )
    row = cur.fetchone()
    assert row is not None
    cur.execute(
        """SELECT count(*) FROM dead_letters d JOIN reminders r ON r.id = d.reminder_id
           WHERE d.retried_at IS NULL AND r.cancelled_at IS NULL"""
    )
    letters = cur.fetchone()
    assert letters is not None
    cur.execute(
        """SELECT
             count(*) FILTER (WHERE outcome = 'sent' AND at > %(hour)s),
             count(*) FILTER (WHERE outcome != 'sent' AND at > %(hour)s),
             count(*) FILTER (WHERE outcome = 'sent'),
             count(*) FILTER (WHERE outcome != 'sent')
           FROM deliveries WHERE at > %(day)s AND at <= %(now)s""",
        {"hour": now - HOUR_MS, "day": now - DAY_MS, "now": now},
    )
    ledger = cur.fetchone()
    assert ledger is not None
    retrying, disabled = retries.counts(runner(cur), retries.POSTGRES)
    return Stats(
        retrying_targets=retrying,
        disabled_targets=disabled,
        pending=int(row[0]),
        done=int(row[1]),
        dead=int(row[2]),
        cancelled=int(row[3]),
        due=int(row[4]),
        retrying=int(row[5]),
        leased=int(row[6]),
        oldest_due_at=None if row[7] is None else int(row[7]),
        dead_letters=int(letters[0]),
        sent_last_hour=int(ledger[0]),
        failed_last_hour=int(ledger[1]),
        sent_last_day=int(ledger[2]),
        failed_last_day=int(ledger[3]),
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

_DOOMED = f"""(done_at < %(before)s AND cancelled_at IS NULL AND NOT EXISTS (
                 SELECT 1 FROM dead_letters x WHERE x.reminder_id = reminders.id
                   AND x.retried_at IS NULL) AND NOT {retries.RETRYING})
             OR cancelled_at < %(before)s"""


def prune(cur: Cursor, before: int) -> PruneCounts:
    """Delete finished rows and old ledger rows; see Store.prune."""
    args = {"before": before}
    cur.execute(
        f"""SELECT count(*) FILTER (WHERE cancelled_at IS NULL),
                   count(*) FILTER (WHERE cancelled_at IS NOT NULL),
                   (SELECT count(*) FROM dead_letters
                    WHERE reminder_id IN (SELECT id FROM reminders WHERE {_DOOMED})),
                   (SELECT count(*) FROM deliveries
                    WHERE reminder_id IN (SELECT id FROM reminders WHERE {_DOOMED}))
            FROM reminders WHERE {_DOOMED}""",
        args,
    )
    counts = cur.fetchone()
    assert counts is not None
    done, cancelled, letters, ledger = (int(c) for c in counts)
    cur.execute(f"DELETE FROM reminders WHERE {_DOOMED}", args)  # cascades to targets, ledger
    cur.execute(f"DELETE FROM deliveries WHERE at < %(before)s AND NOT ({_PROTECTED})", args)
    old = cur.rowcount
    return PruneCounts(
        deliveries=ledger + old, done=done, cancelled=cancelled, dead_letters=letters
    )


def health(cur: Cursor, where: str, expected_version: int) -> list[HealthCheck]:
    """Check the schema version, the server, and the index that holds the core rule."""
    cur.execute("SELECT value FROM duequeue_meta WHERE name = 'schema_version'")
    row = cur.fetchone()
    version = int(row[0]) if row else 0
    checks = [
        HealthCheck(
            "database schema",
            version == expected_version,
            f"{where}: schema version {version} (this duequeue: {expected_version})",
            None if version == expected_version else "upgrade duequeue or restore a backup",
        )
    ]
    cur.execute("SHOW server_version")
    server = cur.fetchone()
    checks.append(
        HealthCheck("database server", True, f"PostgreSQL {server[0] if server else '?'}")
    )
    # The "one sent per target and fire" rule lives in this unique index; a failed concurrent
    # rebuild can leave it invalid, and then nothing stops a second `sent`.
    cur.execute(
        """SELECT i.indisvalid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
           WHERE c.relname = 'deliveries_sent_once'
             AND c.relnamespace = current_schema()::regnamespace"""
    )
    index = cur.fetchone()
    ok = bool(index and index[0])
    checks.append(
        HealthCheck(
            "database integrity",
            ok,
            "index deliveries_sent_once: valid"
            if ok
            else "index deliveries_sent_once: " + ("invalid" if index else "missing"),
            None
            if ok
            else "stop cron, then in psql `REINDEX INDEX deliveries_sent_once` (if invalid) or "
            "create it as schema_postgres.sql does (if missing)",
        )
    )
    return checks
