"""What the operator's writes do: cancel, retry, enable, pause, resume, prune and recompute,
between `duequeue.Queue` and the store."""

from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from duequeue.errors import BadInputError, ConfigError, NotFoundError
from duequeue.schedule import release
from duequeue.shared.lazy import LazyModule
from duequeue.shared.timefmt import to_ms
from duequeue.store.records import (
    Change,
    PruneCounts,
)
from duequeue.store.store import Store

if TYPE_CHECKING:
    from duequeue.engine import recompute as recompute_pass
else:
    # Loaded on first use: computing fires loads zoneinfo and the recurrence libraries, which
    # the other commands here never need.
    recompute_pass = LazyModule("duequeue.engine.recompute")


def cancel(store: Store, ids: Sequence[int], now: datetime) -> list[Change]:
    """Cancel reminders so they never fire again."""
    return _by_ids(store.cancel, ids, now)


def cancel_key(store: Store, key: str, now: datetime) -> list[Change]:
    """Cancel the live reminder holding `key`."""
    if not isinstance(key, str) or not key:
        raise BadInputError("expected a reminder's key (a non-empty string)", field="key")
    return store.cancel_key(key, to_ms(now))


def pause(store: Store, ids: Sequence[int], now: datetime) -> list[Change]:
    """Pause reminders: no tick delivers them until `resume`."""
    return _by_ids(store.pause, ids, now)


def resume(store: Store, ids: Sequence[int], now: datetime) -> list[Change]:
    """Resume paused reminders: their pending fire is due again."""
    return _by_ids(store.resume, ids, now)


def queue_paused(store: Store) -> int | None:
    """Return since when the whole queue is paused (ms), None when it is not."""
    return store.queue_paused()


def pause_queue(store: Store, now: datetime) -> tuple[int, bool]:
    """Pause the whole queue; return since when it is paused, and whether this call paused it."""
    before = store.pause_queue(to_ms(now))
    return (to_ms(now), True) if before is None else (before, False)


def resume_queue(store: Store) -> tuple[int | None, bool]:
    """Resume the whole queue; return since when it had been paused (None: it was not)."""
    before = store.resume_queue()
    return before, before is not None


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
