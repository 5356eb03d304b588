"""The API's JSON: duequeue's public types as plain objects, instants as ISO 8601 UTC (`Z`),
spans in seconds. A target is given as `display`: a notify URL with its tokens masked, as
`inspect` shows it; a webhook's own secret only as `has_secret`. Errors are problems.py's."""

from datetime import datetime, timedelta
from typing import Any

from duequeue.api.results import (
    Attempt,
    Change,
    DeadLetter,
    Fires,
    History,
    Reminder,
    Stats,
    Target,
    TargetRetry,
)


def iso(at: datetime | None) -> str | None:
    """Return an instant as ISO 8601 UTC to the millisecond, or None."""
    if at is None:
        return None
    return at.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def seconds(span: timedelta | None) -> float | None:
    """Return a span in seconds, or None."""
    return None if span is None else span.total_seconds()


def target(t: Target) -> dict[str, Any]:
    """Return a target, its address masked as inspect masks it."""
    return {
        "id": t.id,
        "channel": t.channel,
        "address": t.display,
        "disabled_at": iso(t.disabled_at),
        "has_secret": t.has_secret,
    }


def reminder(r: Reminder) -> dict[str, Any]:
    """Return a reminder as `inspect --json` lists it."""
    return {
        "id": r.id,
        "key": r.key,
        "subject": r.subject,
        "state": r.state,
        "targets": [target(t) for t in r.targets],
        "rrule": r.rrule,
        "cron": r.cron,
        "tz": r.tz,
        "fire_at": iso(r.fire_at),
        "next_fire_at": iso(r.next_fire_at),
        "error_count": r.error_count,
        "last_error": r.last_error,
        "last_fired_at": iso(r.last_fired_at),
        "last_sent_at": iso(r.last_sent_at),
        "skipped_fires": r.skipped_fires,
        "created_at": iso(r.created_at),
        "dead_at": iso(r.dead_at),
        "paused_at": iso(r.paused_at),
    }


def fires(f: Fires) -> list[dict[str, Any]]:
    """Return a reminder's next fires, in its zone and in UTC."""
    return [{"local": fire.local.isoformat(), "utc": iso(fire.at)} for fire in f.fires]


def _attempt(a: Attempt) -> dict[str, Any]:
    return {
        "at": iso(a.at),
        "fire_at": iso(a.fire_at),
        "target": None if a.target is None else target(a.target),
        "outcome": a.outcome,
        "error": a.error,
        "attempt": a.attempt,
    }


def _dead(d: DeadLetter) -> dict[str, Any]:
    return {
        "fire_at": iso(d.fire_at),
        "dead_at": iso(d.dead_at),
        "error_count": d.error_count,
        "last_error": d.last_error,
        "retried_at": iso(d.retried_at),
    }


def _retry(t: TargetRetry) -> dict[str, Any]:
    return {
        "fire_at": iso(t.fire_at),
        "target": None if t.target is None else target(t.target),
        "error_count": t.error_count,
        "last_error": t.last_error,
        "next_try_at": iso(t.next_try_at),
    }


def history(h: History) -> dict[str, Any]:
    """Return a reminder's ledger, dead letters and targets retrying on their own."""
    return {
        "reminder": reminder(h.reminder),
        "attempts": [_attempt(a) for a in h.attempts],
        "dead_letters": [_dead(d) for d in h.dead_letters],
        "target_retries": [_retry(t) for t in h.target_retries],
    }


def change(c: Change) -> dict[str, Any]:
    """Return what retry, cancel, enable, pause or resume did to one reminder."""
    return {
        "id": c.reminder_id,
        "applied": c.applied,
        "fire_at": iso(c.fire_at),
        "skipped": c.skipped,
    }


def stats(s: Stats) -> dict[str, Any]:
    """Return the counts of `stats --json`."""
    return {
        "at": iso(s.at),
        "pending": s.pending,
        "done": s.done,
        "dead": s.dead,
        "cancelled": s.cancelled,
        "due": s.due,
        "retrying": s.retrying,
        "leased": s.leased,
        "dead_letters": s.dead_letters,
        "retrying_targets": s.retrying_targets,
        "disabled_targets": s.disabled_targets,
        "oldest_due_at": iso(s.oldest_due_at),
        "sent_last_hour": s.sent_last_hour,
        "failed_last_hour": s.failed_last_hour,
        "sent_last_day": s.sent_last_day,
        "failed_last_day": s.failed_last_day,
        "paused": s.paused,
        "queue_paused_since": iso(s.queue_paused_since),
    }
