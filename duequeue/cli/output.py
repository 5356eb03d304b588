"""Render reminders and fires for people (text, tables), from the public types of
duequeue.results; their JSON is api/jsonforms.py's, the API's own."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from duequeue.cli import table
from duequeue.cli.instants import iso, seconds

if TYPE_CHECKING:
    from datetime import datetime

    from duequeue.api.results import Fire, Fires, Reminder, Target


def target_text(t: Target | None) -> str:
    """Return a target as `channel:address`, its secrets masked."""
    return "-" if t is None else f"{t.channel}:{t.display}"


def reason_first(error: str | None, targets: Sequence[Target]) -> str:
    """Return an error text with each failed target's reason before the target it names.

    The engine writes `channel address: reason` per failed target (`; ` between them, a
    `partial: ` in front); a table cut to a terminal's width would then show the target again,
    already in its own column, and cut the reason off. Here each becomes `reason (channel
    address)`. Only the labels of `targets` are recognised, so a text of another form (a broken
    rule's message, a cut tail) stays as it is.
    """
    if not error:
        return ""
    prefix = "partial: " if error.startswith("partial: ") else ""
    text = error[len(prefix) :]
    labels = {f"{t.channel} {t.display}: " for t in targets}
    # Where each failed target's part starts: at the text's start or after a "; ".
    starts = sorted(
        {
            at
            for label in labels
            for at in _occurrences(text, label)
            if at == 0 or text.startswith("; ", at - 2)
        }
    )
    if not starts or starts[0] != 0:
        return error
    parts = []
    for begin, end in zip(starts, [*starts[1:], len(text) + 2], strict=True):
        part = text[begin : end - 2]
        label = max((x for x in labels if part.startswith(x)), key=len)
        parts.append(f"{part[len(label) :]} ({label[:-2]})")
    return prefix + "; ".join(parts)


def _occurrences(text: str, sub: str) -> list[int]:
    found, at = [], text.find(sub)
    while at >= 0:
        found.append(at)
        at = text.find(sub, at + 1)
    return found


def reminder_table(reminders: Sequence[Reminder], width: int | None, view: str = "all") -> str:
    """Return a table of reminders: one line each fitted to `width`, or tab-separated (None).

    In the `dead` view every row is a dead letter (its status ends in one, or is `dead`): that
    column is the first to give way there, so the reason of the failure keeps the room.
    """
    columns = (
        "id",
        "subject",
        "targets",
        "rule",
        "state",
        "fire",
        "local",
        "late",
        "errors",
        "last error",
    )
    rows = []
    for r in reminders:
        fire = r.dead_fire_at if r.dead_fire_at is not None else r.next_fire_at
        rule = r.rrule or r.cron
        late = seconds(r.last_lateness)
        rows.append(
            (
                str(r.id),
                r.subject,
                ", ".join(
                    target_text(t) + (" (disabled: 410 Gone)" if t.disabled_at else "")
                    for t in r.targets
                ),
                f"{'rrule' if r.rrule else 'cron'}: {rule} ({r.tz})" if rule else f"once ({r.tz})",
                r.status,
                _to_the_second(iso(fire)),
                _wall(r.local_fire_at if r.dead_fire_at is None else None),
                "-" if late is None else f"{late:.1f}s",
                str(r.error_count),
                reason_first(r.last_error, r.targets),
            )
        )
    return table.render(
        columns,
        rows,
        width,
        shorten=("subject", "targets", "rule", "last error"),
        # At 80 columns: what, to whom, in which state and when, and why it failed.
        keep=("id", "subject", "fire", "last error", "targets")
        if view == "dead"
        else ("id", "subject", "state", "fire", "targets", "last error"),
        cut_last=("last error",),
    ).with_note()


def intent_note(f: Fires) -> str | None:
    """Return what `next` notes when the pending fire was computed with other tz data than this
    host reads (the fires it prints may then move), else None."""
    if not f.tz_release or not f.fires or f.fire_release == f.tz_release:
        return None
    computed = f.fire_release or "an unrecorded release"
    start = (
        f"its start is {f.start_wall:%Y-%m-%d %H:%M:%S} wall time in {f.tz}"
        if f.start_wall is not None
        else "its start is an instant"
    )
    return (
        f"the pending fire was computed with tz data {computed}, this host reads "
        f"{f.tz_release} ({start}): a host with the newer data computes it again "
        "(`duequeue recompute --dry-run` lists what moves)"
    )


def _wall(local: datetime | None) -> str:
    """Return a fire on its zone's clocks, e.g. `03-14 09:00 PST`."""
    return "-" if local is None else f"{local:%m-%d %H:%M} {local.tzname()}"


def _to_the_second(stamp: str | None) -> str:
    """Return an ISO instant to the second: milliseconds cost a table column four places."""
    return "-" if stamp is None else stamp[:19] + "Z"


def fires_text(tz: str, fires: Sequence[Fire]) -> str:
    """Return fire times one a line: local time and zone abbreviation, then UTC."""
    return "\n".join(
        f"{f.local:%Y-%m-%d %H:%M:%S} {f.local.tzname()} ({tz})  {iso(f.at)}" for f in fires
    )
