"""The public Python API: `duequeue.Queue`, for applications that schedule reminders without
shelling out.

It stands on the same service functions as the command line (service.py, ops.py), with the
same validation and the same errors: bad input raises BadInputError (the CLI's exit 2) and
writes nothing; an unknown id raises NotFoundError; a database problem raises StoreError. The
clock is read here, as the CLI reads it; everything below takes `now` as an argument.

    from duequeue import Queue

    with Queue("reminders.db") as q:
        rid = q.add(at="+15m", webhooks=["https://hooks.example.com/r"], subject="Standup")
        q.tick()
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal

from duequeue import service
from duequeue.errors import BadInputError

if TYPE_CHECKING:
    from duequeue.config import Settings
    from duequeue.engine.tick import TickSummary
    from duequeue.ops import History
    from duequeue.store.base import Change, PruneCounts, ReminderView, Stats

View = Literal["dead", "due", "pending", "all"]


class Queue:
    """A reminder queue on one database: an SQLite file (created if missing) or a
    postgresql:// URL.

    `db` None means DUEQUEUE_DB, else the default SQLite file, as for the CLI. `settings` are the
    settings of docs/reference.md by their lower-case names (`smtp_url`, `email_from`,
    `webhook_secret`, `tick_limit`, `max_retries`, `backoff`, ...); they win over DUEQUEUE_*
    variables and the config file (`config`, else DUEQUEUE_CONFIG, else the default path), as
    the CLI's flags do. A bad setting raises ConfigError.
    """

    def __init__(
        self,
        db: str | os.PathLike[str] | None = None,
        *,
        config: str | None = None,
        **settings: Any,
    ) -> None:
        from duequeue.config import load_settings
        from duequeue.store import open_store

        flags = {"db": None if db is None else os.fspath(db), **settings}
        self.settings: Settings = load_settings(flags, config_file=config)
        self._store = open_store(self.settings.db, self.settings.busy_timeout, create=True)

    # -- scheduling ------------------------------------------------------------------------

    def add(
        self,
        *,
        at: str | datetime | None = None,
        tz: str | None = None,
        rrule: str | None = None,
        cron: str | None = None,
        emails: Iterable[str] = (),
        webhooks: Iterable[str] = (),
        notify: Iterable[str] = (),
        webhook_secret: str | Iterable[str] | None = None,
        subject: str = "Reminder",
        body: str = "",
        data: Any = None,
        key: str | None = None,
        misfire_grace: str | timedelta | None = None,
    ) -> int:
        """Schedule a reminder as `duequeue add` does; return its id.

        `at`: an aware datetime, or any text `--at` takes (ISO 8601, `+15m`, `now`, a local time
        read in `tz`). `data`: any JSON value, sent in the webhook payload. `notify`: Apprise
        URLs (the `notify` extra). `webhook_secret`: one secret (or several space-separated,
        for rotation) for every webhook, or a list with one per webhook. With a `key` that
        exists already nothing is added and the existing reminder's id is returned.
        """
        if isinstance(at, datetime):
            if at.tzinfo is None:
                raise BadInputError("at: a datetime needs a time zone (tzinfo)")
            at = at.isoformat()
        if isinstance(misfire_grace, timedelta):
            misfire_grace = f"{int(misfire_grace.total_seconds())}s"
        data_text = None
        if data is not None:
            from duequeue import validate

            data_text = validate.data_value(data)
        req = service.AddRequest(
            at=at,
            tz=tz,
            rrule=rrule,
            cron=cron,
            emails=_strings("emails", emails),
            webhooks=_strings("webhooks", webhooks),
            notifies=_strings("notify", notify),
            webhook_secrets=(
                ()
                if webhook_secret is None
                else (webhook_secret,)
                if isinstance(webhook_secret, str)
                else _strings("webhook_secret", webhook_secret)
            ),
            subject=subject,
            body=body,
            data=data_text,
            key=key,
            misfire_grace=misfire_grace,
        )
        now = _now()
        reminder, _ = service.build_reminder(
            req, self.settings.tz, now, block_private=self.settings.webhook_block_private
        )
        rid, _ = service.add(self._store, reminder, now)
        return rid

    def tick(self, *, limit: int | None = None) -> TickSummary:
        """Deliver what is due now, as `duequeue tick` does; return its summary."""
        return service.run_tick(self._store, self.settings, _now(), _clock_ms, limit)

    # -- looking -----------------------------------------------------------------------------

    def inspect(
        self,
        view: View = "dead",
        *,
        limit: int | None = None,
        subject_like: str | None = None,
        target_like: str | None = None,
    ) -> list[ReminderView]:
        """List dead-lettered (default), due, pending or all reminders, as `inspect` does."""
        if view not in ("dead", "due", "pending", "all"):
            raise BadInputError(f"view: {view!r} is not one of dead, due, pending, all")
        return service.inspect(
            self._store,
            view,
            _now(),
            limit,
            subject_like=subject_like,
            target_like=target_like,
        )

    def history(self, reminder_id: int) -> History:
        """Return a reminder's delivery attempts and dead letters."""
        from duequeue import ops

        return ops.history(self._store, reminder_id)

    def stats(self) -> Stats:
        """Count reminders by state, and recent deliveries."""
        from duequeue import ops

        return ops.stats(self._store, _now())

    # -- changing ----------------------------------------------------------------------------

    def retry(self, *ids: int, all_dead: bool = False) -> list[Change]:
        """Re-arm the dead fires of the reminders `ids`, or of every one with `all_dead`."""
        from duequeue import ops

        return ops.retry(self._store, list(ids), all_dead, _now())

    def cancel(self, *ids: int) -> list[Change]:
        """Cancel reminders so they never fire again."""
        from duequeue import ops

        return ops.cancel(self._store, list(ids), _now())

    def prune(self, older_than: str | timedelta, *, dry_run: bool = False) -> PruneCounts:
        """Delete finished reminders and ledger rows older than `older_than` (`30d` or a
        timedelta); a dead fire stays until it is retried or its reminder cancelled."""
        from duequeue import ops

        if isinstance(older_than, str):
            from duequeue.timefmt import parse_duration

            older_than = parse_duration(older_than, "older_than")
        return ops.prune(self._store, older_than, _now(), dry_run)

    # -- lifetime ----------------------------------------------------------------------------

    def close(self) -> None:
        """Close the database connection."""
        self._store.close()

    def __enter__(self) -> Queue:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def _now() -> datetime:
    return datetime.now(UTC)


def _clock_ms() -> int:
    return time.time_ns() // 1_000_000


def _strings(name: str, values: Iterable[str]) -> tuple[str, ...]:
    if isinstance(values, str):
        raise BadInputError(f"{name}: give a list of addresses, not one string")
    return tuple(values)
