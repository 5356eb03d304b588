"""What the operator's commands do: import, history, cancel, retry, stats and prune."""

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from duequeue.errors import BadInputError, NotFoundError
from duequeue.store.base import (
    Change,
    DeadLetter,
    NewReminder,
    PendingRetry,
    PruneCounts,
    ReminderView,
    Stats,
    Store,
    Target,
)
from duequeue.timefmt import to_ms


@dataclass(frozen=True, slots=True)
class ImportResult:
    """What `import` did with a file."""

    lines: int  # reminders read (blank lines not counted)
    imported: int
    skipped: int  # reminders whose key already existed


def import_reminders(store: Store, reminders: Iterable[NewReminder], now: datetime) -> ImportResult:
    """Store validated reminders in one transaction; existing keys are skipped and counted."""
    imported, skipped = store.add_many(reminders, to_ms(now))
    return ImportResult(imported + skipped, imported, skipped)


@dataclass(frozen=True, slots=True)
class Attempt:
    """One ledger row of `history`, with its target spelled out."""

    at: int
    fire_at: int
    target: Target | None  # None only if the target row is gone
    outcome: str
    error: str | None
    attempt: int


@dataclass(frozen=True, slots=True)
class History:
    """A reminder, every delivery attempt of it, and its dead letters."""

    reminder: ReminderView
    attempts: list[Attempt]
    dead_letters: list[DeadLetter]
    retries: list[PendingRetry]  # failed targets of a partial success still retrying


def history(store: Store, reminder_id: int) -> History:
    """Return a reminder's delivery history; raise NotFoundError for an unknown id."""
    view = store.get(reminder_id)
    if view is None:
        raise NotFoundError(f"ID: no reminder with id {reminder_id}")
    targets = {t.id: t for t in view.targets}
    attempts = [
        Attempt(d.at, d.fire_at, targets.get(d.target_id), d.outcome, d.error, d.attempt)
        for d in store.deliveries(reminder_id)
    ]
    return History(
        view, attempts, store.dead_letters(reminder_id), store.pending_retries(reminder_id)
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
    """Apply a store change to reminders named by id; an unknown id is the ID argument's fault."""
    if not ids:
        raise BadInputError("ID: give at least one reminder id")
    try:
        return change(ids, to_ms(now))
    except NotFoundError as exc:
        raise NotFoundError(f"ID: {exc}") from exc


def retry(store: Store, ids: Sequence[int], all_dead: bool, now: datetime) -> list[Change]:
    """Re-arm the dead fires of the given reminders, or of every one with --all-dead."""
    if bool(ids) == all_dead:
        raise BadInputError("retry: give reminder ids or --all-dead, not both or neither")
    try:
        return store.retry_dead(None if all_dead else ids, to_ms(now))
    except NotFoundError as exc:
        raise NotFoundError(f"ID: {exc}") from exc


def stats(store: Store, now: datetime) -> Stats:
    """Count reminders by state and recent deliveries."""
    return store.stats(to_ms(now))


def prune(store: Store, older_than: timedelta, now: datetime, dry_run: bool) -> PruneCounts:
    """Delete finished reminders and ledger rows older than `older_than`."""
    return store.prune(to_ms(now - older_than), dry_run=dry_run)
