"""Render reminders and summaries for people (tables) and scripts (stable JSON)."""

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from duequeue.channels.notify import shown
from duequeue.store.base import ReminderView
from duequeue.timefmt import iso, to_ms


def reminder_json(v: ReminderView) -> dict[str, Any]:
    """Return the stable JSON object of one reminder (docs/reference.md documents every key)."""
    return {
        "id": v.id,
        "key": v.key,
        "subject": v.subject,
        "targets": [
            {
                "channel": t.channel,
                "address": shown(t.channel, t.address),  # a notify URL's tokens masked
                "disabled_at": iso(t.disabled_at),
            }
            for t in v.targets
        ],
        "rrule": v.rule if v.rule_kind == "rrule" else None,
        "cron": v.rule if v.rule_kind == "cron" else None,
        "tz": v.tz,
        "state": v.state,
        "dead": v.dead_fire_at is not None or v.state == "dead",
        "fire_at": iso(v.fire_at),
        "next_fire_at": iso(v.next_fire_at),
        "error_count": v.error_count,
        "last_error": v.last_error,
        "last_fired_at": iso(v.last_fired_at),
        "last_lateness_s": _lateness(v),
        "skipped_fires": v.skipped_fires,
        "dead_fire_at": iso(v.dead_fire_at),
        "dead_at": iso(v.dead_at),
        "created_at": iso(v.created_at),
    }


def _lateness(v: ReminderView) -> float | None:
    """Seconds from the last fired fire's scheduled time to its first successful delivery."""
    if v.last_sent_at is None or v.last_fired_at is None:
        return None
    return round((v.last_sent_at - v.last_fired_at) / 1000, 3)


def fires_json(tz: str, fires: Sequence[datetime]) -> list[dict[str, str]]:
    """Return fire times as {"local", "utc"} pairs: local in the reminder's zone, with offset."""
    from duequeue.schedule.zones import zone as load_zone

    zone = load_zone(tz)
    return [{"local": f.astimezone(zone).isoformat(), "utc": iso(to_ms(f)) or ""} for f in fires]


def fires_text(tz: str, fires: Sequence[datetime]) -> str:
    """Return fire times one a line: local time and zone abbreviation, then UTC."""
    from duequeue.schedule.zones import zone as load_zone

    zone = load_zone(tz)
    lines = []
    for f in fires:
        local = f.astimezone(zone)
        lines.append(f"{local:%Y-%m-%d %H:%M:%S} {local.tzname()} ({tz})  {iso(to_ms(f))}")
    return "\n".join(lines)


def reminder_table(views: Sequence[ReminderView], width: int | None) -> str:
    """Return a plain-text table of reminders, fitted to `width` columns when given."""
    from duequeue.cli import table

    columns = ("id", "subject", "targets", "rule", "state", "fire", "late", "errors", "last error")
    rows = []
    for v in views:
        fire = v.dead_fire_at if v.dead_fire_at is not None else v.next_fire_at
        rows.append(
            (
                str(v.id),
                v.subject,
                ", ".join(
                    f"{t.channel}:{shown(t.channel, t.address)}"
                    + (" (disabled: 410 Gone)" if t.disabled_at else "")
                    for t in v.targets
                ),
                f"{v.rule_kind}: {v.rule} ({v.tz})" if v.rule else f"once ({v.tz})",
                "dead" if v.dead_fire_at is not None else v.state,
                _seconds(iso(fire)),
                "-" if (late := _lateness(v)) is None else f"{late:.1f}s",
                str(v.error_count),
                v.last_error or "",
            )
        )
    return table.render(columns, rows, width, wrap=("subject", "targets", "rule", "last error"))


def _seconds(stamp: str | None) -> str:
    """Return an ISO instant to the second: milliseconds cost a table column four places."""
    return "-" if stamp is None else stamp[:19] + "Z"
