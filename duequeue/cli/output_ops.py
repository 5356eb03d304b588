"""Render `history` for people (tables) and scripts (stable JSON)."""

from typing import Any

from duequeue.channels.notify import shown
from duequeue.cli.output import reminder_json
from duequeue.ops import History
from duequeue.timefmt import iso


def history_json(h: History) -> dict[str, Any]:
    """Return the stable JSON object of `history` (docs/reference.md documents every key)."""
    return {
        "reminder": reminder_json(h.reminder),
        "attempts": [
            {
                "at": iso(a.at),
                "fire_at": iso(a.fire_at),
                "target": None
                if a.target is None
                else {
                    "channel": a.target.channel,
                    "address": shown(a.target.channel, a.target.address),
                },
                "outcome": a.outcome,
                "error": a.error,
                "attempt": a.attempt,
            }
            for a in h.attempts
        ],
        "dead_letters": [
            {
                "fire_at": iso(d.fire_at),
                "dead_at": iso(d.dead_at),
                "error_count": d.error_count,
                "last_error": d.last_error,
                "retried_at": iso(d.retried_at),
            }
            for d in h.dead_letters
        ],
        "target_retries": [
            {
                "fire_at": iso(r.fire_at),
                "target": _target(h, r.target_id),
                "error_count": r.error_count,
                "last_error": r.last_error,
                "next_try_at": iso(r.next_try_at),
            }
            for r in h.retries
        ],
    }


def _target(h: History, target_id: int) -> dict[str, str] | None:
    found = [t for t in h.reminder.targets if t.id == target_id]
    t = found[0] if found else None
    return None if t is None else {"channel": t.channel, "address": shown(t.channel, t.address)}


def history_text(h: History, width: int | None) -> str:
    """Return `history` as a heading and plain-text tables, fitted to `width` when given."""
    from duequeue.cli import table

    r = h.reminder
    parts = [f"reminder {r.id} {r.subject!r}: {r.state}, next fire {iso(r.next_fire_at) or '-'}"]
    if h.attempts:
        rows = [
            (
                iso(a.at) or "",
                iso(a.fire_at) or "",
                "-"
                if a.target is None
                else f"{a.target.channel}:{shown(a.target.channel, a.target.address)}",
                a.outcome,
                str(a.attempt),
                a.error or "",
            )
            for a in h.attempts
        ]
        columns = ("at", "fire", "target", "outcome", "attempt", "error")
        parts += ["", "attempts", table.render(columns, rows, width, wrap=("target", "error"))]
    else:
        parts.append("no delivery attempts yet")
    if h.dead_letters:
        dead = [
            (
                iso(d.fire_at) or "",
                iso(d.dead_at) or "",
                str(d.error_count),
                d.last_error or "",
                iso(d.retried_at) or "-",
            )
            for d in h.dead_letters
        ]
        headers = ("fire", "died", "errors", "last error", "retried")
        parts += ["", "dead letters", table.render(headers, dead, width, wrap=("last error",))]
    if h.retries:
        retrying = []
        for t in h.retries:
            target = _target(h, t.target_id)
            retrying.append(
                (
                    iso(t.fire_at) or "",
                    "-" if target is None else f"{target['channel']}:{target['address']}",
                    str(t.error_count),
                    iso(t.next_try_at) or "",
                    t.last_error or "",
                )
            )
        headers = ("fire", "target", "errors", "next try", "last error")
        parts += [
            "",
            "target retries (of a partial success)",
            table.render(headers, retrying, width, wrap=("last error",)),
        ]
    return "\n".join(parts)
