"""Render `history` for people (tables) and scripts (stable JSON)."""

from typing import Any

from duequeue.ops import History
from duequeue.output import reminder_json
from duequeue.timefmt import iso


def history_json(h: History) -> dict[str, Any]:
    """Return the stable JSON object of `history` (README documents every key)."""
    return {
        "reminder": reminder_json(h.reminder),
        "attempts": [
            {
                "at": iso(a.at),
                "fire_at": iso(a.fire_at),
                "target": None
                if a.target is None
                else {"channel": a.target.channel, "address": a.target.address},
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
    }


def history_text(h: History, width: int | None) -> str:
    """Return `history` as a heading and plain-text tables, fitted to `width` when given."""
    from duequeue import table

    r = h.reminder
    parts = [f"reminder {r.id} {r.subject!r}: {r.state}, next fire {iso(r.next_fire_at) or '-'}"]
    if h.attempts:
        rows = [
            (
                iso(a.at) or "",
                iso(a.fire_at) or "",
                "-" if a.target is None else f"{a.target.channel}:{a.target.address}",
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
    return "\n".join(parts)
