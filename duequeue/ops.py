"""What the operator's commands do: import, history, cancel, enable, retry, stats and prune,
between `duequeue.Queue` and the store."""

from collections.abc import Callable, Iterable, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, NamedTuple

from duequeue.errors import ConfigError, NotFoundError
from duequeue.lazy import LazyModule
from duequeue.schedule import release
from duequeue.store.records import (
    BrowseState,
    Change,
    Dashboard,
    DeadLetter,
    DeliveryRecord,
    FireMove,
    NewReminder,
    PendingRetry,
    PruneCounts,
    ReminderView,
    Stats,
)
from duequeue.store.store import Store
from duequeue.timefmt import to_ms

if TYPE_CHECKING:
    from duequeue.engine import recompute as recompute_pass
else:
    # Loaded on first use: computing fires loads zoneinfo and the recurrence libraries, which
    # history, stats and the other commands here never need.
    recompute_pass = LazyModule("duequeue.engine.recompute")


def import_reminders(
    store: Store, reminders: Iterable[NewReminder], now: datetime
) -> tuple[int, int]:
    """Store validated reminders in one transaction; return (imported, skipped): a reminder
    whose key exists already is skipped."""
    return store.add_many(reminders, to_ms(now))


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


def cancel(store: Store, ids: Sequence[int], now: datetime) -> list[Change]:
    """Cancel reminders so they never fire again."""
    return _by_ids(store.cancel, ids, now)


def enable(store: Store, ids: Sequence[int], now: datetime) -> list[Change]:
    """Switch back on the targets that were disabled after a 410 Gone."""
    return _by_ids(store.enable_targets, ids, now)


def _by_ids(
    change: Callable[[Sequence[int], int], list[Change]], ids: Sequence[int], now: datetime
) -> list[Change]:
    """Apply a store change to reminders named by id; an unknown id is the `ids` field's fault."""
    try:
        return change(ids, to_ms(now))
    except NotFoundError as exc:
        raise exc.with_field("ids") from exc


def retry(store: Store, ids: Sequence[int], all_dead: bool, now: datetime) -> list[Change]:
    """Re-arm the dead fires of the given reminders, or of every one with `all_dead`."""
    try:
        return store.retry_dead(None if all_dead else ids, to_ms(now))
    except NotFoundError as exc:
        raise exc.with_field("ids") from exc


def stats(store: Store, now: datetime) -> Stats:
    """Count reminders by state and recent deliveries."""
    return store.stats(to_ms(now))


# The ledger rows whose lateness the overview shows: those of the last ticks.
RECENT = timedelta(minutes=15)


def dashboard(store: Store, now: datetime) -> Dashboard:
    """Return stats and the overview's charts and lateness (serve)."""
    return store.dashboard(to_ms(now), int(RECENT.total_seconds() * 1000))


def browse(
    store: Store,
    state: BrowseState,
    search: str | None,
    before: int | None,
    limit: int,
    now: datetime,
) -> tuple[list[ReminderView], int | None]:
    """Return a page of reminders, newest first, and the next page's cursor (serve)."""
    return store.browse(state, search, before, limit, to_ms(now))


def recompute(store: Store, now: datetime, dry_run: bool) -> recompute_pass.Pass:
    """Compute again the pending fires an older tz release computed (as the next tick would),
    or on a dry run list what would move; raise ConfigError when the release in use is unknown.
    """
    mine = release.in_use()
    if not mine:
        raise ConfigError(
            "the tz data release in use is unknown: install the tzdata package "
            "(`pip install -U tzdata`)"
        )
    if dry_run:
        return recompute_pass.dry_run(store, mine)
    return recompute_pass.catch_up(store, to_ms(now), mine)


def prune(store: Store, older_than: timedelta, now: datetime, dry_run: bool) -> PruneCounts:
    """Delete finished reminders and ledger rows older than `older_than`."""
    return store.prune(to_ms(now - older_than), dry_run=dry_run)
