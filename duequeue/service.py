"""What add, tick, inspect, next and migrate do with the store and the engine, between
`duequeue.Queue` and them: checked input in (compose.py checks add's), the store's records out
(convert.py turns them into the public types)."""

import contextlib
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING

from duequeue.config import Settings
from duequeue.engine.tick import HelperOptions, TickOptions, TickSummary, tick
from duequeue.errors import BadInputError, NotFoundError, StoreBusyError
from duequeue.lazy import LazyModule
from duequeue.store import is_postgres_url, postgres_module
from duequeue.store.records import NewReminder, ReminderView, View
from duequeue.store.store import Store
from duequeue.timefmt import to_ms

if TYPE_CHECKING:
    from duequeue import compose, validate
    from duequeue.store import copy as store_copy
    from duequeue.store.copy import Copied
else:
    # Loaded on first use: next's rules (dateutil, cronsim), inspect's checks and migrate's
    # copy (psycopg), none of which cron's tick needs.
    compose = LazyModule("duequeue.compose")
    validate = LazyModule("duequeue.validate")
    store_copy = LazyModule("duequeue.store.copy")


def next_fires(store: Store, reminder_id: int, count: int) -> tuple[ReminderView, list[datetime]]:
    """Return a stored reminder and its next `count` fires; none once it is finished."""
    view = store.get(reminder_id)
    if view is None:
        raise NotFoundError(f"no reminder with id {reminder_id}", field="id")
    if view.fire_at is None or view.state != "pending" or view.dtstart is None:
        return view, []
    return view, compose.fires(
        view.rule_kind, view.rule, view.tz, view.dtstart, view.fire_at, count
    )


def add(store: Store, reminder: NewReminder, now: datetime) -> tuple[int, bool]:
    """Store a reminder build_reminder validated; return (id, created). An existing key is not
    an error: nothing is written and the existing id comes back."""
    return store.add(reminder, to_ms(now))


def run_tick(
    store: Store, settings: Settings, now: datetime, clock: Callable[[], int], limit: int | None
) -> TickSummary:
    """Run one tick with the effective settings."""
    options = TickOptions(
        limit=limit or settings.tick_limit,
        lease_ms=settings.lease_ms,
        budget_s=settings.tick_budget,
        policy=settings.retry_policy,
        webhook_concurrency=settings.concurrency,
        webhook_per_host=settings.webhook_per_host,
        channel_timeout=settings.channel_timeout,
        settings=settings.by_name(),
        busy_timeout_s=settings.busy_timeout,
        # The helper reopens the store the way the CLI opened it.
        commit_helper=HelperOptions(
            settings.db, settings.busy_timeout, settings.commit_helper_rows
        ),
    )
    summary = tick(store, to_ms(now), options, clock)
    # One small write, so `stats --prometheus` can tell when ticks stopped. The tick's work is
    # done and written back; a database too busy for the mark lets the gauge lag one tick
    # rather than fail a tick that delivered.
    with contextlib.suppress(StoreBusyError):
        store.mark_tick(to_ms(now))
    return summary


def inspect(
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


def migrate(db: str, to: str) -> "Copied":
    """Copy the SQLite database `db` into the empty PostgreSQL database `to`."""
    if is_postgres_url(db):
        raise BadInputError(
            "migrate copies from an SQLite file, not a postgresql:// URL", field="db"
        )
    if not is_postgres_url(to):
        raise BadInputError(
            "give the postgresql:// URL of an empty database to copy into", field="to"
        )
    postgres_module()  # a clear error when psycopg is missing
    return store_copy.sqlite_to_postgres(db, to)
