"""Render `history` for people (tables) and scripts (stable JSON)."""

import io
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
    return {"channel": found[0].channel, "address": found[0].address} if found else None


def history_text(h: History) -> str:
    """Return `history` as a heading and tables, as text."""
    from rich.console import Console
    from rich.table import Table

    r = h.reminder
    buffer = io.StringIO()
    console = Console(width=160, file=buffer, color_system=None)
    console.print(
        f"reminder {r.id} {r.subject!r}: {r.state}, next fire {iso(r.next_fire_at) or '-'}",
        highlight=False,
    )
    if h.attempts:
        table = Table(title="attempts", title_justify="left")
        for column in ("at", "fire", "target", "outcome", "attempt", "error"):
            table.add_column(column, overflow="fold")
        for a in h.attempts:
            table.add_row(
                iso(a.at),
                iso(a.fire_at),
                "-" if a.target is None else f"{a.target.channel}:{a.target.address}",
                a.outcome,
                str(a.attempt),
                a.error or "",
            )
        console.print(table)
    else:
        console.print("no delivery attempts yet")
    if h.dead_letters:
        table = Table(title="dead letters", title_justify="left")
        for column in ("fire", "died", "errors", "last error", "retried"):
            table.add_column(column, overflow="fold")
        for d in h.dead_letters:
            table.add_row(
                iso(d.fire_at),
                iso(d.dead_at),
                str(d.error_count),
                d.last_error or "",
                iso(d.retried_at) or "-",
            )
        console.print(table)
    if h.retries:
        table = Table(title="target retries (of a partial success)", title_justify="left")
        for column in ("fire", "target", "errors", "next try", "last error"):
            table.add_column(column, overflow="fold")
        for t in h.retries:
            target = _target(h, t.target_id)
            table.add_row(
                iso(t.fire_at),
                "-" if target is None else f"{target['channel']}:{target['address']}",
                str(t.error_count),
                iso(t.next_try_at),
                t.last_error or "",
            )
        console.print(table)
    return buffer.getvalue().rstrip("\n")
