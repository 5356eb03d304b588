"""`pause` and `resume`, written once for every dialect: a reminder's, and the whole queue's.

A paused reminder keeps its pending fire in `fire_at` and has no `next_fire_at`: it is out of
the reminders_due index, so a claim neither takes nor walks it, and the counts of pending and
due rows leave it out. `resume` makes that fire due again (`next_fire_at = fire_at`): a fire
missed while paused goes out once at the next tick, or is skipped past its misfire grace, as
after a cron outage; a fire that was waiting out a backoff is tried at once. Its per-target
retries stay where they are and the claim passes them by while the reminder is paused.

The whole queue's pause is one row of queue_meta ('paused', when): the tick reads it before it
claims and claims nothing, and the claim's own statements test it too, so a pause made while a
long tick runs stops its next batch.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from duequeue.errors import NotFoundError
from duequeue.shared.lazy import LazyModule
from duequeue.store.sql import Dialect, Run

if TYPE_CHECKING:
    from duequeue.store import records
    from duequeue.store.records import Change
else:
    # On first use: cron's tick with nothing due never builds these (tick_records.py).
    records = LazyModule("duequeue.store.records")

# The claim's condition that the queue is not paused: one probe of queue_meta's primary key,
# made once per statement (the subquery names no column of the rows it filters).
NOT_PAUSED = "NOT EXISTS (SELECT 1 FROM queue_meta WHERE name = 'paused')"
# A target retry's condition that its reminder is not paused (one primary-key probe each).
REMINDER_NOT_PAUSED = """NOT EXISTS (SELECT 1 FROM reminders p
    WHERE p.id = target_retries.reminder_id AND p.paused_at IS NOT NULL)"""

_STATE = """SELECT id, next_fire_at, lease_until, done_at, dead_at, cancelled_at, paused_at
    FROM reminders WHERE {ids} ORDER BY id {lock}"""


def _states(run: Run, d: Dialect, ids: Sequence[int]) -> dict[int, tuple[object, ...]]:
    rows = run(
        d.sql(_STATE.format(ids=d.in_ids("id", "ids"), lock=d.for_update)), {"ids": d.ids(ids)}
    )
    found = {int(row[0]): tuple(row[1:]) for row in rows}
    missing = [i for i in ids if i not in found]
    if missing:
        raise NotFoundError(f"no reminder with id {missing[0]}")
    return found


def _finished(done_at: object, dead_at: object, cancelled_at: object) -> str | None:
    if cancelled_at is not None:
        return "cancelled"
    if dead_at is not None:
        return "dead-lettered: nothing pending to pause (`retry` re-arms it)"
    if done_at is not None:
        return "already finished (done)"
    return None


def _retry_leased(run: Run, d: Dialect, rid: int, now: int) -> bool:
    # Locked first (PostgreSQL), as change_sql.py does, so no claim takes one meanwhile.
    found = run(
        d.sql(f"SELECT lease_until FROM target_retries WHERE reminder_id = :id {d.for_update}"),
        {"id": rid},
    )
    return any(r[0] is not None and int(r[0]) >= now for r in found)


def pause(run: Run, d: Dialect, ids: Sequence[int], now: int) -> list[Change]:
    """Pause reminders; see Store.pause."""
    found = _states(run, d, ids)
    changes = []
    for rid in dict.fromkeys(ids):
        next_fire_at, lease_until, done_at, dead_at, cancelled_at, paused_at = found[rid]
        reason = _finished(done_at, dead_at, cancelled_at)
        if reason is None and paused_at is not None:
            reason = "already paused"
        if reason is None and next_fire_at is None:
            reason = "it has no pending fire"
        if reason is None and (
            (isinstance(lease_until, int) and lease_until >= now) or _retry_leased(run, d, rid, now)
        ):
            # Refused, not waited for: the tick's write-back would give the row a next fire.
            reason = "a tick is delivering it; try again in a moment"
        if reason is not None:
            changes.append(records.Change(rid, skipped=reason))
            continue
        run(
            d.sql(
                """UPDATE reminders SET paused_at = :now, next_fire_at = NULL,
                       lease_owner = NULL, lease_until = NULL, updated_at = :now
                   WHERE id = :id"""
            ),
            {"now": now, "id": rid},
        )
        _note(run, d, rid, now, "paused")
        changes.append(records.Change(rid))
    return changes


def resume(run: Run, d: Dialect, ids: Sequence[int], now: int) -> list[Change]:
    """Resume paused reminders; see Store.resume."""
    found = _states(run, d, ids)
    changes = []
    for rid in dict.fromkeys(ids):
        _next, _lease, done_at, dead_at, cancelled_at, paused_at = found[rid]
        reason = _finished(done_at, dead_at, cancelled_at)
        if reason is None and paused_at is None:
            reason = "not paused"
        if reason is not None:
            changes.append(records.Change(rid, skipped=reason))
            continue
        rows = run(
            d.sql(
                """UPDATE reminders SET paused_at = NULL, next_fire_at = fire_at,
                       updated_at = :now
                   WHERE id = :id RETURNING fire_at"""
            ),
            {"now": now, "id": rid},
        )
        _note(run, d, rid, now, "resumed")
        fire = rows[0][0] if rows else None
        changes.append(records.Change(rid, fire_at=None if fire is None else int(fire)))
    return changes


def _note(run: Run, d: Dialect, rid: int, now: int, what: str) -> None:
    run(
        d.sql("INSERT INTO reminder_changes (reminder_id, at, change) VALUES (:id, :now, :what)"),
        {"id": rid, "now": now, "what": what},
    )


def queue_paused(run: Run, d: Dialect) -> int | None:
    """Return since when the whole queue is paused (unix ms), None when it is not."""
    found = run(d.sql("SELECT value FROM queue_meta WHERE name = 'paused'"), {})
    return int(found[0][0]) if found else None


def pause_queue(run: Run, d: Dialect, now: int) -> int | None:
    """Pause the whole queue at `now` (a pause already there keeps its time); return since when
    it was paused before, None if it was not."""
    before = queue_paused(run, d)
    if before is None:
        run(
            d.sql("INSERT INTO queue_meta (name, value) VALUES ('paused', :now)"),
            {"now": str(now)},
        )
    return before


def resume_queue(run: Run, d: Dialect) -> int | None:
    """Resume the whole queue; return since when it was paused, None if it was not."""
    before = queue_paused(run, d)
    run(d.sql("DELETE FROM queue_meta WHERE name = 'paused'"), {})
    return before
