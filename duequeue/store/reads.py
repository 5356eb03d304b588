"""Reads written once for both stores: a batch's targets, inspect's views, history's rows.

Each function runs inside the transaction (or on the cursor) its store hands it; see sql.py for
the Run and Dialect seam.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from duequeue.shared.lazy import LazyModule
from duequeue.store import rows as shared
from duequeue.store.sql import Dialect, Run
from duequeue.store.tick_records import DeliveryRecord, Target, View

if TYPE_CHECKING:
    from duequeue.store import records
    from duequeue.store.records import DeadLetter, ReminderView
else:
    # On first use: cron's tick with nothing due never builds these (tick_records.py).
    records = LazyModule("duequeue.store.records")


def targets(run: Run, d: Dialect, ids: Sequence[int]) -> dict[int, tuple[Target, ...]]:
    """Return the targets of these reminders, by reminder id, in the order they were added."""
    found: dict[int, list[Target]] = {}
    for rid, tid, channel, address, disabled, secret in run(
        d.sql(
            f"""SELECT reminder_id, id, channel, address, disabled_at, secret FROM targets
                WHERE {d.in_ids("reminder_id", "ids")} ORDER BY id"""
        ),
        {"ids": d.ids(ids)},
    ):
        disabled = None if disabled is None else int(disabled)
        found.setdefault(int(rid), []).append(Target(int(tid), channel, address, disabled, secret))
    return {rid: tuple(ts) for rid, ts in found.items()}


def known(run: Run, d: Dialect, ids: Sequence[int]) -> set[int]:
    """Return which of these ids name a reminder."""
    rows = run(
        d.sql(f"SELECT id FROM reminders WHERE {d.in_ids('id', 'ids')}"), {"ids": d.ids(ids)}
    )
    return {int(r[0]) for r in rows}


# The state condition and order of each view but the dead one.
_VIEWS = {
    "due": ("r.next_fire_at <= :now AND r.cancelled_at IS NULL", "r.next_fire_at, r.id"),
    "pending": ("r.next_fire_at IS NOT NULL AND r.cancelled_at IS NULL", "r.next_fire_at, r.id"),
    "all": ("TRUE", "r.id"),
}


def view(
    run: Run,
    d: Dialect,
    view: View,
    now: int,
    limit: int | None,
    subject_like: str | None,
    target_like: str | None,
) -> list[ReminderView]:
    """Return the rows of one of inspect's views; see Store.list_view."""
    # NULL patterns match everything.
    filters = f"""(CAST(:subject AS TEXT) IS NULL OR r.subject {d.ilike} :subject)
        AND (CAST(:target AS TEXT) IS NULL OR EXISTS (SELECT 1 FROM targets t
             WHERE t.reminder_id = r.id AND t.address {d.ilike} :target))"""
    args = {"now": now, "lim": d.limit(limit), "subject": subject_like, "target": target_like}
    if view == "dead":
        sql = f"""SELECT {shared.VIEW_COLUMNS}, d.fire_at, d.error_count, d.last_error, d.dead_at
            FROM dead_letters d JOIN reminders r ON r.id = d.reminder_id
            WHERE r.cancelled_at IS NULL AND d.retried_at IS NULL AND {filters}
            ORDER BY d.dead_at, d.id LIMIT :lim"""
    else:
        where, order = _VIEWS[view]
        sql = f"""SELECT {shared.VIEW_COLUMNS} FROM reminders r WHERE {where} AND {filters}
            ORDER BY {order} LIMIT :lim"""
    rows = run(d.sql(sql), args)
    found = targets(run, d, sorted({int(row[0]) for row in rows}))
    return [shared.view(row, found.get(int(row[0]), ())) for row in rows]


def get(run: Run, d: Dialect, reminder_id: int) -> ReminderView | None:
    """Return one reminder as inspect shows it, or None."""
    found = run(
        d.sql(f"SELECT {shared.VIEW_COLUMNS} FROM reminders r WHERE r.id = :id"),
        {"id": reminder_id},
    )
    if not found:
        return None
    return shared.view(found[0], targets(run, d, [reminder_id]).get(reminder_id, ()))


def deliveries(run: Run, d: Dialect, reminder_id: int) -> list[DeliveryRecord]:
    """Return a reminder's ledger, oldest attempt first."""
    rows = run(
        d.sql(
            """SELECT reminder_id, target_id, fire_at, outcome, error, attempt, at
               FROM deliveries WHERE reminder_id = :id ORDER BY id"""
        ),
        {"id": reminder_id},
    )
    return [DeliveryRecord(*row) for row in rows]


def dead_letters(run: Run, d: Dialect, reminder_id: int) -> list[DeadLetter]:
    """Return a reminder's dead letters, oldest fire first."""
    rows = run(
        d.sql(
            """SELECT reminder_id, fire_at, error_count, last_error, dead_at, retried_at
               FROM dead_letters WHERE reminder_id = :id ORDER BY fire_at"""
        ),
        {"id": reminder_id},
    )
    return [records.DeadLetter(*row) for row in rows]


def notify_addresses(run: Run, d: Dialect, limit: int) -> list[str]:
    """Return up to `limit` distinct notify target URLs (doctor), read off targets_notify."""
    rows = run(
        d.sql(
            """SELECT DISTINCT address FROM targets WHERE channel = 'notify'
               ORDER BY address LIMIT :limit"""
        ),
        {"limit": limit},
    )
    return [str(a) for (a,) in rows]


def target_secrets(run: Run, d: Dialect, limit: int) -> list[tuple[int, str]]:
    """Return up to `limit` (reminder id, secret) of the webhooks with a secret of their own
    whose reminder may still deliver (not done, not cancelled), for doctor."""
    rows = run(
        d.sql(
            """SELECT t.reminder_id, t.secret FROM targets t
               JOIN reminders r ON r.id = t.reminder_id
               WHERE t.secret IS NOT NULL AND r.cancelled_at IS NULL AND r.done_at IS NULL
               ORDER BY t.reminder_id, t.id LIMIT :limit"""
        ),
        {"limit": limit},
    )
    return [(int(rid), str(secret)) for rid, secret in rows]


def pending_channels(run: Run, d: Dialect) -> set[str]:
    """Return the channels pending reminders will deliver to (doctor: is SMTP needed?)."""
    rows = run(
        d.sql(
            """SELECT DISTINCT t.channel FROM targets t
               JOIN reminders r ON r.id = t.reminder_id
               WHERE r.next_fire_at IS NOT NULL AND r.cancelled_at IS NULL"""
        ),
        {},
    )
    return {str(c) for (c,) in rows}
