"""The API's changes beyond add, retry, cancel and enable (api.py): reschedule and edit a
reminder, pause and resume it, cancel by key, bulk cancel and retry on a filter, and pause and
resume the whole queue. Each is one Queue call (a bulk change: the filter read, then one
change), JSON in and out; the admin token only (app.py refuses the read token's POST)."""

from typing import Any

from aiohttp import web

from duequeue.api import jsonforms
from duequeue.api.queue import Queue
from duequeue.api.results import Change, Changed, QueuePause
from duequeue.errors import BadInputError
from duequeue.web import api, bulk, inputs, jsonout
from duequeue.web.keys import QUEUES

_SCHEDULE = ("at", "tz", "rrule", "cron")
_CONTENT = ("subject", "body")
_TARGETS = ("emails", "webhooks", "notify", "targets", "webhook_secret")
EDIT_FIELDS = frozenset((*_CONTENT, "data", *_TARGETS))


def routes() -> list[web.RouteDef]:
    """Return the routes of the changes (never on a read-only server)."""
    return [
        web.post("/api/v1/reminders/{id}/reschedule", reschedule),
        web.post("/api/v1/reminders/{id}/edit", edit),
        web.post("/api/v1/reminders/{id}/pause", pause),
        web.post("/api/v1/reminders/{id}/resume", resume),
        web.post("/api/v1/reminders/cancel", cancel_many),
        web.post("/api/v1/reminders/retry", retry_many),
        web.post("/api/v1/queue/pause", pause_queue),
        web.post("/api/v1/queue/resume", resume_queue),
    ]


def _only(body: dict[str, Any], allowed: frozenset[str] | tuple[str, ...], what: str) -> None:
    for name in body:
        if name not in allowed:
            raise BadInputError(
                f"unknown field; {what} takes {', '.join(sorted(allowed))}", field=str(name)[:64]
            )


def _changed(done: Changed) -> web.Response:
    return web.json_response(
        {"reminder": jsonforms.reminder(done.reminder), "notes": list(done.notes)}
    )


async def reschedule(request: web.Request) -> web.Response:
    rid = api.reminder_id(request)
    body = await inputs.json_object(request)
    _only(body, _SCHEDULE, "reschedule")
    args = {name: api.text(value, name) for name, value in body.items() if value is not None}
    return _changed(await request.app[QUEUES].call(lambda q: q.reschedule(rid, **args)))


async def edit(request: web.Request) -> web.Response:
    rid = api.reminder_id(request)
    body = await inputs.json_object(request)
    _only(body, EDIT_FIELDS, "edit")
    # The same fields and types as add's; `data` null is "keep", as a field left out.
    args = api.add_arguments({k: v for k, v in body.items() if v is not None})
    return _changed(await request.app[QUEUES].call(lambda q: q.edit(rid, **args)))


def _changes(found: list[Change]) -> web.Response:
    return web.json_response({"changes": [jsonout.change(c) for c in found]})


async def pause(request: web.Request) -> web.Response:
    rid = api.reminder_id(request)
    api.no_body(request)
    return _changes(await request.app[QUEUES].call(lambda q: q.pause(rid)))


async def resume(request: web.Request) -> web.Response:
    rid = api.reminder_id(request)
    api.no_body(request)
    return _changes(await request.app[QUEUES].call(lambda q: q.resume(rid)))


async def cancel_many(request: web.Request) -> web.Response:
    """Cancel the reminder holding a key (`{"key": K}`), or those a filter matches."""
    body = await inputs.json_object(request)
    if "key" in body:
        _only(body, ("key",), "cancel by key")
        key = api.text(body["key"], "key")
        return _changes(await request.app[QUEUES].call(lambda q: q.cancel(key=key)))
    if "state" not in body:
        # An empty body cancelling everything would be one slip away: "all" must be said.
        raise BadInputError(
            'give a key, or a filter\'s state ("all" for every reminder)', field="state"
        )
    return await _bulk(request, "cancel", body)


async def retry_many(request: web.Request) -> web.Response:
    """Retry the dead fires of the reminders a filter matches (default: every dead letter)."""
    body = await inputs.json_object(request)
    return await _bulk(request, "retry", {"state": "dead", **body})


async def _bulk(request: web.Request, verb: bulk.Verb, body: dict[str, Any]) -> web.Response:
    _only(body, ("state", "search", "dry_run"), f"bulk {verb}")
    state = api.text(body.get("state", "all"), "state")
    search = body.get("search")
    found = bulk.Filter(
        state, None if search is None else inputs.search_text(api.text(search, "search"))
    )
    dry_run = body.get("dry_run", False)
    if not isinstance(dry_run, bool):
        raise BadInputError("expected true or false", field="dry_run")

    def work(q: Queue) -> tuple[bulk.Matched, list[Change]]:
        if dry_run:
            return bulk.matching(q, found), []
        return bulk.apply(q, verb, found)

    matched, changes = await request.app[QUEUES].call(work)
    result: dict[str, Any] = {"matched": len(matched.ids), "more": matched.more}
    if dry_run:
        result["ids"] = list(matched.ids)
    else:
        result["changes"] = [jsonout.change(c) for c in changes]
    return web.json_response(result)


def _queue_pause(p: QueuePause) -> web.Response:
    return web.json_response(
        {"paused": p.paused, "since": jsonforms.iso(p.since), "changed": p.changed}
    )


async def pause_queue(request: web.Request) -> web.Response:
    api.no_body(request)
    return _queue_pause(await request.app[QUEUES].call(lambda q: q.pause_queue()))


async def resume_queue(request: web.Request) -> web.Response:
    api.no_body(request)
    return _queue_pause(await request.app[QUEUES].call(lambda q: q.resume_queue()))
