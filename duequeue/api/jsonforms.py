"""The one JSON form of each public type, for every front end: `inspect --json`, `history
--json`, `stats --json` and `next --json` print these, and serve's API answers with the same
objects (docs/reference.md documents every key; "JSON forms" there lists what changed).

Instants are ISO 8601 UTC strings to the millisecond ending in `Z`, spans seconds rounded to the
millisecond. A target's address is its `display` (a notify URL's tokens masked), a webhook's own
secret only `has_secret`, and a reminder's data as results.py holds it (secrets masked).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

# The types only: the CLI loads this module with every command, results.py with few of them.
if TYPE_CHECKING:
    from duequeue.api.results import (
        Attempt,
        DeadLetter,
        Fire,
        Fires,
        History,
        MovedFire,
        Reminder,
        Stats,
        Target,
        TargetRetry,
    )


def iso(instant: datetime | None) -> str | None:
    """Return an instant as ISO 8601 UTC to the millisecond, ending in Z; None stays None."""
    if instant is None:
        return None
    return instant.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def seconds(span: timedelta | None) -> float | None:
    """Return a span as seconds rounded to the millisecond, as the JSON carries spans."""
    return None if span is None else round(span.total_seconds(), 3)


def _wall(at: datetime | None) -> str | None:
    """Return a time on a zone's clocks (with its offset) or a naive wall time, or None."""
    return None if at is None else at.isoformat()


def target(t: Target | None) -> dict[str, Any] | None:
    """Return a target (None: one since removed, in a ledger row)."""
    if t is None:
        return None
    return {
        "id": t.id,
        "channel": t.channel,
        "address": t.display,
        "disabled_at": iso(t.disabled_at),
        "has_secret": t.has_secret,
    }


def reminder(r: Reminder) -> dict[str, Any]:
    """Return a reminder: what it sends, where its schedule stands, and its dead letters."""
    return {
        "id": r.id,
        "key": r.key,
        "subject": r.subject,
        "body": r.body,
        "data": r.data,
        "targets": [target(t) for t in r.targets],
        "rrule": r.rrule,
        "cron": r.cron,
        "tz": r.tz,
        "state": r.state,
        "dead": r.dead,
        "dead_letters": r.dead_letters,
        "fire_at": iso(r.fire_at),
        "next_fire_at": iso(r.next_fire_at),
        "error_count": r.error_count,
        "last_error": r.last_error,
        "last_fired_at": iso(r.last_fired_at),
        "last_sent_at": iso(r.last_sent_at),
        "last_lateness_s": seconds(r.last_lateness),
        "skipped_fires": r.skipped_fires,
        "dead_fire_at": iso(r.dead_fire_at),
        "dead_at": iso(r.dead_at),
        "created_at": iso(r.created_at),
        "local_fire_at": _wall(r.local_fire_at),
        "start_wall": _wall(r.start_wall),
        "fire_release": r.fire_release or None,
        "paused_at": iso(r.paused_at),
    }


def fires(found: tuple[Fire, ...]) -> list[dict[str, Any]]:
    """Return fire times as {"local", "utc"} pairs: local in the reminder's zone, with offset."""
    return [{"local": f.local.isoformat(), "utc": iso(f.at)} for f in found]


def next_fires(f: Fires) -> dict[str, Any]:
    """Return a reminder's next fires (`next --json`)."""
    return {
        "id": f.id,
        "tz": f.tz,
        "state": f.state,
        "fires": fires(f.fires),
        "start_wall": _wall(f.start_wall),
        "fire_release": f.fire_release,
        "tz_release": f.tz_release,
    }


def _attempt(a: Attempt) -> dict[str, Any]:
    return {
        "at": iso(a.at),
        "fire_at": iso(a.fire_at),
        "target": target(a.target),
        "outcome": a.outcome,
        "error": a.error,
        "attempt": a.attempt,
    }


def _dead_letter(d: DeadLetter) -> dict[str, Any]:
    return {
        "fire_at": iso(d.fire_at),
        "dead_at": iso(d.dead_at),
        "error_count": d.error_count,
        "last_error": d.last_error,
        "retried_at": iso(d.retried_at),
    }


def _target_retry(t: TargetRetry) -> dict[str, Any]:
    return {
        "fire_at": iso(t.fire_at),
        "target": target(t.target),
        "error_count": t.error_count,
        "last_error": t.last_error,
        "next_try_at": iso(t.next_try_at),
    }


def _moved(m: MovedFire) -> dict[str, Any]:
    return {
        "old_fire_at": iso(m.old_fire_at),
        "new_fire_at": iso(m.new_fire_at),
        "old_release": m.old_release,
        "new_release": m.new_release,
        "moved_at": iso(m.moved_at),
    }


def history(h: History) -> dict[str, Any]:
    """Return a reminder with its ledger, dead letters, target retries, changes and moves."""
    return {
        "reminder": reminder(h.reminder),
        "attempts": [_attempt(a) for a in h.attempts],
        "dead_letters": [_dead_letter(d) for d in h.dead_letters],
        "target_retries": [_target_retry(t) for t in h.target_retries],
        "changes": [{"at": iso(c.at), "change": c.what} for c in h.changes],
        "moved_fires": [_moved(m) for m in h.moved_fires],
    }


def stats(s: Stats) -> dict[str, Any]:
    """Return the counts of `stats`: reminders by state, then the rest."""
    return {
        "at": iso(s.at),
        "reminders": {
            "pending": s.pending,
            "done": s.done,
            "dead": s.dead,
            "cancelled": s.cancelled,
            "paused": s.paused,
        },
        "queue_paused_since": iso(s.queue_paused_since),
        "due": s.due,
        "retrying": s.retrying,
        "leased": s.leased,
        "dead_letters": s.dead_letters,
        "dead_reminders": s.dead_reminders,
        "retrying_targets": s.retrying_targets,
        "disabled_targets": s.disabled_targets,
        "oldest_due_at": iso(s.oldest_due_at),
        "oldest_due_lateness_s": seconds(s.oldest_due_lateness),
        "moved_fires": s.moved_fires,
        "deliveries": {
            "last_hour": {"sent": s.sent_last_hour, "failed": s.failed_last_hour},
            "last_day": {"sent": s.sent_last_day, "failed": s.failed_last_day},
        },
        "last_successful_tick": iso(s.last_successful_tick),
        "hosts": [
            {
                "host": h.host,
                "last_tick": iso(h.last_tick),
                "clock_offset_s": seconds(h.clock_offset),
            }
            for h in s.hosts
        ],
    }
