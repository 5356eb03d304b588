"""Per-target retries and disabled targets, in SQL written once for SQLite and PostgreSQL.

A target that failed on a fire other targets got (a partial success) keeps its own retry of that
fire in `target_retries`, on the backoff table, while its reminder row moves on: the row is never
held back and the targets that have the fire never get it again. Sent, the retry row is deleted;
out of retries (or refused for good) it becomes a dead letter of its fire, which `retry` re-arms
like any other (the row then delivers to the targets that lack the fire, and only to them).

The statements use `:name` parameters; a `Dialect` (sql.py) turns them into the driver's style
and says how a list of ids is matched, which is all the two dialects disagree on here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from duequeue.shared.lazy import LazyModule
from duequeue.store.sql import Dialect, Run

if TYPE_CHECKING:
    from duequeue.store import records
    from duequeue.store.records import PendingRetry
else:
    # On first use: cron's tick with nothing due never builds these (tick_records.py).
    records = LazyModule("duequeue.store.records")


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
        records.PendingRetry(int(rid), int(tid), int(fire), int(errors), error, int(at))
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
