"""What every store maps the same way: the columns it reads and the records it builds.

The SQL dialects differ (placeholders, SKIP LOCKED, json_each vs unnest), but the columns a
claim returns, the columns inspect reads and how their rows become records do not; keeping them
here makes a column added for one store impossible to forget in the other.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from duequeue.errors import NotFoundError
from duequeue.shared.lazy import LazyModule
from duequeue.store.tick_records import Target

if TYPE_CHECKING:
    from duequeue.store import records
    from duequeue.store.records import Change, NewReminder, ReminderView
else:
    # On first use: cron's tick with nothing due never builds these (tick_records.py).
    records = LazyModule("duequeue.store.records")

# The columns of a new reminder, in reminder_values' order.
REMINDER_FIELDS = (
    "key",
    "subject",
    "body",
    "data",
    "rule_kind",
    "rule",
    "tz",
    "dtstart",
    "misfire_grace_ms",
    "fire_at",
    "next_fire_at",
    "created_at",
    "updated_at",
    "start_wall",
    "fire_release",
)
REMINDER_COLUMNS = ", ".join(REMINDER_FIELDS)

# What inspect reads of a reminder (portable SQL), in view()'s order; the dead view appends
# the dead letter's fire_at, error_count, last_error and dead_at. The open dead letters are
# counted off dead_letters_open (one index probe a row); a cancelled row's are moot.
VIEW_COLUMNS = """r.id, r.key, r.subject, r.rule_kind, r.rule, r.tz,
    CASE WHEN r.cancelled_at IS NOT NULL THEN 'cancelled'
         WHEN r.dead_at IS NOT NULL THEN 'dead'
         WHEN r.done_at IS NOT NULL THEN 'done'
         WHEN r.paused_at IS NOT NULL THEN 'paused' ELSE 'pending' END,
    r.fire_at, r.next_fire_at, r.error_count, r.last_error, r.last_fired_at, r.skipped_fires,
    r.created_at, r.dead_at,
    (SELECT min(d.at) FROM deliveries d WHERE d.reminder_id = r.id
        AND d.fire_at = r.last_fired_at AND d.outcome = 'sent'),
    r.dtstart, r.start_wall, r.fire_release, r.body, r.data,
    CASE WHEN r.cancelled_at IS NULL THEN (SELECT count(*) FROM dead_letters x
        WHERE x.reminder_id = r.id AND x.retried_at IS NULL) ELSE 0 END,
    r.paused_at"""
_VIEW_WIDTH = 23


# Reminders add_many inserts per statement batch: about a MB of rows in memory at a time (an
# import's peak RSS holds SQLite's larger cache beside it: add_sql.BULK_CACHE_KIB), and a
# batch big enough that the per-batch queries (max(id), RETURNING) cost nothing per row.
ADD_CHUNK = 2_000


def chunked(reminders: Iterable[NewReminder], size: int = ADD_CHUNK) -> Iterator[list[NewReminder]]:
    """Yield `reminders` as lists of at most `size`, reading no further ahead than one list."""
    chunk: list[NewReminder] = []
    for r in reminders:
        chunk.append(r)
        if len(chunk) >= size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def add_chunks(
    reminders: Iterable[NewReminder], add_chunk: Callable[[list[NewReminder]], tuple[int, int]]
) -> tuple[int, int]:
    """Add reminders a chunk at a time through the store's `add_chunk`; return (added, skipped)."""
    added = skipped = 0
    for chunk in chunked(reminders):
        a, s = add_chunk(chunk)
        added, skipped = added + a, skipped + s
    return added, skipped


def reminder_values(r: NewReminder, now: int) -> tuple[Any, ...]:
    """Return a new reminder's values in REMINDER_FIELDS order (due at its first fire)."""
    return (
        r.key,
        r.subject,
        r.body,
        r.data,
        r.rule_kind,
        r.rule,
        r.tz,
        r.dtstart,
        r.misfire_grace_ms,
        r.fire_at,
        r.fire_at,
        now,
        now,
        r.start_wall,
        r.release,
    )


def view(row: Sequence[Any], targets: tuple[Target, ...]) -> ReminderView:
    """Build a ReminderView from a VIEW_COLUMNS row (plus a dead letter's, in the dead view)."""
    found = records.ReminderView(
        id=row[0],
        key=row[1],
        subject=row[2],
        rule_kind=row[3],
        rule=row[4],
        tz=row[5],
        state=row[6],
        fire_at=row[7],
        next_fire_at=row[8],
        error_count=row[9],
        last_error=row[10],
        last_fired_at=row[11],
        skipped_fires=row[12],
        created_at=row[13],
        dead_at=row[14],
        last_sent_at=row[15],
        dtstart=row[16],
        start_wall=row[17],
        fire_release=row[18],
        body=row[19],
        data=row[20],
        dead_letters=int(row[21]),
        paused_at=row[22],
        targets=targets,
    )
    if len(row) > _VIEW_WIDTH:  # a dead letter: its fire, errors and time, beside the row's own
        w = _VIEW_WIDTH
        found = replace(
            found,
            dead_fire_at=row[w],
            error_count=row[w + 1],
            last_error=row[w + 2],
            dead_at=row[w + 3],
        )
    return found


def cancel_refusal(state: Sequence[Any], retrying: bool) -> str | None:
    """Return why a row in `_states` form cannot be cancelled, or None if it can; a finished
    row whose targets still retry a fire (`retrying`) can be, which stops those retries."""
    _rule, _fire, _lease, done_at, cancelled_at, _paused = state
    if cancelled_at is not None:
        return "already cancelled"
    if done_at is not None and not retrying:
        return "already finished (done)"
    return None


def enabled(ids: Sequence[int], known: set[int], changed: set[int]) -> list[Change]:
    """Return what `enable` did to each reminder; raise on an id that names none."""
    missing = [i for i in ids if i not in known]
    if missing:
        raise NotFoundError(f"no reminder with id {missing[0]}")
    return [
        records.Change(rid) if rid in changed else records.Change(rid, skipped="no disabled target")
        for rid in dict.fromkeys(ids)
    ]


def retry_refusal(state: Sequence[Any], oldest_dead: int | None, now: int) -> str | None:
    """Return why a row's oldest dead fire cannot be re-armed now, or None if it can."""
    _rule, fire_at, lease_until, _done, cancelled_at, paused_at = state
    if oldest_dead is None:
        return "no dead fire to retry"
    if cancelled_at is not None:
        return "cancelled"
    if paused_at is not None:
        # A re-armed fire is due at once: it would go out while the reminder is paused.
        return "paused; `duequeue resume` it first"
    if lease_until is not None and lease_until >= now:
        return "a tick is delivering it; retry after the tick"
    if fire_at is not None and fire_at <= now:
        # Its pending fire is due or backing off: re-arming would drop that fire.
        return "its pending fire is due now; retry after the next tick"
    return None
