"""What the reading operations return: inspect, next, history, stats, and serve's overview and
list, between `duequeue.Queue` and the store (api/from_records.py turns them into the public
types)."""

from datetime import datetime, timedelta
from typing import TYPE_CHECKING, NamedTuple

from duequeue.errors import NotFoundError
from duequeue.shared.lazy import LazyModule
from duequeue.shared.timefmt import to_ms
from duequeue.store.records import (
    BrowseState,
    Dashboard,
    DeadLetter,
    DeliveryRecord,
    FireMove,
    PendingRetry,
    ReminderView,
    Stats,
    View,
)
from duequeue.store.store import Store

if TYPE_CHECKING:
    from duequeue.operations import add
    from duequeue.rules import validate
else:
    # Loaded on first use: next's rules (dateutil, cronsim) and inspect's checks.
    add = LazyModule("duequeue.operations.add")
    validate = LazyModule("duequeue.rules.validate")


def reminders(
    store: Store,
    view: View,
    now: datetime,
    limit: int | None,
    *,
    subject_like: str | None = None,
    target_like: str | None = None,
) -> list[ReminderView]:
    """List reminders (or dead fires) for the chosen view, filtered by LIKE patterns."""
    validate.utf8([("subject_like", subject_like), ("target_like", target_like)])
    return store.list_view(
        view, to_ms(now), limit, subject_like=subject_like, target_like=target_like
    )


def next_fires(store: Store, reminder_id: int, count: int) -> tuple[ReminderView, list[datetime]]:
    """Return a stored reminder and its next `count` fires; none once it is finished."""
    view = store.get(reminder_id)
    if view is None:
        raise NotFoundError(f"no reminder with id {reminder_id}", field="id")
    # A paused reminder's fires are those `resume` would bring back, from its pending fire on.
    if view.fire_at is None or view.state not in ("pending", "paused") or view.dtstart is None:
        return view, []
    return view, add.fires(view.rule_kind, view.rule, view.tz, view.dtstart, view.fire_at, count)


class Ledger(NamedTuple):
    """A reminder with everything the ledger holds of it, as the store keeps them."""

    reminder: ReminderView
    deliveries: list[DeliveryRecord]
    dead_letters: list[DeadLetter]
    retries: list[PendingRetry]  # failed targets of a partial success still retrying
    changes: list[tuple[int, str]]  # (at, what) of each reschedule and edit
    moves: list[FireMove]  # pending fires moved by zone rules changes


def history(store: Store, reminder_id: int) -> Ledger:
    """Return a reminder's delivery history; raise NotFoundError for an unknown id."""
    view = store.get(reminder_id)
    if view is None:
        raise NotFoundError(f"no reminder with id {reminder_id}", field="id")
    return Ledger(
        view,
        store.deliveries(reminder_id),
        store.dead_letters(reminder_id),
        store.pending_retries(reminder_id),
        store.changes(reminder_id),
        store.fire_moves(reminder_id),
    )


def stats(store: Store, now: datetime) -> Stats:
    """Count reminders by state and recent deliveries."""
    return store.stats(to_ms(now))


# The ledger rows whose lateness the overview shows: those of the last ticks.
RECENT = timedelta(minutes=15)


def overview(store: Store, now: datetime) -> Dashboard:
    """Return stats and the overview's charts and lateness (serve)."""
    return store.dashboard(to_ms(now), int(RECENT.total_seconds() * 1000))


def browse(
    store: Store,
    state: BrowseState,
    search: str | None,
    before: int | None,
    limit: int,
    now: datetime,
) -> tuple[list[ReminderView], int | None, bool]:
    """Return a page of reminders, newest first, the next page's cursor, and whether a search
    stopped at its window before the page was full (serve)."""
    return store.browse(state, search, before, limit, to_ms(now))
