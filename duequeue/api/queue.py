"""The public Python API: `duequeue.Queue`, one method per operation, for every front end.

The CLI is a renderer over it (each command one Queue call), and so is `duequeue serve`. Bad
input raises BadInputError (the CLI's exit 2) and writes nothing; an unknown id raises
NotFoundError; a database problem raises StoreError. Errors name the argument at fault as
spelled here (`at`, `webhooks[1]`, `id`) and carry it in `.field`. Results are the frozen types
of results.py, with aware UTC datetimes. The clock is read here, as a front end reads it;
everything below takes `now` as an argument.

    from duequeue import Queue

    with Queue("reminders.db") as q:
        added = q.add(at="+15m", webhooks=["https://hooks.example.com/r"], subject="Standup")
        q.tick()
"""

from __future__ import annotations

import contextlib
import os
import time
import warnings
from collections.abc import Callable, Iterable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, get_args

from duequeue.config.settings import Settings, load_settings, load_settings_traced
from duequeue.errors import BadInputError, DatabaseLostError, DuequeueError, StoreBusyError
from duequeue.operations import tick
from duequeue.schedule import release as tz_release
from duequeue.shared.lazy import LazyModule
from duequeue.shared.timefmt import from_ms, parse_duration, to_ms
from duequeue.store import open_store, safe_url
from duequeue.store.store import Store
from duequeue.store.tick_records import BrowseState

if TYPE_CHECKING:
    from duequeue.api import from_records
    from duequeue.api import prometheus as _prometheus
    from duequeue.api.results import (
        Added,
        Change,
        Changed,
        ConfigReport,
        Contracted,
        DoctorReport,
        Fires,
        History,
        ImportResult,
        Initialized,
        Migrated,
        Overview,
        Page,
        Preview,
        PruneCounts,
        QueuePause,
        Recomputed,
        Reminder,
        Stats,
        View,
    )
    from duequeue.engine.summary import TickSummary
    from duequeue.operations import (
        add,
        cancel_retry_prune,
        doctor,
        import_lines,
        inspect,
        migrate,
        reschedule_edit,
        worker,
    )
    from duequeue.schedule import zones
else:
    # Loaded on first use: what the other operations need, which cron's plain tick (by far the
    # most frequent run) never does: dateutil, json, pickle, smtplib, signal, zoneinfo among them.
    # The public types are made on first use too: a tick returns the engine's own summary.
    from_records = LazyModule("duequeue.api.from_records")
    add = LazyModule("duequeue.operations.add")
    cancel_retry_prune = LazyModule("duequeue.operations.cancel_retry_prune")
    doctor = LazyModule("duequeue.operations.doctor")
    import_lines = LazyModule("duequeue.operations.import_lines")
    inspect = LazyModule("duequeue.operations.inspect")
    migrate = LazyModule("duequeue.operations.migrate")
    reschedule_edit = LazyModule("duequeue.operations.reschedule_edit")
    worker = LazyModule("duequeue.operations.worker")
    _prometheus = LazyModule("duequeue.api.prometheus")  # stats(prometheus=) names a file
    zones = LazyModule("duequeue.schedule.zones")

_VIEWS = ("dead", "due", "pending", "all")
_BROWSE: tuple[BrowseState, ...] = get_args(BrowseState)


class Queue:
    """A reminder queue on one database: an SQLite file or a postgresql:// URL.

    `db` None means DUEQUEUE_DB, else the default SQLite file, as for the CLI. `settings` are
    the settings of docs/reference.md by their lower-case names (`smtp_url`, `email_from`,
    `webhook_secret`, `tick_limit`, `max_retries`, `backoff`, ...); they win over DUEQUEUE_*
    variables and the config file (`config`, else DUEQUEUE_CONFIG, else the default path). A
    bad setting raises ConfigError here. The database is opened on first use; with `create`
    False a missing SQLite file is a StoreError instead of a new empty database. A Queue holds
    one connection: use it from one thread at a time (a server: one Queue per thread).
    """

    def __init__(
        self,
        db: str | os.PathLike[str] | None = None,
        *,
        config: str | os.PathLike[str] | None = None,
        create: bool = True,
        **settings: Any,
    ) -> None:
        flags = {"db": None if db is None else os.fspath(db), **settings}
        config_file = None if config is None else os.fspath(config)
        self.settings: Settings
        self.settings, self._origins = load_settings_traced(flags, config_file=config_file)
        self._create = create
        self._store: Store | None = None
        self._said_created = False

    @property
    def location(self) -> str:
        """Return the database fit to print: a path, or a URL with its password masked."""
        return safe_url(self.settings.db)

    # -- scheduling ------------------------------------------------------------------------

    def add(
        self,
        *,
        at: str | datetime | timedelta | None = None,
        tz: str | None = None,
        rrule: str | None = None,
        cron: str | None = None,
        emails: Iterable[str] = (),
        webhooks: Iterable[str] = (),
        notify: Iterable[str] = (),
        targets: Iterable[tuple[str, str]] = (),
        webhook_secret: str | Iterable[str] | None = None,
        subject: str = "Reminder",
        body: str = "",
        data: Any = None,
        data_json: str | None = None,
        key: str | None = None,
        misfire_grace: str | timedelta | None = None,
    ) -> Added:
        """Schedule a reminder as `duequeue add` does.

        `at`: an aware datetime (its zone, if a ZoneInfo, is the default `tz`), a timedelta from
        now, or any text `--at` takes (ISO 8601, `+15m`, `now`, a local time read in `tz`).
        Optional with `cron` (default now). Targets: `emails`, `webhooks`, `notify` (Apprise
        URLs, the `notify` extra), and `targets`, (channel, address) pairs of any channel.
        `webhook_secret`: one secret (or several space-separated, for rotation) for every
        webhook, or a list with one per webhook in order. `data`: any JSON value, or
        `data_json` the same as JSON text.

        `key`: unique among live reminders (pending or dead); a done or cancelled reminder
        frees its key. Adding a live key again with the same content (subject, body, data,
        time, rule, zone, targets) adds nothing: the result has the existing id, `created`
        False and a note saying so. With other content it raises KeyConflictError (its
        `.existing` is the id holding the key) and writes nothing.
        """
        req = add.request(
            at, tz, rrule, cron, emails, webhooks, notify, targets, webhook_secret, subject,
            body, data, data_json, key, misfire_grace,
        )  # fmt: skip
        now = _now()
        reminder = add.build_reminder(req, self.settings.tz, now, settings=self.settings.by_name())
        store = self._open()
        rid, created = add.write(store, reminder, now)
        if not created:
            return from_records.added(rid, False, [add.kept_note(store, rid, reminder, req.at)])
        notes = [
            *self._created_notes(store),
            *add.add_notes(reminder, self.settings, now, req.at),
        ]
        return from_records.added(rid, True, notes)

    def preview(
        self,
        *,
        at: str | datetime | timedelta | None = None,
        tz: str | None = None,
        rrule: str | None = None,
        cron: str | None = None,
        emails: Iterable[str] = (),
        webhooks: Iterable[str] = (),
        notify: Iterable[str] = (),
        targets: Iterable[tuple[str, str]] = (),
        webhook_secret: str | Iterable[str] | None = None,
        subject: str = "Reminder",
        body: str = "",
        data: Any = None,
        data_json: str | None = None,
        key: str | None = None,
        misfire_grace: str | timedelta | None = None,
        count: int = 5,
    ) -> Preview:
        """Check a reminder as `add` would and return its first `count` fires; write nothing
        (`duequeue add --dry-run`). The arguments are add's."""
        _positive(count, "count")
        req = add.request(
            at, tz, rrule, cron, emails, webhooks, notify, targets, webhook_secret, subject,
            body, data, data_json, key, misfire_grace,
        )  # fmt: skip
        now = _now()
        r = add.build_reminder(req, self.settings.tz, now, settings=self.settings.by_name())
        assert r.fire_at is not None  # a new reminder always has its first fire
        local = add.fires(r.rule_kind, r.rule, r.tz, r.dtstart, r.fire_at, count)
        return from_records.preview(r.tz, local, add.add_notes(r, self.settings, now, req.at))

    def import_lines(
        self,
        lines: Iterable[bytes | str],
        *,
        progress: Callable[[str, int], None] | None = None,
    ) -> ImportResult:
        """Add reminders from JSON Lines (one object a line, with add's arguments as fields),
        all or nothing, as `duequeue import` does: every line is checked before the database is
        touched, then all go in one transaction. A line whose key a live reminder holds is
        skipped when it has that reminder's content and is a conflict otherwise, as for `add`:
        KeyConflictError, whose `.conflicts` name every such line, and nothing is written.

        `progress` is called with ("checking", size of a line) for each line read, then once
        with ("writing", 0). A bad line raises BadInputError with `.line` set.
        """
        now = _now()
        counted = None if progress is None else _checking(progress)
        with import_lines.gc_paused():
            parsed = import_lines.parse_lines(
                lines,
                self.settings.tz,
                now,
                counted,
                settings=self.settings.by_name(),
            )
            with parsed.spool as spool:
                if progress is not None:
                    progress("writing", 0)
                # The spool is read back a chunk at a time, inside the one transaction.
                store = self._open()
                imported, skipped = import_lines.write(store, spool, now, parsed.blank)
        return from_records.imported(
            imported, skipped, [*self._created_notes(store), *parsed.notes]
        )

    def init(self) -> Initialized:
        """Create the database if it does not exist (an SQLite file and its directories, owner
        only; the schema in a PostgreSQL database), or open, check and upgrade it if it does,
        as `duequeue init` does. `tick` and `worker` never create one."""
        store = self._open_new(create=True)
        try:
            return from_records.initialized(self.location, store.created)
        finally:
            store.close()

    # -- delivering --------------------------------------------------------------------------

    def tick(
        self, *, limit: int | None = None, report: Callable[[TickSummary], None] | None = None
    ) -> TickSummary:
        """Deliver what is due now, as `duequeue tick` does; return its summary.

        `limit`: the most rows one claim takes (default the `tick_limit` setting). A tick that
        lost its database mid-tick raises `duequeue.errors.DatabaseLostError` (a StoreError)
        whose `summary` counts the sends it could not record (`unrecorded`).

        Called from the main thread, a tick that claimed rows holds SIGTERM and SIGINT until
        its outcomes are written back (a stop ends it early, gracefully: `stopped_by`);
        `report` is called with the summary (that of a DatabaseLostError too) while they are
        still held, so a front end prints it before a stop can end the process.
        """
        if limit is not None:
            _positive(limit, "limit")
        store = self._open()
        now, clock, release = _queue_clock(store, self.settings)
        with contextlib.ExitStack() as hold:
            try:
                summary = tick.run(store, self.settings, now, clock, limit, hold)
            except DatabaseLostError as exc:
                if report is not None:
                    report(exc.summary)
                raise
            _note_release(store, release)
            if report is not None:
                report(summary)
        return summary

    def worker(
        self,
        every: str | timedelta = "10s",
        *,
        limit: int | None = None,
        on_start: Callable[[], None] | None = None,
        on_tick: Callable[[TickSummary], None] | None = None,
        on_error: Callable[[DuequeueError], None] | None = None,
        on_tz_data: Callable[[str | None, str], None] | None = None,
    ) -> None:
        """Tick every `every` until SIGTERM or SIGINT, as `duequeue worker` does; return then.

        A database that cannot be opened raises StoreError at once; then `on_start` is called,
        and each tick (on a fresh connection) is passed to `on_tick`. A tick that fails (the
        database locked for long, say) is passed to `on_error` and the loop goes on. Call it
        from the main thread: it handles the signals. New tz data on disk is followed before
        the next tick, without a restart (docs/time.md); `on_tz_data` is then told the release
        read before and the one read now ('' when unknown).
        """
        interval = _duration(every, "every")
        if limit is not None:
            _positive(limit, "limit")
        # Opened first: a database that cannot be opened fails here, before the loop starts.
        first = self._open_new()
        listener = first.listener()  # PostgreSQL: woken by adds between polls
        first.close()
        if on_start is not None:
            on_start()

        def one_tick() -> str | None:
            # New tz data (a tzdata upgrade, an OS update) is followed without a restart.
            before = tz_release.in_use()
            found = worker.follow_tz_data()
            if found is not None and on_tz_data is not None:
                on_tz_data(before, found)
            store = self._open_new()
            try:
                now, clock, release = _queue_clock(store, self.settings)
                summary = tick.run(store, self.settings, now, clock, limit)
                _note_release(store, release)
            finally:
                store.close()
            if on_tick is not None:
                on_tick(summary)
            return summary.stopped_by

        worker.Worker(
            interval.total_seconds(),
            one_tick,
            on_error or _ignore,
            listener=listener,
            wall_ms=_clock_ms,
        ).run()

    # -- looking -----------------------------------------------------------------------------

    def inspect(
        self,
        state: View | None = None,
        *,
        limit: int | None = None,
        subject_like: str | None = None,
        target_like: str | None = None,
        view: View | None = None,
    ) -> list[Reminder]:
        """List dead-lettered fires (`state` "dead", the default), due, pending or all
        reminders, as `inspect` does. `subject_like` and `target_like` are SQL LIKE patterns
        (`%`, `_`). `view` is the old name of `state` (deprecated; browse() names it `state`)."""
        if view is not None:
            warnings.warn(
                "Queue.inspect(view=...) is deprecated: the filter is named state=, as in "
                "Queue.browse()",
                DeprecationWarning,
                stacklevel=2,
            )
            if state is not None and state != view:
                raise BadInputError("give state, or view (its old name), not both", field="view")
            state = view
        if state is None:
            state = "dead"
        if state not in _VIEWS:
            raise BadInputError(f"{state!r} is not one of {', '.join(_VIEWS)}", field="state")
        if limit is not None:
            _positive(limit, "limit")
        found = inspect.reminders(
            self._open(),
            state,
            _now(),
            limit,
            subject_like=subject_like,
            target_like=target_like,
        )
        return [from_records.reminder(v) for v in found]

    def next_fires(self, id: int, count: int = 5) -> Fires:
        """Return a reminder's next `count` fires, the pending one first (`duequeue next`)."""
        _id(id, "id")
        _positive(count, "count")
        view, local = inspect.next_fires(self._open(), id, count)
        return from_records.next_fires(view, local)

    def history(self, id: int) -> History:
        """Return a reminder's delivery attempts, dead letters and per-target retries."""
        _id(id, "id")
        return from_records.history(inspect.history(self._open(), id))

    def stats(
        self, *, prometheus: str | os.PathLike[str] | None = None, cap: int | None = None
    ) -> Stats:
        """Count reminders by state, what is due and recent deliveries; with `prometheus`, also
        write them to that file in the node_exporter textfile format, atomically. With `cap`,
        each count stops after `cap` rows, so that the reading costs the same at 10^6 rows as
        at 10^4: a count that reached it is `cap`, named in the result's `lower_bounds`."""
        if cap is not None:
            _positive(cap, "cap")
        now = _now()
        found = from_records.stats(inspect.stats(self._open(), now, cap), now)
        if prometheus is not None:
            _prometheus.write_atomically(Path(prometheus), _prometheus.text(found))
        return found

    def overview(self, *, cap: int | None = None) -> Overview:
        """Return what serve's dashboard shows first: `stats`, the latest first attempt of the
        last 15 minutes' deliveries, deliveries per minute over the last 24 h (sent / failed)
        and fires due per hour over the next 24 h. `cap` bounds the counts as in `stats`."""
        if cap is not None:
            _positive(cap, "cap")
        now = _now()
        return from_records.overview(inspect.overview(self._open(), now, cap), now)

    def browse(
        self,
        state: BrowseState = "all",
        *,
        search: str | None = None,
        before: int | None = None,
        limit: int = 50,
    ) -> Page:
        """Return a page of reminders in `state` (`all`, `pending`, `due`, `retrying`, `dead`:
        with a dead fire awaiting retry, `done`, `cancelled`), newest first, with ids below
        `before` (the previous page's `next_before`). `search` matches part of what the list
        shows: the subject, key or a target's address as shown (a notify URL's tokens masked;
        never a secret), case-insensitively; `%` and `_` are plain characters. A search reads
        at most 20,000 reminders a page: a page it ends early is `partial`, with a
        `next_before` that goes on below what it read."""
        if state not in _BROWSE:
            raise BadInputError(f"{state!r} is not one of {', '.join(_BROWSE)}", field="state")
        if before is not None:
            _id(before, "before")
        _positive(limit, "limit")
        if limit > 1000:
            raise BadInputError(f"at most 1000, not {limit}", field="limit")
        if search is not None and len(search) > 255:
            raise BadInputError("at most 255 characters", field="search")
        found, cursor, partial = inspect.browse(
            self._open(), state, search or None, before, limit, _now()
        )
        return from_records.page(found, cursor, partial)

    # -- changing ----------------------------------------------------------------------------

    def reschedule(
        self,
        id: int,
        *,
        at: str | datetime | timedelta | None = None,
        tz: str | None = None,
        rrule: str | None = None,
        cron: str | None = None,
    ) -> Changed:
        """Move a pending reminder's next fire, or give it a new rule or zone, as `duequeue
        reschedule` does; what is not given is kept. `at` is the new time (a rule's new start),
        as for `add`; a rule or zone changed without `at` fires next at its first fire from now.

        Refused with ChangeRefusedError, nothing written, while a tick is delivering the
        reminder (try again), or when it is done, cancelled or dead (`retry` re-arms that).
        Recorded in `history`.
        """
        _id(id, "id")
        view, notes = reschedule_edit.reschedule(self._open(), id, at, tz, rrule, cron, _now())
        return from_records.changed(view, notes)

    def edit(
        self,
        id: int,
        *,
        subject: str | None = None,
        body: str | None = None,
        data: Any = None,
        data_json: str | None = None,
        emails: Iterable[str] = (),
        webhooks: Iterable[str] = (),
        notify: Iterable[str] = (),
        targets: Iterable[tuple[str, str]] = (),
        webhook_secret: str | Iterable[str] | None = None,
    ) -> Changed:
        """Change a reminder's subject, body, data or targets, as `duequeue edit` does; what
        is not given is kept. Targets given (`emails`, `webhooks`, `notify`, `targets`, as for
        `add`) replace the whole set: a target kept keeps its ledger and retries, a removed
        one loses its pending retries, a new one starts fresh.

        Refused with ChangeRefusedError, nothing written, while a tick is delivering the
        reminder (try again), or when it is done or cancelled. Recorded in `history`.
        """
        _id(id, "id")
        new = add.new_targets(
            emails, webhooks, notify, targets, webhook_secret, self.settings.by_name()
        )
        view = reschedule_edit.edit(
            self._open(),
            id,
            _now(),
            subject=subject,
            body=body,
            data=data,
            data_json=data_json,
            targets=new,
        )
        return from_records.changed(view, ())

    def retry(self, *ids: int, all_dead: bool = False) -> list[Change]:
        """Re-arm the dead fires of the reminders `ids`, or of every one with `all_dead`."""
        if bool(ids) == all_dead:
            raise BadInputError(
                "give reminder ids or ask for all dead ones, not both or neither",
                field=("ids", "all_dead"),
            )
        if ids:
            _some(ids)
        return from_records.changes(cancel_retry_prune.retry(self._open(), ids, all_dead, _now()))

    def cancel(self, *ids: int, key: str | None = None) -> list[Change]:
        """Cancel reminders so they never fire again (`inspect("all")` still lists them):
        those of `ids`, or with `key` the live reminder (pending, paused or dead) holding that
        key (NotFoundError with field `key` when none does)."""
        if key is not None:
            if ids:
                raise BadInputError("give reminder ids or a key, not both", field=("ids", "key"))
            return from_records.changes(cancel_retry_prune.cancel_key(self._open(), key, _now()))
        _some(ids)
        return from_records.changes(cancel_retry_prune.cancel(self._open(), ids, _now()))

    def pause(self, *ids: int) -> list[Change]:
        """Pause reminders (`duequeue pause ID`): no tick delivers their pending fire, nor
        their targets' own retries, until `resume`. Skipped with a reason: a reminder done,
        dead, cancelled or already paused, or one a tick is delivering right now (try again).
        Recorded in `history`."""
        _some(ids)
        return from_records.changes(cancel_retry_prune.pause(self._open(), ids, _now()))

    def resume(self, *ids: int) -> list[Change]:
        """Resume paused reminders (`duequeue resume ID`): the pending fire is due again, at
        the next tick if its time passed while paused (or skipped past its misfire grace, as
        after missed ticks). Each change's `fire_at` is that fire. Recorded in `history`."""
        _some(ids)
        return from_records.changes(cancel_retry_prune.resume(self._open(), ids, _now()))

    def paused_since(self) -> datetime | None:
        """Return since when the whole queue is paused, None when it is not (`inspect` and
        serve's pages say so)."""
        return from_records.when(cancel_retry_prune.queue_paused(self._open()))

    def pause_queue(self) -> QueuePause:
        """Pause the whole queue (`duequeue pause`): every tick claims and delivers nothing,
        and says so, until `resume_queue`. Reminders can still be added and changed."""
        since, changed = cancel_retry_prune.pause_queue(self._open(), _now())
        return from_records.queue_pause(True, since, changed)

    def resume_queue(self) -> QueuePause:
        """Resume the whole queue (`duequeue resume`): the next tick delivers what is due,
        a fire missed meanwhile once (as after missed ticks)."""
        since, changed = cancel_retry_prune.resume_queue(self._open())
        return from_records.queue_pause(False, since, changed)

    def enable(self, *ids: int) -> list[Change]:
        """Switch back on the targets disabled after their endpoint answered 410 Gone."""
        _some(ids)
        return from_records.changes(cancel_retry_prune.enable(self._open(), ids, _now()))

    def prune(self, older_than: str | timedelta, *, dry_run: bool = False) -> PruneCounts:
        """Delete finished reminders and ledger rows older than `older_than` (`30d` or a
        timedelta); a dead fire stays until it is retried or its reminder cancelled."""
        age = _duration(older_than, "older_than")
        now = _now()
        counts = cancel_retry_prune.prune(self._open(), age, now, dry_run)
        return from_records.prune_counts(counts, now - age, dry_run)

    def recompute(self, *, dry_run: bool = False) -> Recomputed:
        """Compute again, from what the user meant, every pending fire an older tz data release
        computed, as the next tick would (`duequeue recompute`); with `dry_run`, list what would
        move and write nothing. Each moved fire is kept in `history`."""
        return from_records.recomputed(
            cancel_retry_prune.recompute(self._open(), _now(), dry_run), dry_run
        )

    def migrate(self, to: str) -> Migrated:
        """Copy this queue's database into the empty database `to` (any of SQLite, PostgreSQL
        and MySQL; a missing SQLite file is created), ids and all, in one transaction
        (`duequeue migrate`)."""
        copied = migrate.copy(self.settings.db, to)
        return from_records.migrated(safe_url(self.settings.db), safe_url(to), copied)

    def contract(self) -> Contracted:
        """Apply the schema's pending contract steps (`duequeue migrate --contract`): the last
        step of a rolling upgrade, once every host runs the new version; older versions then
        refuse the database. Refused with ChangeRefusedError, nothing written, while a host that
        ticked in the last day ran an older duequeue (docs/upgrading.md)."""
        before, after, steps = migrate.contract(self._open(), to_ms(_now()))
        return from_records.contracted(self.location, before, after, steps)

    # -- the setup ---------------------------------------------------------------------------

    def doctor(self) -> DoctorReport:
        """Check the database, SMTP, the webhook secret and the zone data, as `duequeue doctor`
        does; sends nothing and creates no database."""
        settings = self.settings
        return _doctor(lambda: settings)

    def config(self) -> ConfigReport:
        """Return the effective settings, secrets masked, and where each came from."""
        tz_data = zones.in_use().describe()
        return from_records.config_report(self.settings, self._origins, tz_data)

    # -- lifetime ----------------------------------------------------------------------------

    def close(self) -> None:
        """Close the database connection (a later call opens it again)."""
        store, self._store = self._store, None
        if store is not None:
            store.close()

    def __enter__(self) -> Queue:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _open(self) -> Store:
        if self._store is None:
            self._store = self._open_new()
        return self._store

    def _open_new(self, *, create: bool | None = None) -> Store:
        s = self.settings
        return open_store(s.db, s.busy_timeout, create=self._create if create is None else create)

    def _created_notes(self, store: Store) -> list[str]:
        """Say so every time a call other than init makes the database: a mistyped --db or
        DUEQUEUE_DB would otherwise leave reminders in a new queue no tick ever reads."""
        if not store.created or self._said_created:
            return []
        self._said_created = True  # once: a later call of this Queue adds to a database it made
        source = self._origins.sources.get("db")
        if source == "default":
            return [
                f"note: created a new database {self.location} (the default; --db names another)"
            ]
        kind = "URL" if "://" in self.settings.db else "path"
        where = {"argument": f"the {kind} given", "config file": f"the {kind} in the config file"}
        made = (
            f"created duequeue's tables in {self.location}"
            if kind == "URL"
            else f"created a new database {self.location}"
        )
        return [
            f"note: {made} ({where.get(source or '', f'the {kind} in {source}')}); if that is "
            "not the database your ticks run on, nothing added here is sent"
        ]


def check_setup(
    db: str | os.PathLike[str] | None = None,
    *,
    config: str | os.PathLike[str] | None = None,
    **settings: Any,
) -> DoctorReport:
    """Check the setup as `duequeue doctor` does, settings included: where `Queue(...)` raises
    ConfigError, this reports the bad setting as a finding, with the fix, and goes on to the
    checks that do not need it."""
    flags = {"db": None if db is None else os.fspath(db), **settings}
    config_file = None if config is None else os.fspath(config)
    return _doctor(lambda: load_settings(flags, config_file=config_file))


def _doctor(load: Callable[[], Settings]) -> DoctorReport:
    return from_records.doctor_report(
        doctor.run(load, lambda db: open_store(db, create=False), _clock_ms)
    )


def _some(ids: tuple[int, ...]) -> None:
    if not ids:
        raise BadInputError("give at least one reminder id", field="ids")
    for i, rid in enumerate(ids):
        _id(rid, f"ids[{i}]")


def _id(value: int, field: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise BadInputError(f"expected a reminder id (an int), not {value!r}", field=field)


def _positive(value: int, field: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise BadInputError(f"expected a whole number of at least 1, not {value!r}", field=field)


def _duration(value: str | timedelta, field: str) -> timedelta:
    if isinstance(value, str):
        return parse_duration(value, field)
    if not isinstance(value, timedelta) or value <= timedelta(0):
        raise BadInputError("expected a positive timedelta or text such as 15m", field=field)
    return value


def _checking(progress: Callable[[str, int], None]) -> Callable[[int], None]:
    def checked(size: int) -> None:
        progress("checking", size)

    return checked


def _ignore(exc: DuequeueError) -> None:
    """Drop a failed tick's error: the worker goes on either way."""


def _now() -> datetime:
    """Return the current instant to the millisecond, the resolution of what is stored."""
    now = datetime.now(UTC)
    return now.replace(microsecond=now.microsecond // 1000 * 1000)


def _queue_clock(
    store: Store, settings: Settings
) -> tuple[datetime, Callable[[], int], str | None]:
    """Return the instant a tick judges what is due by, the clock it stamps sends with, and
    the tz release to note once the tick is done (_note_release; None: noted with the host).

    On a shared database (PostgreSQL) both are the database server's, read once a tick (one
    round trip, which also notes this host as ticking, for `stats`) and carried forward by this
    host's clock: hosts whose clocks disagree then agree on what is due and when a lease ends.
    On SQLite (one host), or with the `clock` setting `host`, they are this host's own.
    """
    now = _now()
    # With the tz release this tick reads (a file's first line, read once a process), so that
    # stats and doctor show a host (or, on SQLite, the last tick) running on older tz data.
    mine = tz_release.in_use()
    server = None
    host_ms = to_ms(now)
    if settings.clock != "host":
        server = store.note_tick(settings.host or os.uname().nodename, host_ms, mine)
    if server is None:
        return now, _clock_ms, mine
    offset = server - host_ms
    return from_ms(server), lambda: _clock_ms() + offset, None


def _note_release(store: Store, release: str | None) -> None:
    """Note the tz release the tick read as the last tick's (SQLite, or the `clock` setting
    `host`), after the tick: a tick that fails before its work (a corrupt database) writes
    nothing at all, and a database too busy for the note lets it lag, as `mark_tick` does."""
    if release is not None:
        with contextlib.suppress(StoreBusyError):
            store.note_release(release)


def _clock_ms() -> int:
    # The same clock as _now() (freezegun fakes both), without a datetime per call: a tick
    # stamps every delivery with it.
    return time.time_ns() // 1_000_000
