"""Per-target retries and disabled targets, in SQL written once for SQLite and PostgreSQL.

A target that failed on a fire other targets got (a partial success) keeps its own retry of that
fire in `target_retries`, on the backoff table, while its reminder row moves on: the row is never
held back and the targets that have the fire never get it again. Sent, the retry row is deleted;
out of retries (or refused for good) it becomes a dead letter of its fire, which `retry` re-arms
like any other (the row then delivers to the targets that lack the fire, and only to them).

The statements use `:name` parameters; a `Dialect` (sql.py) turns them into the driver's style
and says how a list of ids is matched, which is all the two dialects disagree on here.
"""

from collections.abc import Sequence

from duequeue.store.base import NO_ATTEMPTS, Claimed, PendingRetry, Target, WriteBack
from duequeue.store.sql import Dialect, Run

MAX_ERROR_TEXT = 1000

ANY_DUE = """SELECT 1 FROM target_retries WHERE next_try_at <= :now
    AND (lease_until IS NULL OR lease_until < :now) LIMIT 1"""


def claim(run: Run, d: Dialect, owner: str, now: int, until: int, limit: int) -> list[Claimed]:
    """Lease up to `limit` due per-target retries; return each as a one-target Claimed."""
    due = f"""SELECT id FROM target_retries
        WHERE next_try_at <= :now AND (lease_until IS NULL OR lease_until < :now)
        ORDER BY next_try_at, id LIMIT :limit {d.skip_locked}"""
    leased = run(
        d.sql(
            f"""UPDATE target_retries SET lease_owner = :owner, lease_until = :until
                WHERE {d.in_select("id", due)}
                RETURNING id, reminder_id, target_id, fire_at, error_count, next_try_at"""
        ),
        {"owner": owner, "until": until, "now": now, "limit": limit},
    )
    if not leased:
        return []
    leased.sort(key=lambda r: (r[5], r[0]))
    rids = sorted({int(r[1]) for r in leased})
    tids = sorted({int(r[2]) for r in leased})
    reminders = {
        int(r[0]): r
        for r in run(
            d.sql(
                f"""SELECT id, subject, body, data, rule_kind, rule, tz, dtstart
                    FROM reminders WHERE {d.in_ids("id", "ids")}"""
            ),
            {"ids": d.ids(rids)},
        )
    }
    targets = {
        int(r[0]): Target(int(r[0]), r[1], r[2], r[3], r[4])
        for r in run(
            d.sql(
                f"""SELECT id, channel, address, disabled_at, secret FROM targets
                    WHERE {d.in_ids("id", "ids")}"""
            ),
            {"ids": d.ids(tids)},
        )
    }
    # A send whose ledger row committed but whose write-back was lost (a crash in between):
    # the ledger has the last word, so the target is not sent the fire again.
    sent = {
        (int(r[0]), int(r[1]))
        for r in run(
            d.sql(
                f"""SELECT target_id, fire_at FROM deliveries
                    WHERE outcome = 'sent' AND {d.in_ids("target_id", "ids")}
                      AND fire_at IN (SELECT fire_at FROM target_retries
                                      WHERE {d.in_ids("id", "retries")})"""
            ),
            {"ids": d.ids(tids), "retries": d.ids([int(r[0]) for r in leased])},
        )
    }
    claimed = []
    for retry_id, rid, tid, fire, errors, _next in leased:
        r, target = reminders[int(rid)], targets[int(tid)]
        claimed.append(
            Claimed(
                id=int(rid),
                subject=r[1],
                body=r[2],
                data=r[3],
                rule_kind=r[4],
                rule=r[5],
                tz=r[6],
                dtstart=int(r[7]),
                misfire_grace_ms=None,  # a retry goes out however late: its fire was on time
                fire_at=int(fire),
                error_count=int(errors),
                targets=(target,),
                sent=frozenset({target.id}) if (target.id, int(fire)) in sent else frozenset(),
                # Every failure of this target at this fire is one ledger row.
                attempts={target.id: int(errors)} if errors else NO_ATTEMPTS,
                retry_id=int(retry_id),
            )
        )
    return claimed


def write_retry(run: Run, d: Dialect, w: WriteBack, owner: str, now: int) -> bool:
    """Apply the write-back of a per-target retry while `owner` holds it; True if it applied."""
    assert w.retry_id is not None
    args = {"id": w.retry_id, "owner": owner}
    if w.state == "pending":
        done = run(
            d.sql(
                """UPDATE target_retries SET error_count = :errors, last_error = :error,
                       next_try_at = :next, lease_owner = NULL, lease_until = NULL
                   WHERE id = :id AND lease_owner = :owner RETURNING id"""
            ),
            {**args, "errors": w.error_count, "error": w.last_error, "next": w.next_fire_at},
        )
    else:
        done = run(
            d.sql(
                "DELETE FROM target_retries WHERE id = :id AND lease_owner = :owner RETURNING id"
            ),
            args,
        )
    if not done:
        return False  # the lease was lost, or `cancel` / `retry` took the retry over
    if w.dead_letter:
        died = now if w.dead_at is None else w.dead_at
        dead_letter(run, d, w.reminder_id, w.fire_at, w.dead_errors, w.last_error, died)
    disable(run, d, w.disable, w.last_error, now)
    return True


def after_row(run: Run, d: Dialect, w: WriteBack, now: int) -> None:
    """Apply what comes with an applied row write-back: new per-target retries, disabled
    targets, and the dead letter of targets dead at once."""
    if w.retries:
        for r in w.retries:
            run(
                d.sql(
                    """INSERT INTO target_retries (reminder_id, target_id, fire_at, error_count,
                           last_error, next_try_at, created_at)
                       VALUES (:rid, :tid, :fire, :errors, :error, :next, :now)
                       ON CONFLICT (target_id, fire_at) DO UPDATE SET
                           error_count = excluded.error_count,
                           last_error = excluded.last_error,
                           next_try_at = excluded.next_try_at,
                           lease_owner = NULL, lease_until = NULL"""
                ),
                {
                    "rid": w.reminder_id,
                    "tid": r.target_id,
                    "fire": w.fire_at,
                    "errors": r.error_count,
                    "error": r.last_error,
                    "next": r.next_try_at,
                    "now": now,
                },
            )
    disable(run, d, w.disable, w.last_error, now)


def dead_letter(
    run: Run, d: Dialect, rid: int, fire: int, errors: int, error: str | None, now: int
) -> None:
    """Record a dead target of a fire; targets of one fire dying apart share its dead letter."""
    run(
        d.sql(
            """INSERT INTO dead_letters (reminder_id, fire_at, error_count, last_error, dead_at)
               VALUES (:rid, :fire, :errors, :error, :now)
               ON CONFLICT (reminder_id, fire_at) DO UPDATE SET
                   error_count = excluded.error_count,
                   last_error = CASE
                       WHEN dead_letters.retried_at IS NULL
                            AND dead_letters.last_error IS NOT NULL
                       THEN substr(dead_letters.last_error || '; ' || excluded.last_error,
                                   1, :max)
                       ELSE excluded.last_error END,
                   dead_at = excluded.dead_at, retried_at = NULL"""
        ),
        {
            "rid": rid,
            "fire": fire,
            "errors": errors,
            "error": error,
            "now": now,
            "max": MAX_ERROR_TEXT,
        },
    )


def disable(run: Run, d: Dialect, ids: Sequence[int], reason: str | None, now: int) -> None:
    """Switch targets off after their endpoint said 410 Gone."""
    if ids:
        run(
            d.sql(
                f"""UPDATE targets SET disabled_at = :now, disabled_reason = :reason
                    WHERE {d.in_ids("id", "ids")} AND disabled_at IS NULL"""
            ),
            {"now": now, "reason": reason, "ids": d.ids(ids)},
        )


def release(run: Run, d: Dialect, owner: str, retry_ids: Sequence[int]) -> None:
    """Drop `owner`'s lease on per-target retries it did not try."""
    if retry_ids:
        run(
            d.sql(
                f"""UPDATE target_retries SET lease_owner = NULL, lease_until = NULL
                    WHERE {d.in_ids("id", "ids")} AND lease_owner = :owner"""
            ),
            {"ids": d.ids(retry_ids), "owner": owner},
        )


def pending(run: Run, d: Dialect, reminder_id: int) -> list[PendingRetry]:
    """Return a reminder's per-target retries under way, oldest fire first."""
    rows = run(
        d.sql(
            """SELECT reminder_id, target_id, fire_at, error_count, last_error, next_try_at
               FROM target_retries WHERE reminder_id = :rid ORDER BY fire_at, target_id"""
        ),
        {"rid": reminder_id},
    )
    return [
        PendingRetry(int(rid), int(tid), int(fire), int(errors), error, int(at))
        for rid, tid, fire, errors, error, at in rows
    ]


def counts(run: Run, d: Dialect) -> tuple[int, int]:
    """Return (per-target retries under way, disabled targets of rows not cancelled)."""
    (row,) = run(
        d.sql(
            """SELECT (SELECT count(*) FROM target_retries),
                      (SELECT count(*) FROM targets t JOIN reminders r ON r.id = t.reminder_id
                       WHERE t.disabled_at IS NOT NULL AND r.cancelled_at IS NULL)"""
        ),
        {},
    )
    return int(row[0]), int(row[1])


def enable(run: Run, d: Dialect, ids: Sequence[int]) -> set[int]:
    """Switch the disabled targets of these reminders back on; return the reminders changed."""
    rows = run(
        d.sql(
            f"""UPDATE targets SET disabled_at = NULL, disabled_reason = NULL
                WHERE {d.in_ids("reminder_id", "ids")} AND disabled_at IS NOT NULL
                RETURNING reminder_id"""
        ),
        {"ids": d.ids(ids)},
    )
    return {int(r[0]) for r in rows}


def drop(run: Run, d: Dialect, reminder_id: int, fire_at: int | None, now: int | None) -> bool:
    """Delete a reminder's per-target retries (of one fire, or all): `cancel` stops them and
    a re-armed fire takes them over. With `now`, False, deleting nothing, if a tick holds one
    of them at that instant; without, they go whoever holds them (cancel wins)."""
    fire = "" if fire_at is None else " AND fire_at = :fire"
    leased = now is not None and run(
        d.sql(
            f"""SELECT 1 FROM target_retries WHERE reminder_id = :rid{fire}
                AND lease_until >= :now LIMIT 1"""
        ),
        {"rid": reminder_id, "fire": fire_at, "now": now},
    )
    if leased:
        return False
    run(
        d.sql(f"DELETE FROM target_retries WHERE reminder_id = :rid{fire}"),
        {"rid": reminder_id, "fire": fire_at},
    )
    return True


def has_any(run: Run, d: Dialect, reminder_id: int) -> bool:
    """Tell whether a reminder has per-target retries under way."""
    return bool(
        run(
            d.sql("SELECT 1 FROM target_retries WHERE reminder_id = :rid LIMIT 1"),
            {"rid": reminder_id},
        )
    )


# What prune must keep. Ledger rows of a fire a target still retries: deleting them could let
# that target get the fire twice. Done rows with retries under way are not finished.
PROTECTED = """EXISTS (SELECT 1 FROM target_retries t
                       WHERE t.reminder_id = deliveries.reminder_id
                         AND t.fire_at = deliveries.fire_at)"""
RETRYING = "EXISTS (SELECT 1 FROM target_retries t WHERE t.reminder_id = reminders.id)"
