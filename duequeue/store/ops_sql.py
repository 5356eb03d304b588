"""The operator's queries written once for every dialect: cancel, retry, stats, prune.

Each function runs inside the transaction the store opened (see sql.py for the Run and Dialect
seam); none of them commits or reads the clock.
"""

from collections.abc import Sequence

from duequeue.errors import NotFoundError
from duequeue.store import pause_sql, retries, tz_sql
from duequeue.store.records import (
    Change,
    HealthCheck,
    PruneCounts,
    Stats,
)
from duequeue.store.rows import cancel_refusal, retry_refusal
from duequeue.store.sql import Dialect, Row, Run

HOUR_MS = 3_600_000
DAY_MS = 24 * HOUR_MS


class DryRun(Exception):
    """Raised inside a prune's transaction to roll it back, carrying what it would have done."""

    def __init__(self, counts: PruneCounts) -> None:
        super().__init__("dry run")
        self.counts = counts


def states(run: Run, d: Dialect, ids: Sequence[int]) -> dict[int, Row]:
    """Return id -> (rule, fire_at, lease_until, done_at, cancelled_at, paused_at); raise on
    unknown ids.

    On PostgreSQL the rows are locked, in id order, so that a tick cannot claim one between
    the check and the change.
    """
    rows = run(
        d.sql(
            f"""SELECT id, rule, fire_at, lease_until, done_at, cancelled_at, paused_at
                FROM reminders
                WHERE {d.in_ids("id", "ids")} ORDER BY id {d.for_update}"""
        ),
        {"ids": d.ids(ids)},
    )
    found = {int(row[0]): row[1:] for row in rows}
    missing = [i for i in ids if i not in found]
    if missing:
        raise NotFoundError(f"no reminder with id {missing[0]}")
    return found


def cancel(run: Run, d: Dialect, ids: Sequence[int], now: int) -> list[Change]:
    """Cancel rows; see Store.cancel."""
    found = states(run, d, ids)
    changes = []
    for rid in dict.fromkeys(ids):
        refusal = cancel_refusal(found[rid], retries.has_any(run, d, rid))
        if refusal is not None:
            changes.append(Change(rid, skipped=refusal))
            continue
        retries.drop(run, d, rid, None, None)
        # Clearing the lease is what makes cancellation win: a running tick's write-back
        # requires its lease, so it cannot put a next fire back on this row.
        run(
            d.sql(
                """UPDATE reminders SET cancelled_at = :now, next_fire_at = NULL,
                       paused_at = NULL,
                       lease_owner = NULL, lease_until = NULL, updated_at = :now
                   WHERE id = :id"""
            ),
            {"now": now, "id": rid},
        )
        changes.append(Change(rid))
    return changes


def cancel_key(run: Run, d: Dialect, key: str, now: int) -> list[Change]:
    """Cancel the live reminder holding `key`; see Store.cancel_key."""
    # Off the unique index of live keys (reminders_live_key): at most one row holds it.
    found = run(
        d.sql(
            """SELECT id FROM reminders
               WHERE key = :key AND done_at IS NULL AND cancelled_at IS NULL"""
        ),
        {"key": key},
    )
    if not found:
        raise NotFoundError(f"no live reminder with key {key[:64]!r}", field="key")
    return cancel(run, d, [int(found[0][0])], now)


def retry_dead(run: Run, d: Dialect, ids: Sequence[int] | None, now: int) -> list[Change]:
    """Re-arm dead fires; see Store.retry_dead."""
    if ids is None:
        rows = run(
            d.sql(
                """SELECT DISTINCT d.reminder_id FROM dead_letters d
                   JOIN reminders r ON r.id = d.reminder_id
                   WHERE d.retried_at IS NULL AND r.cancelled_at IS NULL
                   ORDER BY d.reminder_id"""
            ),
            {},
        )
        ids = [int(r[0]) for r in rows]
    found = states(run, d, ids)
    changes = []
    for rid in dict.fromkeys(ids):
        ((oldest,),) = run(
            d.sql(
                """SELECT min(fire_at) FROM dead_letters
                   WHERE reminder_id = :id AND retried_at IS NULL"""
            ),
            {"id": rid},
        )
        reason = retry_refusal(found[rid], oldest, now)
        if reason is None and oldest is not None and not _deliverable(run, d, rid, int(oldest)):
            # Re-arming would deliver to nobody and dead-letter the fire again at the next tick.
            reason = (
                "every target that lacks this fire is disabled (410 Gone); "
                f"`duequeue enable {rid}` first"
            )
        # The re-armed fire delivers to every target that lacks it, so it takes over its
        # targets' own retries; not while a tick is sending one of them.
        if (
            reason is None
            and oldest is not None
            and not retries.drop(run, d, rid, int(oldest), now)
        ):
            reason = "a tick is delivering it; retry after the tick"
        if reason is not None or oldest is None:  # no dead fire always has a reason
            changes.append(Change(rid, skipped=reason))
            continue
        run(
            d.sql(
                """UPDATE reminders SET fire_at = :fire, next_fire_at = :now, error_count = 0,
                       last_error = NULL, dead_at = NULL, done_at = NULL,
                       lease_owner = NULL, lease_until = NULL, updated_at = :now
                   WHERE id = :id"""
            ),
            {"fire": oldest, "now": now, "id": rid},
        )
        run(
            d.sql(
                """UPDATE dead_letters SET retried_at = :now
                   WHERE reminder_id = :id AND fire_at = :fire"""
            ),
            {"fire": oldest, "now": now, "id": rid},
        )
        changes.append(Change(rid, fire_at=int(oldest)))
    return changes


def _deliverable(run: Run, d: Dialect, rid: int, fire: int) -> bool:
    """Return whether the fire has a target not disabled that has not got it yet."""
    ((count,),) = run(
        d.sql(
            """SELECT count(*) FROM targets t
               WHERE t.reminder_id = :id AND t.disabled_at IS NULL
                 AND NOT EXISTS (SELECT 1 FROM deliveries dl
                                 WHERE dl.reminder_id = :id AND dl.target_id = t.id
                                   AND dl.fire_at = :fire AND dl.outcome = 'sent')"""
        ),
        {"id": rid, "fire": fire},
    )
    return int(count) > 0


def stats(run: Run, d: Dialect, now: int) -> Stats:
    """Count rows by state and recent ledger outcomes (in one snapshot: the store's to open)."""
    # One count per state, each off the index of that state (0007), not a pass over the table:
    # serve's overview shows these at every refresh. Cancelling clears next_fire_at, so a row
    # with a next fire is never cancelled; a lease is taken on due rows only, so a leased row is
    # due (claim_sql.py).
    ((pending, done, dead, cancelled, due, retrying, leased, oldest, paused),) = run(
        d.sql(
            """SELECT
                 (SELECT count(*) FROM reminders WHERE next_fire_at IS NOT NULL),
                 (SELECT count(*) FROM reminders
                  WHERE done_at IS NOT NULL AND cancelled_at IS NULL),
                 (SELECT count(*) FROM reminders
                  WHERE dead_at IS NOT NULL AND cancelled_at IS NULL),
                 (SELECT count(*) FROM reminders WHERE cancelled_at IS NOT NULL),
                 (SELECT count(*) FROM reminders WHERE next_fire_at <= :now),
                 (SELECT count(*) FROM reminders
                  WHERE error_count > 0 AND next_fire_at IS NOT NULL),
                 (SELECT count(*) FROM reminders WHERE next_fire_at <= :now
                  AND lease_until >= :now),
                 (SELECT min(next_fire_at) FROM reminders WHERE next_fire_at <= :now),
                 (SELECT count(*) FROM reminders WHERE paused_at IS NOT NULL)"""
        ),
        {"now": now},
    )
    # The open dead letters, and the reminders they belong to (what every view marks `dead`).
    ((letters, dead_reminders),) = run(
        d.sql(
            """SELECT count(*), count(DISTINCT d.reminder_id)
               FROM dead_letters d JOIN reminders r ON r.id = d.reminder_id
               WHERE d.retried_at IS NULL AND r.cancelled_at IS NULL"""
        ),
        {},
    )
    (ledger,) = run(
        d.sql(
            """SELECT
                 count(*) FILTER (WHERE outcome = 'sent' AND at > :hour),
                 count(*) FILTER (WHERE outcome != 'sent' AND at > :hour),
                 count(*) FILTER (WHERE outcome = 'sent'),
                 count(*) FILTER (WHERE outcome != 'sent')
               FROM deliveries WHERE at > :day AND at <= :now"""
        ),
        {"hour": now - HOUR_MS, "day": now - DAY_MS, "now": now},
    )
    retrying_targets, disabled = retries.counts(run, d)
    return Stats(
        retrying_targets=retrying_targets,
        disabled_targets=disabled,
        pending=int(pending),
        done=int(done),
        dead=int(dead),
        cancelled=int(cancelled),
        due=int(due),
        retrying=int(retrying),
        leased=int(leased),
        oldest_due_at=None if oldest is None else int(oldest),
        dead_letters=int(letters),
        dead_reminders=int(dead_reminders),
        sent_last_hour=int(ledger[0]),
        failed_last_hour=int(ledger[1]),
        sent_last_day=int(ledger[2]),
        failed_last_day=int(ledger[3]),
        last_tick_ok_at=last_tick_ok(run, d),
        moved_fires=tz_sql.count_moves(run, d),
        paused=int(paused),
        queue_paused_at=pause_sql.queue_paused(run, d),
    )


def last_tick_ok(run: Run, d: Dialect) -> int | None:
    """Return when a tick last ended without error; None if none ever did."""
    found = run(d.sql("SELECT last_ok_at FROM tick_marks WHERE id = 1"), {})
    return int(found[0][0]) if found else None


def mark_tick(run: Run, d: Dialect, now: int) -> None:
    """Record that a tick that started at `now` ended without error (a later one's mark stays:
    overlapping ticks end in any order)."""
    run(
        d.sql(
            """INSERT INTO tick_marks (id, last_ok_at) VALUES (1, :now)
               ON CONFLICT (id) DO UPDATE SET last_ok_at = excluded.last_ok_at
               WHERE tick_marks.last_ok_at < excluded.last_ok_at"""
        ),
        {"now": now},
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


def prune(run: Run, d: Dialect, before: int) -> PruneCounts:
    """Delete finished rows and old ledger rows; see Store.prune."""
    args = {"before": before}
    ((done, cancelled, letters, ledger),) = run(
        d.sql(
            f"""SELECT count(*) FILTER (WHERE cancelled_at IS NULL),
                       count(*) FILTER (WHERE cancelled_at IS NOT NULL),
                       (SELECT count(*) FROM dead_letters
                        WHERE reminder_id IN (SELECT id FROM reminders WHERE {_DOOMED})),
                       (SELECT count(*) FROM deliveries
                        WHERE reminder_id IN (SELECT id FROM reminders WHERE {_DOOMED}))
                FROM reminders WHERE {_DOOMED}"""
        ),
        args,
    )
    run(d.sql(f"DELETE FROM reminders WHERE {_DOOMED}"), args)  # cascades to targets, ledger
    run(d.sql(f"DELETE FROM deliveries WHERE at < :before AND NOT ({_PROTECTED})"), args)
    return PruneCounts(
        deliveries=int(ledger) + run.changed(),
        done=int(done),
        cancelled=int(cancelled),
        dead_letters=int(letters),
    )


def schema_check(where: str, version: int, expected: int) -> HealthCheck:
    """Return doctor's check that the database has this duequeue's schema version."""
    return HealthCheck(
        "database schema",
        version == expected,
        f"{where}: schema version {version} (this duequeue: {expected})",
        None if version == expected else "upgrade duequeue or restore a backup",
    )
