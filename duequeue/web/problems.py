"""Every DuequeueError as an HTTP status, in one place, and as an RFC 9457 problem document.

A client retries a 5xx and not a 4xx, so the status says whose fault it is and whether trying
again may help: bad input, a missing reminder and a key held by another reminder are the
client's (4xx); a database that is busy or unreachable may pass (503, Retry-After); a setting of
the server is the operator's (500). tests/unit/test_web_problems.py fails when a class of
duequeue/errors.py has no status here.
"""

from typing import Any

from duequeue.errors import (
    BadInputError,
    ChangeRefusedError,
    ConfigError,
    DatabaseLostError,
    DuequeueError,
    KeyConflictError,
    NotFoundError,
    StoreBusyError,
    StoreError,
)

# Each error class: its status and the problem's title.
STATUSES: dict[type[DuequeueError], tuple[int, str]] = {
    DuequeueError: (500, "Server error"),
    BadInputError: (400, "Bad input"),
    NotFoundError: (404, "Not found"),
    KeyConflictError: (409, "Key conflict"),
    ChangeRefusedError: (409, "Change refused"),
    ConfigError: (500, "Server configuration"),
    StoreError: (503, "Database unavailable"),
    StoreBusyError: (503, "Database busy"),
    DatabaseLostError: (503, "Database unavailable"),
}
# How long a client waits before trying again after a 503.
RETRY_AFTER_S = 1


def status(exc: DuequeueError) -> tuple[int, str]:
    """Return the status and title of an error: its own class's, or its nearest base's."""
    for cls in type(exc).__mro__:
        if cls in STATUSES:
            return STATUSES[cls]
    return STATUSES[DuequeueError]


def problem(
    status: int, title: str, detail: str, fields: tuple[str, ...] = (), **extra: Any
) -> dict[str, Any]:
    """Return an RFC 9457 problem document; `field` names the input at fault."""
    body: dict[str, Any] = {
        "type": "about:blank",
        "title": title,
        "status": status,
        "detail": detail,
    }
    if fields:
        body["field"] = fields[0]
        body["fields"] = list(fields)
    body.update(extra)
    return body


def of_error(exc: DuequeueError) -> dict[str, Any]:
    """Return an error as a problem document: its field, and for a key conflict the id of the
    reminder that holds the key (`existing_id`)."""
    code, title = status(exc)
    extra: dict[str, Any] = {}
    if isinstance(exc, KeyConflictError) and exc.existing is not None:
        extra["existing_id"] = exc.existing
    return problem(code, title, exc.detail, exc.fields, **extra)
