"""The HTTP API (/api/v1/): add, list, get, history, retry, cancel, enable and stats, each one
Queue call, JSON in and out, errors as application/problem+json naming the field at fault
(app.py maps a DuequeueError)."""

from typing import Any

from aiohttp import web

from duequeue.api import jsonforms
from duequeue.api.queue import Queue
from duequeue.api.results import Change
from duequeue.errors import BadInputError, NotFoundError
from duequeue.web import inputs, jsonout, openapi
from duequeue.web.keys import GUARD, QUEUES, parse_id

# Queue.add's arguments the API takes, and the JSON type of each.
_TEXT = ("at", "tz", "rrule", "cron", "subject", "body", "key", "misfire_grace")
_LISTS = ("emails", "webhooks", "notify")
FIELDS = frozenset((*_TEXT, *_LISTS, "targets", "webhook_secret", "data"))


def routes(read_only: bool) -> list[web.RouteDef]:
    """Return the API's routes; with `read_only`, the reads alone."""
    found = [
        web.get("/api/v1/openapi.json", openapi_document),
        web.get("/api/v1/reminders", list_reminders),
        web.get("/api/v1/reminders/{id}", get_reminder),
        web.get("/api/v1/reminders/{id}/history", get_history),
        web.get("/api/v1/stats", get_stats),
    ]
    if not read_only:
        found += [
            web.post("/api/v1/reminders", add),
            web.post("/api/v1/reminders/{id}/retry", retry),
            web.post("/api/v1/reminders/{id}/cancel", cancel),
            web.post("/api/v1/reminders/{id}/enable", enable),
        ]
    return found


def _json(value: Any, status: int = 200) -> web.Response:
    return web.json_response(value, status=status)


async def openapi_document(request: web.Request) -> web.Response:
    return _json(openapi.document(request.app[GUARD].read_only))


async def add(request: web.Request) -> web.Response:
    body = await inputs.json_object(request)
    args = add_arguments(body)
    header = request.headers.get("Idempotency-Key")
    if header is not None:
        if "key" in args and args["key"] != header:
            raise BadInputError("differs from the Idempotency-Key header", field="key")
        args["key"] = header
    added = await request.app[QUEUES].call(lambda q: q.add(**args))
    result = {"id": added.id, "created": added.created, "notes": list(added.notes)}
    response = _json(result, 201 if added.created else 200)
    response.headers["Location"] = f"/api/v1/reminders/{added.id}"
    return response


def add_arguments(body: dict[str, Any]) -> dict[str, Any]:
    """Return Queue.add's arguments from a request's JSON object, each field's type checked."""
    args: dict[str, Any] = {}
    for name, value in body.items():
        if name not in FIELDS:
            raise BadInputError(
                f"unknown field; add takes {', '.join(sorted(FIELDS))}", field=str(name)[:64]
            )
        if value is None and name != "data":
            continue
        if name in _TEXT:
            args[name] = text(value, name)
        elif name in _LISTS:
            args[name] = _texts(value, name)
        elif name == "targets":
            args[name] = _targets(value)
        elif name == "webhook_secret":
            args[name] = value if isinstance(value, str) else _texts(value, name)
        else:
            args[name] = value
    return args


def text(value: Any, field: str) -> str:
    """Return a JSON value that must be a string, or raise BadInputError naming `field`."""
    if not isinstance(value, str):
        raise BadInputError("expected a string", field=field)
    return value


def _texts(value: Any, field: str) -> list[str]:
    if not isinstance(value, list):
        raise BadInputError("expected an array of strings", field=field)
    return [text(v, f"{field}[{i}]") for i, v in enumerate(value)]


def _targets(value: Any) -> list[tuple[str, str]]:
    if not isinstance(value, list):
        raise BadInputError("expected an array of {channel, address} objects", field="targets")
    found = []
    for i, t in enumerate(value):
        if not isinstance(t, dict) or set(t) != {"channel", "address"}:
            raise BadInputError("expected {channel, address}", field=f"targets[{i}]")
        found.append((text(t["channel"], f"targets[{i}]"), text(t["address"], f"targets[{i}]")))
    return found


def reminder_id(request: web.Request) -> int:
    """Return the reminder id of the URL, or raise NotFoundError."""
    rid = parse_id(request.match_info["id"], "id")
    if rid is None:
        raise NotFoundError(f"no reminder with id {request.match_info['id'][:32]}", field="id")
    return rid


async def list_reminders(request: web.Request) -> web.Response:
    state = request.query.get("state", "all")
    search = inputs.query_search(request)
    before = inputs.query_id(request, "before")
    limit = inputs.query_int(request, "limit", 50)
    page = await request.app[QUEUES].call(
        lambda queue: queue.browse(state, search=search, before=before, limit=limit)  # type: ignore[arg-type]
    )
    return _json(
        {
            "reminders": [jsonforms.reminder(r) for r in page.reminders],
            "next_before": page.next_before,
            "partial": page.partial,
        }
    )


async def get_reminder(request: web.Request) -> web.Response:
    rid = reminder_id(request)

    def work(q: Queue) -> dict[str, Any]:
        found = q.history(rid).reminder
        upcoming = q.next_fires(rid, 5).fires
        return {**jsonforms.reminder(found), "next_fires": jsonforms.fires(upcoming)}

    return _json(await request.app[QUEUES].call(work))


async def get_history(request: web.Request) -> web.Response:
    rid = reminder_id(request)
    found = await request.app[QUEUES].call(lambda q: q.history(rid))
    return _json(jsonforms.history(found))


async def get_stats(request: web.Request) -> web.Response:
    found = await request.app[QUEUES].call(lambda q: q.stats())
    return _json(jsonforms.stats(found))


def _changes(found: list[Change]) -> web.Response:
    return _json({"changes": [jsonout.change(c) for c in found]})


async def retry(request: web.Request) -> web.Response:
    rid = reminder_id(request)
    no_body(request)
    return _changes(await request.app[QUEUES].call(lambda q: q.retry(rid)))


async def cancel(request: web.Request) -> web.Response:
    rid = reminder_id(request)
    no_body(request)
    return _changes(await request.app[QUEUES].call(lambda q: q.cancel(rid)))


async def enable(request: web.Request) -> web.Response:
    rid = reminder_id(request)
    no_body(request)
    return _changes(await request.app[QUEUES].call(lambda q: q.enable(rid)))


def no_body(request: web.Request) -> None:
    """Refuse a change without a JSON content type on a server without a token."""
    # Without a token, a page of another site could POST here from the browser of whoever runs
    # serve: it cannot send the Bearer token, nor a JSON body without asking first (CORS).
    guard = request.app[GUARD]
    if guard.token is None and request.content_type != "application/json":
        raise BadInputError("send Content-Type: application/json", field="content-type")
