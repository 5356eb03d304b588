"""The API's OpenAPI 3.1 document (/api/v1/openapi.json), written as data beside api.py; each
route's error statuses come from the errors it raises, through problems.py's one mapping.

tests/e2e/test_serve_schemathesis.py runs schemathesis against it and a live server: no 5xx,
every response as documented.
"""

from typing import Any

from duequeue.errors import (
    BadInputError,
    ChangeRefusedError,
    DuequeueError,
    KeyConflictError,
    NotFoundError,
    StoreError,
)
from duequeue.web import problems

_S = {"type": "string"}
_NS = {"type": ["string", "null"]}
_TIME = {"type": ["string", "null"], "format": "date-time"}
_INT = {"type": "integer"}
_STATES = ["all", "pending", "due", "retrying", "paused", "dead", "done", "cancelled"]


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _obj(props: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": required or list(props)}


_TARGET = _obj(
    {
        "id": _INT,
        "channel": _S,
        "address": _S,
        "disabled_at": _TIME,
        "has_secret": {"type": "boolean"},
    }
)
_NUM = {"type": ["number", "null"]}
# The one JSON form of a reminder (api/jsonforms.py), as `inspect --json` prints it.
_REMINDER = _obj(
    {
        "id": _INT,
        "key": _NS,
        "subject": _S,
        "body": _S,
        "data": {"description": "the JSON value it sends, secret-looking keys masked; null: none"},
        "targets": {"type": "array", "items": _ref("Target")},
        "rrule": _NS,
        "cron": _NS,
        "tz": _S,
        "state": {"enum": ["pending", "paused", "done", "dead", "cancelled"]},
        "dead": {"type": "boolean", "description": "it has a dead letter awaiting retry"},
        "dead_letters": {**_INT, "description": "its dead letters awaiting retry"},
        "fire_at": _TIME,
        "next_fire_at": _TIME,
        "error_count": _INT,
        "last_error": _NS,
        "last_fired_at": _TIME,
        "last_sent_at": _TIME,
        "last_lateness_s": _NUM,
        "skipped_fires": _INT,
        "dead_fire_at": _TIME,
        "dead_at": _TIME,
        "created_at": {"type": "string", "format": "date-time"},
        "local_fire_at": _NS,
        "start_wall": _NS,
        "fire_release": _NS,
        "paused_at": {**_TIME, "description": "since when it is paused (state `paused`)"},
    }
)
_ADD: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "at": {
            **_S,
            "description": "ISO 8601, +15m, now, a local time in tz, tomorrow 9am, in 2 hours",
        },
        "tz": {**_S, "description": "IANA zone"},
        "rrule": _S,
        "cron": _S,
        "emails": {"type": "array", "items": _S},
        "webhooks": {"type": "array", "items": _S},
        "notify": {"type": "array", "items": _S},
        "targets": {"type": "array", "items": _obj({"channel": _S, "address": _S})},
        "webhook_secret": {"oneOf": [_S, {"type": "array", "items": _S}]},
        "subject": _S,
        "body": _S,
        "data": {"description": "any JSON value, passed to webhooks"},
        "key": {**_S, "description": "idempotency key (or the Idempotency-Key header)"},
        "misfire_grace": {**_S, "description": "90s, 15m, 1h, 1d"},
    },
}
_CHANGES = _obj(
    {
        "changes": {
            "type": "array",
            "items": _obj(
                {
                    "id": _INT,
                    "applied": {"type": "boolean"},
                    "fire_at": _TIME,
                    "skipped": _NS,
                }
            ),
        }
    }
)
_SENT_FAILED = _obj({"sent": _INT, "failed": _INT})
# `stats --json`'s object (api/jsonforms.py).
_STATS = _obj(
    {
        "at": {"type": "string", "format": "date-time"},
        "reminders": _obj({k: _INT for k in ("pending", "done", "dead", "cancelled", "paused")}),
        **{
            k: _INT
            for k in (
                "due",
                "retrying",
                "leased",
                "dead_letters",
                "dead_reminders",
                "retrying_targets",
                "disabled_targets",
                "moved_fires",
            )
        },
        "queue_paused_since": {
            **_TIME,
            "description": "since when the whole queue is paused: ticks deliver nothing",
        },
        "oldest_due_at": _TIME,
        "oldest_due_lateness_s": _NUM,
        "deliveries": _obj({"last_hour": _SENT_FAILED, "last_day": _SENT_FAILED}),
        "last_successful_tick": _TIME,
        "hosts": {
            "type": "array",
            "items": _obj({"host": _S, "last_tick": _TIME, "clock_offset_s": _NUM}),
        },
    }
)
_HISTORY = _obj(
    {
        "reminder": _ref("Reminder"),
        "attempts": {
            "type": "array",
            "items": _obj(
                {
                    "at": _TIME,
                    "fire_at": _TIME,
                    "target": {"oneOf": [_ref("Target"), {"type": "null"}]},
                    "outcome": {"enum": ["sent", "failed", "permanent"]},
                    "error": _NS,
                    "attempt": _INT,
                }
            ),
        },
        "dead_letters": {
            "type": "array",
            "items": _obj(
                {
                    "fire_at": _TIME,
                    "dead_at": _TIME,
                    "error_count": _INT,
                    "last_error": _NS,
                    "retried_at": _TIME,
                }
            ),
        },
        "target_retries": {
            "type": "array",
            "items": _obj(
                {
                    "fire_at": _TIME,
                    "target": {"oneOf": [_ref("Target"), {"type": "null"}]},
                    "error_count": _INT,
                    "last_error": _NS,
                    "next_try_at": _TIME,
                }
            ),
        },
        "changes": {"type": "array", "items": _obj({"at": _TIME, "change": _S})},
        "moved_fires": {
            "type": "array",
            "items": _obj(
                {
                    "old_fire_at": _TIME,
                    "new_fire_at": _TIME,
                    "old_release": _S,
                    "new_release": _S,
                    "moved_at": _TIME,
                }
            ),
        },
    }
)
_PROBLEM = {
    "type": "object",
    "properties": {
        "type": _S,
        "title": _S,
        "status": _INT,
        "detail": _S,
        "field": _S,
        "fields": {"type": "array", "items": _S},
        "existing_id": {**_INT, "description": "409: the reminder that holds the key"},
    },
    "required": ["type", "title", "status", "detail"],
}
_RETRY_AFTER = {
    "Retry-After": {"description": "seconds to wait before trying again", "schema": _INT}
}
# What each error status means here; problems.py says which error has which status.
_DESCRIBED = {
    400: "Bad input: `field` names it",
    401: "No valid token (`Authorization: Bearer`)",
    403: "Refused: a change with the read token, or, without a token, a request not from this"
    " machine",
    404: "No such reminder",
    409: "A conflict, nothing changed: the key is held by another reminder whose content"
    " differs (`existing_id` names it), or a change was refused (a tick is delivering the"
    " reminder: try again; or it is done, cancelled or dead)",
    413: "Body too large",
    429: "Too many wrong tokens from this client: try again after `Retry-After` seconds",
    503: "The database is busy or unreachable: try again after `Retry-After` seconds",
}
# Every route can answer these: the token (401), the role or the Host (403), the throttle
# (429), the database (503).
_ANY_ROUTE: tuple[type[DuequeueError], ...] = (StoreError,)
_ACCESS = (401, 403, 429)


def _problem(status: int) -> dict[str, Any]:
    found: dict[str, Any] = {
        "description": _DESCRIBED[status],
        "content": {"application/problem+json": {"schema": _ref("Problem")}},
    }
    if status in (429, 503):
        found["headers"] = _RETRY_AFTER
    return found


def errors(*raised: type[DuequeueError], body: bool = False) -> dict[str, Any]:
    """Return a route's error responses: the statuses of the errors it raises (problems.py),
    the access statuses every route has, and 413 when it takes a body."""
    codes = {problems.STATUSES[e][0] for e in (*raised, *_ANY_ROUTE)} | set(_ACCESS)
    if body:
        codes.add(413)
    return {str(code): _problem(code) for code in sorted(codes)}


def _ok(schema: dict[str, Any], description: str = "OK") -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


_ID = {
    "name": "id",
    "in": "path",
    "required": True,
    "schema": {"type": "integer", "minimum": 1, "maximum": 2**63 - 1},
}


def _action(summary: str) -> dict[str, Any]:
    return {
        "post": {
            "summary": summary,
            "parameters": [_ID],
            "responses": {
                "200": _ok(_ref("Changes")),
                **errors(BadInputError, NotFoundError, body=True),
            },
        }
    }


def _body(schema: dict[str, Any]) -> dict[str, Any]:
    return {"required": True, "content": {"application/json": {"schema": schema}}}


def _fields(names: tuple[str, ...]) -> dict[str, Any]:
    props = _ADD["properties"]
    return {
        "type": "object",
        "additionalProperties": False,
        "properties": {n: props[n] for n in names},
    }


_CHANGED = _obj({"reminder": _ref("Reminder"), "notes": {"type": "array", "items": _S}})
_FILTER = {
    "state": {"enum": _STATES},
    "search": {**_S, "description": "part of a subject, key or target, as the list's search"},
    "dry_run": {"type": "boolean", "description": "count and list the ids; change nothing"},
}
_BULK = _obj(
    {
        "matched": {**_INT, "description": "reminders the filter matched (at most 10,000)"},
        "more": {"type": "boolean", "description": "more matched than one go takes"},
        "ids": {"type": "array", "items": _INT, "description": "dry_run: the ids matched"},
        "changes": _CHANGES["properties"]["changes"],
    },
    ["matched", "more"],
)
_PAUSE = _obj({"paused": {"type": "boolean"}, "since": _TIME, "changed": {"type": "boolean"}})


def _post(summary: str, ok: dict[str, Any], raised: tuple[type[DuequeueError], ...],
          body: dict[str, Any] | None = None, rid: bool = True) -> dict[str, Any]:  # fmt: skip
    op: dict[str, Any] = {"summary": summary, "parameters": [_ID] if rid else []}
    if body is not None:
        op["requestBody"] = _body(body)
    op["responses"] = {"200": _ok(ok), **errors(*raised, body=True)}
    return {"post": op}


def _changes() -> dict[str, Any]:
    """Return the paths of the changes beyond add, retry, cancel and enable (api_changes.py)."""
    refused = (BadInputError, NotFoundError, ChangeRefusedError)
    by_id = (BadInputError, NotFoundError)
    return {
        "/api/v1/reminders/{id}/reschedule": _post(
            "Move its next fire, or give it a new rule or zone (as `reschedule`)",
            _CHANGED, refused, _fields(("at", "tz", "rrule", "cron")),
        ),
        "/api/v1/reminders/{id}/edit": _post(
            "Change its subject, body, data or targets (as `edit`)",
            _CHANGED, refused,
            _fields(("subject", "body", "data", "emails", "webhooks", "notify", "targets",
                     "webhook_secret")),
        ),
        "/api/v1/reminders/{id}/pause": _post("Pause it (as `pause ID`)", _ref("Changes"), by_id),
        "/api/v1/reminders/{id}/resume": _post(
            "Resume it (as `resume ID`)", _ref("Changes"), by_id
        ),
        "/api/v1/reminders/cancel": _post(
            "Cancel the reminder holding a key (`{\"key\": K}`, as `cancel --key`), or every"
            " reminder a filter matches (`state`, required: `all` for every one; `search`)",
            {"anyOf": [_ref("Changes"), _BULK]}, by_id,
            {"type": "object", "additionalProperties": False,
             "properties": {"key": _S, **_FILTER}},
            rid=False,
        ),
        "/api/v1/reminders/retry": _post(
            "Re-arm the dead fires of every reminder a filter matches (default state: dead)",
            _BULK, (BadInputError,),
            {"type": "object", "additionalProperties": False, "properties": _FILTER},
            rid=False,
        ),
        "/api/v1/queue/pause": _post(
            "Pause the whole queue: ticks deliver nothing (as `pause`)", _PAUSE, (BadInputError,),
            rid=False
        ),
        "/api/v1/queue/resume": _post(
            "Resume the whole queue (as `resume`)", _PAUSE, (BadInputError,), rid=False
        ),
    }  # fmt: skip


def document(read_only: bool) -> dict[str, Any]:
    """Return the OpenAPI document of this server (no write operations with `read_only`)."""
    paths: dict[str, Any] = {
        "/api/v1/reminders": {
            "get": {
                "summary": "List reminders, newest first (keyset pages)",
                "parameters": [
                    {"name": "state", "in": "query", "schema": {"enum": _STATES}},
                    {
                        "name": "search",
                        "in": "query",
                        "description": "part of the subject, key or a target's address as "
                        "shown (secrets masked, never searched); at most 20,000 reminders "
                        "are read a page (see `partial`)",
                        "schema": {"type": "string"},
                    },
                    {
                        "name": "before",
                        "in": "query",
                        "schema": {"type": "integer", "minimum": 1, "maximum": 2**63 - 1},
                    },
                    {
                        "name": "limit",
                        "in": "query",
                        "schema": {"type": "integer", "minimum": 1, "maximum": 1000},
                    },
                ],
                "responses": {
                    "200": _ok(
                        _obj(
                            {
                                "reminders": {"type": "array", "items": _ref("Reminder")},
                                "next_before": {"type": ["integer", "null"]},
                                # A search read its window before the page was full; the
                                # next page (next_before) goes on below what it read.
                                "partial": {"type": "boolean"},
                            }
                        )
                    ),
                    **errors(BadInputError),
                },
            },
        },
        "/api/v1/reminders/{id}": {
            "get": {
                "summary": "One reminder and its next 5 fires",
                "parameters": [_ID],
                "responses": {
                    "200": _ok(
                        {
                            "allOf": [
                                _ref("Reminder"),
                                _obj(
                                    {
                                        "next_fires": {
                                            "type": "array",
                                            "items": _obj({"local": _S, "utc": _S}),
                                        }
                                    }
                                ),
                            ]
                        }
                    ),
                    **errors(NotFoundError),
                },
            }
        },
        "/api/v1/reminders/{id}/history": {
            "get": {
                "summary": "Every attempt, dead letter and target retry",
                "parameters": [_ID],
                "responses": {"200": _ok(_ref("History")), **errors(NotFoundError)},
            }
        },
        "/api/v1/stats": {
            "get": {
                "summary": "Counts, as `duequeue stats --json`",
                "responses": {"200": _ok(_ref("Stats")), **errors()},
            }
        },
    }
    if not read_only:
        paths["/api/v1/reminders"]["post"] = {
            "summary": "Add a reminder (Queue.add's fields)",
            "parameters": [{"name": "Idempotency-Key", "in": "header", "schema": _S}],
            "requestBody": {
                "required": True,
                "content": {"application/json": {"schema": _ref("AddReminder")}},
            },
            "responses": {
                "201": _ok(_ref("Added"), "Added"),
                "200": _ok(_ref("Added"), "The key existed: nothing added"),
                **errors(BadInputError, KeyConflictError, body=True),
            },
        }
        paths["/api/v1/reminders/{id}/retry"] = _action("Re-arm its dead fire (as `retry`)")
        paths["/api/v1/reminders/{id}/cancel"] = _action("Cancel it (as `cancel`)")
        paths["/api/v1/reminders/{id}/enable"] = _action("Enable its 410'd targets")
        paths.update(_changes())
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "duequeue",
            "version": "1",
            "description": "The HTTP API of `duequeue serve`.",
        },
        "paths": paths,
        "security": [{"bearer": []}],
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
            "schemas": {
                "Target": _TARGET,
                "Reminder": _REMINDER,
                "AddReminder": _ADD,
                "Added": _obj(
                    {
                        "id": _INT,
                        "created": {"type": "boolean"},
                        "notes": {"type": "array", "items": _S},
                    }
                ),
                "Changes": _CHANGES,
                "Stats": _STATS,
                "History": _HISTORY,
                "Problem": _PROBLEM,
            },
        },
    }
