"""The dashboard's changes beyond retry, cancel and enable (pages.py): reschedule and edit a
reminder (a form each), cancel by key and bulk cancel on the list's filter (a confirmation page
with the count), and pause and resume the whole queue. Each form carries the CSRF token
(app.py checks it, with the Origin, before any handler runs); each change is one Queue call;
the result page says what happened in words, not in the coloured labels of a state."""

from typing import Any

from aiohttp import web
from multidict import MultiDictProxy

from duequeue.api.queue import Queue
from duequeue.api.results import Changed, Reminder
from duequeue.errors import BadInputError
from duequeue.web import bulk, inputs
from duequeue.web.html import at, facts, h, hidden, post_button, url
from duequeue.web.keys import QUEUES
from duequeue.web.pages import csrf_of, html_page, reminder_id, render_changes, require_changer

# The fields of the reschedule form, and of the edit form.
_SCHEDULE = ("at", "tz", "rrule", "cron")


def routes() -> list[web.RouteDef]:
    """Return the routes of the change pages (never on a read-only server). Registered before
    pages.py's, whose /reminders/{id}/{action} would take these paths."""
    return [
        web.get("/reminders/{id}/reschedule", reschedule_form),
        web.post("/reminders/{id}/reschedule", reschedule),
        web.get("/reminders/{id}/edit", edit_form),
        web.post("/reminders/{id}/edit", edit),
        web.get("/cancel-key", confirm_cancel_key),
        web.post("/cancel-key", cancel_key),
        web.get("/bulk-cancel", confirm_bulk_cancel),
        web.post("/bulk-cancel", bulk_cancel),
        web.get("/queue/{action:pause|resume}", confirm_queue),
        web.post("/queue/{action:pause|resume}", queue_action),
    ]


def _form(action: str, csrf: str, fields: str, submit: str) -> str:
    return (
        f'<form class="stack" method="post" action="{h(action)}">{hidden("csrf", csrf)}'
        f'{fields}<div class="actions"><button type="submit">{h(submit)}</button>'
        f"</div></form>"
    )


def _input(name: str, label: str, value: str = "", hint: str = "", area: bool = False) -> str:
    note = f' <span class="muted">{h(hint)}</span>' if hint else ""
    if area:
        return (
            f'<label>{h(label)}{note}<textarea name="{h(name)}" rows="4">{h(value)}</textarea>'
            "</label>"
        )
    return f'<label>{h(label)}{note}<input name="{h(name)}" value="{h(value)}"></label>'


async def _reminder(request: web.Request, rid: int) -> Reminder:
    found = await request.app[QUEUES].call(lambda q: q.history(rid))
    reminder: Reminder = found.reminder
    return reminder


# -- reschedule ------------------------------------------------------------------------------


async def reschedule_form(request: web.Request) -> web.Response:
    require_changer(request)
    rid = reminder_id(request)
    r = await _reminder(request, rid)
    fields = (
        _input("at", "New time", "", "ISO 8601, a local time read in the zone below, or +2h")
        + _input("tz", "Zone (IANA)", r.tz)
        + _input("rrule", "RRULE", r.rrule or "", "for a recurring reminder")
        + _input("cron", "or cron expression", r.cron or "")
    )
    body = (
        f"<h1>Reschedule reminder {rid}: {h(r.subject)}</h1>"
        + facts([("next fire now", at(r.fire_at, r.tz) or "none"), ("state", h(r.state))])
        + "<p>What is left as it is stays. A rule or zone changed without a new time fires "
        "next at its first fire from now, as <code>duequeue reschedule</code> does.</p>"
        + _form(f"/reminders/{rid}/reschedule", csrf_of(request), fields, "Reschedule")
        + f'<p><a class="button secondary" href="/reminders/{rid}">Back</a></p>'
    )
    return html_page(request, f"Reschedule reminder {rid}", body)


async def reschedule(request: web.Request) -> web.Response:
    rid = reminder_id(request)
    form = await inputs.form(request)
    old = await _reminder(request, rid)
    current = {"at": "", "tz": old.tz, "rrule": old.rrule or "", "cron": old.cron or ""}
    # Only what the form changed: a zone or rule sent back as it was is no change.
    args = {
        name: text
        for name in _SCHEDULE
        if (text := inputs.text_field(form, name).strip()) != current[name]
    }
    if not args:
        raise BadInputError("change the time, the zone or the rule", field="at")
    done: Changed = await request.app[QUEUES].call(lambda q: q.reschedule(rid, **args))
    return _changed(request, "Rescheduled", done)


def _changed(request: web.Request, verb: str, done: Changed) -> web.Response:
    r = done.reminder
    notes = "".join(f'<p class="note">{h(n)}</p>' for n in done.notes)
    body = (
        f'<h1>{h(verb)}: reminder {r.id}</h1><p class="outcome" id="result">{h(verb)} reminder '
        f"{r.id}.</p>{notes}"
        + facts(
            [
                ("subject", h(r.subject)),
                ("next fire", at(r.fire_at, r.tz) or "none"),
                ("zone", h(r.tz)),
            ]
        )
        + f'<p><a class="button secondary" href="/reminders/{r.id}">Back to the reminder</a></p>'
    )
    return html_page(request, f"{verb}: reminder {r.id}", body)


# -- edit ------------------------------------------------------------------------------------


async def edit_form(request: web.Request) -> web.Response:
    require_changer(request)
    rid = reminder_id(request)
    r = await _reminder(request, rid)
    shown = "\n".join(f"{t.channel}:{t.display}" for t in r.targets)
    fields = (
        _input("subject", "Subject", r.subject)
        + _input("body", "Body", "", "empty: keep the body as it is", area=True)
        + _input("data", "Data (JSON)", "", "empty: keep the data as it is", area=True)
        + _input(
            "targets",
            "Targets, one a line as channel:address",
            "",
            "empty: keep the targets; any line given replaces the whole set",
            area=True,
        )
    )
    body = (
        f"<h1>Edit reminder {rid}: {h(r.subject)}</h1>"
        + facts([("targets now", "<br>".join(h(x) for x in shown.splitlines()) or "none")])
        + "<p>A target kept keeps its ledger and retries; a removed one loses its pending "
        "retries; a new one starts fresh, as <code>duequeue edit</code> does.</p>"
        + _form(f"/reminders/{rid}/edit", csrf_of(request), fields, "Save")
        + f'<p><a class="button secondary" href="/reminders/{rid}">Back</a></p>'
    )
    return html_page(request, f"Edit reminder {rid}", body)


def edit_arguments(form: MultiDictProxy[Any], old: Reminder) -> dict[str, Any]:
    """Return Queue.edit's arguments from the edit form: only what it changes."""
    args: dict[str, Any] = {}
    subject = inputs.text_field(form, "subject")
    if subject and subject != old.subject:
        args["subject"] = subject
    body = inputs.text_field(form, "body")
    if body:
        args["body"] = body
    data = inputs.text_field(form, "data").strip()
    if data:
        args["data_json"] = data
    lines = [x.strip() for x in inputs.text_field(form, "targets").splitlines() if x.strip()]
    if lines:
        pairs = []
        for i, line in enumerate(lines):
            channel, sep, address = line.partition(":")
            if not sep or not channel.strip() or not address.strip():
                raise BadInputError("expected channel:address", field=f"targets[{i}]")
            pairs.append((channel.strip(), address.strip()))
        args["targets"] = pairs
    if not args:
        raise BadInputError("change the subject, body, data or targets", field="subject")
    return args


async def edit(request: web.Request) -> web.Response:
    rid = reminder_id(request)
    form = await inputs.form(request)
    args = edit_arguments(form, await _reminder(request, rid))
    done: Changed = await request.app[QUEUES].call(lambda q: q.edit(rid, **args))
    return _changed(request, "Edited", done)


# -- cancel by key, bulk cancel --------------------------------------------------------------


def _key(text: str) -> str:
    key = text.strip()
    if not key or len(key) > 255:
        raise BadInputError("expected a reminder's key (1 to 255 characters)", field="key")
    return key


async def confirm_cancel_key(request: web.Request) -> web.Response:
    require_changer(request)
    key = _key(request.query.get("key", ""))
    body = (
        f"<h1>Cancel the reminder with key {h(key)}?</h1><p>The live reminder (pending, "
        f"paused or dead) holding key <code>{h(key)}</code> never fires again, as "
        "<code>duequeue cancel --key</code> does.</p><p>"
        + post_button("/cancel-key", "Yes, cancel it", csrf_of(request), {"key": key}, True)
        + ' <a class="button secondary" href="/reminders">No, go back</a></p>'
    )
    return html_page(request, "Cancel by key", body)


async def cancel_key(request: web.Request) -> web.Response:
    form = await inputs.form(request)
    key = _key(inputs.text_field(form, "key"))
    changes = await request.app[QUEUES].call(lambda q: q.cancel(key=key))
    return html_page(
        request, "Cancel by key", render_changes("Cancel by key", changes, "/reminders")
    )


def _filter(state: str, search: str) -> bulk.Filter:
    return bulk.Filter(state or "all", inputs.search_text(search))


async def confirm_bulk_cancel(request: web.Request) -> web.Response:
    require_changer(request)
    f = _filter(request.query.get("state", "all"), request.query.get("search", ""))
    matched: bulk.Matched = await request.app[QUEUES].call(lambda q: bulk.matching(q, f))
    back = url("/reminders", state=f.state, search=f.search)
    what = f"reminders in state {f.state}" + (f" matching {f.search!r}" if f.search else "")
    count = len(matched.ids)
    more = f" (the first {bulk.MAX} of more: run it again for the rest)" if matched.more else ""
    if not count:
        body = f"<h1>Cancel {h(what)}</h1><p>No reminder matches this filter now.</p>"
        return html_page(request, "Cancel all", body + f'<p><a href="{h(back)}">Back</a></p>')
    body = (
        f'<h1>Cancel {count} {h(what)}?</h1><p id="count"><strong>{count}</strong> reminders '
        f"match now{h(more)}. Each never fires again, as <code>duequeue cancel</code> does; "
        "those already cancelled or finished are skipped.</p><p>"
        + post_button(
            "/bulk-cancel",
            f"Yes, cancel {count}",
            csrf_of(request),
            {"state": f.state, "search": f.search or ""},
            danger=True,
        )
        + f' <a class="button secondary" href="{h(back)}">No, go back</a></p>'
    )
    return html_page(request, "Cancel all", body)


async def bulk_cancel(request: web.Request) -> web.Response:
    form = await inputs.form(request)
    f = _filter(inputs.text_field(form, "state"), inputs.text_field(form, "search"))
    _matched, changes = await request.app[QUEUES].call(lambda q: bulk.apply(q, "cancel", f))
    back = url("/reminders", state=f.state, search=f.search)
    return html_page(request, "Cancel all", render_changes("Cancel all", changes, back))


# -- the whole queue -------------------------------------------------------------------------

_QUEUE = {
    "pause": (
        "Pause the queue",
        "Every tick claims and delivers nothing until the queue is resumed, and says so, as "
        "<code>duequeue pause</code> does. Reminders can still be added and changed.",
    ),
    "resume": (
        "Resume the queue",
        "The next tick delivers what is due; a fire missed while paused goes out once, as "
        "<code>duequeue resume</code> does.",
    ),
}


async def confirm_queue(request: web.Request) -> web.Response:
    require_changer(request)
    action = request.match_info["action"]
    title, text = _QUEUE[action]
    body = (
        f"<h1>{h(title)}?</h1><p>{text}</p><p>"
        + post_button(
            f"/queue/{action}", f"Yes, {action}", csrf_of(request), None, action == "pause"
        )
        + ' <a class="button secondary" href="/">No, go back</a></p>'
    )
    return html_page(request, title, body)


async def queue_action(request: web.Request) -> web.Response:
    action = request.match_info["action"]

    def work(q: Queue) -> Any:
        return q.pause_queue() if action == "pause" else q.resume_queue()

    done = await request.app[QUEUES].call(work)
    if done.paused:
        said = "The queue is paused" + ("" if done.changed else " (it already was)")
        said += f" since {at(done.since)}: ticks deliver nothing."
    elif done.changed:
        said = f"The queue is resumed (paused since {at(done.since)})."
    else:
        said = "The queue was not paused: nothing changed."
    body = (
        f'<h1>{h(_QUEUE[action][0])}</h1><p class="outcome" id="result">{said}</p>'
        '<p><a class="button secondary" href="/">Back to the overview</a></p>'
    )
    return html_page(request, _QUEUE[action][0], body)
