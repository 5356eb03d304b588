"""What `reschedule` and `edit` do: read the reminder, check and describe the change, and have
the store apply it only while no tick holds the reminder (store/change_sql.py says how)."""

from datetime import datetime, timedelta
from typing import Any

from duequeue.channels import registry
from duequeue.errors import BadInputError, NotFoundError
from duequeue.operations import add
from duequeue.rules import validate
from duequeue.shared.timefmt import iso, to_ms
from duequeue.store import search_sql
from duequeue.store.records import (
    Edit,
    NewSchedule,
    NewTarget,
    ReminderView,
)
from duequeue.store.store import Store


def reschedule(
    store: Store,
    reminder_id: int,
    at: str | datetime | timedelta | None,
    tz: str | None,
    rrule: str | None,
    cron: str | None,
    now: datetime,
) -> tuple[ReminderView, list[str]]:
    """Move a reminder's pending fire (and its rule or zone); return it changed, and notes."""
    view = _get(store, reminder_id)
    new, notes = add.new_schedule(view, at, tz, rrule, cron, now)
    store.change(
        reminder_id, Edit(_seen(view), _schedule_note(view, new), schedule=new), to_ms(now)
    )
    return _get(store, reminder_id), notes


def edit(
    store: Store,
    reminder_id: int,
    now: datetime,
    *,
    subject: str | None = None,
    body: str | None = None,
    data: Any = None,
    data_json: str | None = None,
    targets: tuple[NewTarget, ...] | None = None,
) -> ReminderView:
    """Change a reminder's subject, body, data or targets (the whole set); return it changed."""
    validate.utf8([("subject", subject), ("body", body), ("data_json", data_json)])
    if data is not None and data_json is not None:
        raise BadInputError("give data as a value or as JSON text, not both", field="data")
    content: dict[str, str | None] = {}
    if subject is not None:
        content["subject"] = validate.subject(subject)
    if body is not None:
        content["body"] = validate.body(body)
    if data_json is not None:
        content["data"] = validate.data(data_json, "data_json")
    elif data is not None:
        content["data"] = validate.data_value(data)
    if not content and targets is None:
        raise BadInputError(
            "give something to change: a subject, body, data or targets", field="subject"
        )
    view = _get(store, reminder_id)
    parts = list(content)
    if targets is not None:
        parts.append(_targets_note(view, targets))
    search = None
    if "subject" in content or targets is not None:
        search = search_sql.text(
            content.get("subject") or view.subject,
            view.key,
            targets
            if targets is not None
            else [
                NewTarget(t.channel, t.address, shown=add.shown(t.channel, t.address))
                for t in view.targets
            ],
        )
    edit = Edit(
        _seen(view),
        "edited: " + ", ".join(parts),
        content=content,
        targets=targets,
        search=search,
    )
    store.change(reminder_id, edit, to_ms(now))
    return _get(store, reminder_id)


def _get(store: Store, reminder_id: int) -> ReminderView:
    view = store.get(reminder_id)
    if view is None:
        raise NotFoundError(f"no reminder with id {reminder_id}", field="id")
    return view


def _seen(view: ReminderView) -> tuple[int | None, int | None, int]:
    return (view.fire_at, view.next_fire_at, view.error_count)


def _schedule_note(view: ReminderView, new: NewSchedule) -> str:
    """Say what a reschedule changed, old values in brackets: one line for history."""
    parts = [f"next fire {iso(new.fire_at)} (was {iso(view.next_fire_at) or '-'})"]
    if (new.rule_kind, new.rule) != (view.rule_kind, view.rule):
        old = f"{view.rule_kind} {view.rule}" if view.rule else "none"
        parts.append(f"rule {new.rule_kind} {new.rule} (was {old})" if new.rule else "no rule")
    if new.tz != view.tz:
        parts.append(f"zone {new.tz} (was {view.tz})")
    return "rescheduled: " + ", ".join(parts)


def _targets_note(view: ReminderView, targets: tuple[NewTarget, ...]) -> str:
    old = {(t.channel, t.address) for t in view.targets}
    new = {(t.channel, t.address) for t in targets}
    added = [f"+{registry.label(c, a)}" for c, a in sorted(new - old)]
    removed = [f"-{registry.label(c, a)}" for c, a in sorted(old - new)]
    return "targets " + (" ".join(added + removed) or "(same set; secrets replaced)")
