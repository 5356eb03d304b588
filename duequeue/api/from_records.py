"""The public types of results.py, made from the store's records and from what the operations
return: the one place stored unix milliseconds become aware UTC datetimes and an address is
masked for display. Cron's plain tick never loads it (a tick returns the engine's own
TickSummary)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from duequeue.api import results
from duequeue.config.settings import Origins, Settings, masked
from duequeue.shared import redact
from duequeue.shared.lazy import LazyModule
from duequeue.shared.timefmt import from_ms
from duequeue.store import records as store
from duequeue.store.schema_steps import Shape

if TYPE_CHECKING:
    from duequeue.channels import registry
    from duequeue.engine import recompute
    from duequeue.operations.inspect import Ledger
    from duequeue.schedule import zones
    from duequeue.store.copy_rows import Copied
else:
    # Loaded on first use: the channels only to show a target (stats shows none).
    registry = LazyModule("duequeue.channels.registry")
    # Zones only to show a fire on its zone's clocks (inspect, history): never on cron's tick.
    zones = LazyModule("duequeue.schedule.zones")

_MS = timedelta(milliseconds=1)


def _when(ms: int | None) -> datetime | None:
    return None if ms is None else from_ms(ms)


def when(ms: int | None) -> datetime | None:
    """Return stored milliseconds as an aware UTC datetime; None stays None."""
    return _when(ms)


def target(t: store.Target) -> results.Target:
    """Return a stored target, its address fit to print beside it and its secret left out."""
    return results.Target(
        id=t.id,
        channel=t.channel,
        address=t.address,
        display=registry.shown(t.channel, t.address),
        disabled_at=_when(t.disabled_at),
        has_secret=t.secret is not None,
    )


def reminder(v: store.ReminderView) -> results.Reminder:
    """Return a reminder as `inspect` lists it."""
    return results.Reminder(
        id=v.id,
        key=v.key,
        subject=v.subject,
        targets=tuple(target(t) for t in v.targets),
        rrule=v.rule if v.rule_kind == "rrule" else None,
        cron=v.rule if v.rule_kind == "cron" else None,
        tz=v.tz,
        state=v.state,
        fire_at=_when(v.fire_at),
        next_fire_at=_when(v.next_fire_at),
        error_count=v.error_count,
        last_error=v.last_error,
        last_fired_at=_when(v.last_fired_at),
        last_sent_at=_when(v.last_sent_at),
        skipped_fires=v.skipped_fires,
        created_at=from_ms(v.created_at),
        start=_when(v.dtstart),
        dead_fire_at=_when(v.dead_fire_at),
        dead_at=_when(v.dead_at),
        start_wall=None if v.start_wall is None else datetime.fromisoformat(v.start_wall),
        local_fire_at=_local(v.fire_at, v.tz),
        fire_release=v.fire_release,
        body=v.body,
        data=None if v.data is None else _data(v.data),
        dead_letters=v.dead_letters,
        paused_at=_when(v.paused_at),
    )


def changed(view: store.ReminderView, notes: Iterable[str]) -> results.Changed:
    """Return what reschedule or edit did."""
    return results.Changed(reminder(view), tuple(notes))


def on_clock(at: datetime, tz: str) -> datetime | None:
    """Return an instant on the clocks of the IANA zone `tz` (the zone data duequeue computes
    fires with), or None for a zone this data lacks."""
    try:
        return at.astimezone(zones.zone(tz))
    except (KeyError, ValueError, OSError):
        return None


def _local(at: int | None, tz: str) -> datetime | None:
    """Return an instant on a zone's clocks, or None (none, or a zone this data lacks)."""
    if at is None:
        return None
    try:
        return from_ms(at).astimezone(zones.zone(tz))
    except (KeyError, ValueError, OSError):
        return None


def history(ledger: Ledger) -> results.History:
    """Return a reminder's ledger, each attempt and retry with its target spelled out."""
    shown = reminder(ledger.reminder)
    by_id = {t.id: t for t in shown.targets}
    return results.History(
        reminder=shown,
        attempts=tuple(
            results.Attempt(
                at=from_ms(d.at),
                fire_at=from_ms(d.fire_at),
                target=by_id.get(d.target_id),
                outcome=d.outcome,
                error=d.error,
                attempt=d.attempt,
            )
            for d in ledger.deliveries
        ),
        dead_letters=tuple(
            results.DeadLetter(
                fire_at=from_ms(d.fire_at),
                dead_at=from_ms(d.dead_at),
                error_count=d.error_count,
                last_error=d.last_error,
                retried_at=_when(d.retried_at),
            )
            for d in ledger.dead_letters
        ),
        target_retries=tuple(
            results.TargetRetry(
                fire_at=from_ms(r.fire_at),
                target=by_id.get(r.target_id),
                error_count=r.error_count,
                last_error=r.last_error,
                next_try_at=from_ms(r.next_try_at),
            )
            for r in ledger.retries
        ),
        changes=tuple(results.Revision(from_ms(at), what) for at, what in ledger.changes),
        moved_fires=tuple(
            results.MovedFire(
                old_fire_at=from_ms(m.old_fire_at),
                new_fire_at=from_ms(m.new_fire_at),
                old_release=m.old_release or "unknown",
                new_release=m.new_release,
                moved_at=from_ms(m.moved_at),
            )
            for m in ledger.moves
        ),
    )


def queue_pause(paused: bool, since: int | None, changed: bool) -> results.QueuePause:
    """Return the whole queue's pause after `pause_queue` or `resume_queue`."""
    return results.QueuePause(paused, _when(since), changed)


def changes(found: Sequence[store.Change]) -> list[results.Change]:
    """Return what `retry`, `cancel` or `enable` did, reminder by reminder."""
    return [results.Change(c.reminder_id, _when(c.fire_at), c.skipped) for c in found]


def stats(s: store.Stats, at: datetime) -> results.Stats:
    """Return the counts `stats` took at `at`."""
    return results.Stats(
        at=at,
        pending=s.pending,
        done=s.done,
        dead=s.dead,
        cancelled=s.cancelled,
        due=s.due,
        retrying=s.retrying,
        leased=s.leased,
        dead_letters=s.dead_letters,
        dead_reminders=s.dead_reminders,
        retrying_targets=s.retrying_targets,
        disabled_targets=s.disabled_targets,
        oldest_due_at=_when(s.oldest_due_at),
        sent_last_hour=s.sent_last_hour,
        failed_last_hour=s.failed_last_hour,
        sent_last_day=s.sent_last_day,
        failed_last_day=s.failed_last_day,
        last_successful_tick=_when(s.last_tick_ok_at),
        hosts=tuple(
            results.HostSeen(h.host, from_ms(h.at), h.offset_ms * _MS, h.release) for h in s.hosts
        ),
        moved_fires=s.moved_fires,
        lower_bounds=s.lower_bounds,
        paused=s.paused,
        queue_paused_since=_when(s.queue_paused_at),
        last_tick_tz_release=s.tick_release,
    )


def recomputed(done: recompute.Pass, dry_run: bool) -> results.Recomputed:
    """Return what a recompute pass did (or would do)."""
    return results.Recomputed(
        release=done.release,
        dry_run=dry_run,
        checked=done.checked,
        moved=done.moved,
        moves=tuple(
            results.MovedBy(
                reminder_id=m.reminder_id,
                old_fire_at=from_ms(m.old_fire_at),
                new_fire_at=from_ms(m.fire_at),
                old_release=m.old_release or "unknown",
            )
            for m in done.moves
        ),
    )


def overview(o: store.Dashboard, at: datetime) -> results.Overview:
    """Return serve's overview at `at`: per-minute counts every minute of the last day and
    per-hour counts every hour of the next, zeros included, so a chart has no gaps; an hour
    counted past its cap shows the cap and is named in per_hour_lower_bounds."""
    minutes = {m: (sent, failed) for m, sent, failed in o.per_minute}
    hours = dict(o.per_hour)
    top = o.hour_cap
    over = () if top is None else tuple(h for h, n in o.per_hour if n > top)
    if top is not None:
        hours = {h: min(n, top) for h, n in hours.items()}
    start = at.replace(second=0, microsecond=0)
    return results.Overview(
        stats=stats(o.stats, at),
        max_lateness=None if o.max_lateness_ms is None else o.max_lateness_ms * _MS,
        per_minute=tuple(
            (start - timedelta(minutes=m), *minutes.get(m, (0, 0))) for m in range(1439, -1, -1)
        ),
        per_hour=tuple((at + timedelta(hours=h), hours.get(h, 0)) for h in range(24)),
        per_hour_lower_bounds=tuple(at + timedelta(hours=h) for h in sorted(over)),
    )


def page(
    found: Sequence[store.ReminderView], next_before: int | None, partial: bool
) -> results.Page:
    """Return one page of `browse`."""
    return results.Page(tuple(reminder(v) for v in found), next_before, partial)


def prune_counts(c: store.PruneCounts, before: datetime, dry_run: bool) -> results.PruneCounts:
    """Return what `prune` removed (or would, on a dry run) of what finished before `before`."""
    return results.PruneCounts(
        before=before,
        dry_run=dry_run,
        deliveries=c.deliveries,
        done=c.done,
        cancelled=c.cancelled,
        dead_letters=c.dead_letters,
    )


def doctor_report(found: Iterable[store.HealthCheck]) -> results.DoctorReport:
    """Return doctor's findings."""
    return results.DoctorReport(
        tuple(results.Check(c.name, c.ok, c.detail, c.fix, c.warning) for c in found)
    )


def initialized(location: str, created: bool) -> results.Initialized:
    """Return what `init` did."""
    return results.Initialized(location, created)


def added(rid: int, created: bool, notes: Iterable[str]) -> results.Added:
    """Return what `add` did."""
    return results.Added(rid, created, tuple(notes))


def fires(local: Iterable[datetime]) -> tuple[results.Fire, ...]:
    """Return fires given in the reminder's zone as (UTC, local) pairs."""
    return tuple(results.Fire(f.astimezone(UTC), f) for f in local)


def preview(tz: str, local: Iterable[datetime], notes: Iterable[str]) -> results.Preview:
    """Return what `add` would schedule."""
    return results.Preview(tz, fires(local), tuple(notes))


def next_fires(v: store.ReminderView, local: Iterable[datetime]) -> results.Fires:
    """Return a stored reminder's next fires."""
    return results.Fires(
        v.id,
        v.tz,
        v.state,
        fires(local),
        start_wall=None if v.start_wall is None else datetime.fromisoformat(v.start_wall),
        fire_release=v.fire_release or None,
        tz_release=zones.in_use().version,
    )


def imported(imported: int, skipped: int, notes: Iterable[str]) -> results.ImportResult:
    """Return what `import` did."""
    return results.ImportResult(imported + skipped, imported, skipped, tuple(notes))


def contracted(
    database: str, before: Shape, after: Shape, steps: tuple[str, ...]
) -> results.Contracted:
    """Return what `migrate --contract` did; `database` is already fit to print."""
    return results.Contracted(
        database=database,
        floor_before=before.floor,
        floor=after.floor,
        version=after.version,
        steps=steps,
    )


def migrated(source: str, destination: str, copied: Copied) -> results.Migrated:
    """Return what `migrate` copied; `destination` is already fit to print."""
    return results.Migrated(
        source=source,
        destination=destination,
        reminders=copied.reminders,
        targets=copied.targets,
        deliveries=copied.deliveries,
        dead_letters=copied.dead_letters,
        target_retries=copied.target_retries,
    )


def config_report(settings: Settings, origins: Origins, tz_data: str) -> results.ConfigReport:
    """Return the effective settings, secrets masked, and where each came from."""
    values: dict[str, Any] = masked(settings)
    return results.ConfigReport(
        settings=values,
        sources=dict(origins.sources),
        config_file=str(origins.config_file),
        config_file_read=origins.config_file_read,
        tz_data=tz_data,
    )


def _data(stored: str) -> Any:
    """Return a reminder's stored data as shown (secrets masked); a stored text that is not
    JSON any more (written by hand, a corrupt row the tick set aside) is shown as a note, never
    as itself (it may hold a secret) and never as a failed view."""
    try:
        return redact.data(json.loads(stored))
    except ValueError:
        return "(unreadable: the stored data is not JSON)"
