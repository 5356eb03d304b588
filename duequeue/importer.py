"""Read JSON Lines for `import`: one reminder per line, validated exactly as `add` validates."""

import contextlib
import gc
import json
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from datetime import datetime
from typing import Any

from duequeue import validate
from duequeue.errors import BadInputError
from duequeue.service import AddRequest, build_reminder
from duequeue.spool import Spool
from duequeue.store.base import NewReminder

FIELDS = (
    "at",
    "tz",
    "rrule",
    "cron",
    "email",
    "webhook",
    "webhook_secret",
    "notify",
    "subject",
    "body",
    "data",
    "key",
    "misfire_grace",
)
_KNOWN = frozenset(FIELDS)
_TEXT_FIELDS = ("at", "tz", "rrule", "cron", "subject", "body", "key", "misfire_grace")
_FLAG = re.compile(r"--([a-z]+(?:-[a-z]+)*)")
# One decoder for every line: json.loads with an option builds a new one per call (+3 us a line).
_DECODER = json.JSONDecoder(parse_constant=validate.reject_constant)


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while a large import builds and stores its rows.

    Each chunk of a large import makes tens of thousands of small objects, none of them in a
    cycle; the collector would rescan them again and again (when the rows were all kept, about
    half the import's time). Reference counting still frees everything as usual.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def parse_lines(
    lines: Iterable[bytes],
    default_tz: str,
    now: datetime,
    progress: Callable[[int], None] | None = None,
    *,
    block_private: bool = False,
) -> Spool:
    """Validate every line into a reminder; raise on the first bad one, naming its line number.

    The reminders go to a Spool (a temporary file) as they are made, so memory does not grow
    with the input; the caller closes it. Blank lines are skipped but counted, so N is the line
    number an editor shows. `progress` is called with the bytes of each line read.
    """
    spool = Spool()
    try:
        for number, raw in enumerate(lines, 1):
            if progress is not None:
                progress(len(raw))
            if raw.strip():
                spool.add(_line(raw, number, default_tz, now, block_private))
    except BaseException:
        spool.close()
        raise
    return spool


def _line(
    raw: bytes, number: int, default_tz: str, now: datetime, block_private: bool
) -> NewReminder:
    try:
        # Decoding first spares json its encoding sniffing, and says what is wrong plainly.
        obj = _DECODER.decode(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise BadInputError(f"line {number}: not UTF-8 text") from None
    except RecursionError:
        raise BadInputError(f"line {number}: nested too deeply") from None
    except ValueError as exc:
        raise BadInputError(f"line {number}: not valid JSON ({exc})") from None
    if not isinstance(obj, dict):
        raise BadInputError(f"line {number}: expected a JSON object, one reminder per line")
    unknown = sorted(set(obj) - _KNOWN)
    if unknown:
        raise BadInputError(
            f"line {number}: unknown field {unknown[0]!r}; known: {', '.join(FIELDS)}"
        )
    try:
        for name in _TEXT_FIELDS:
            value = obj.get(name)
            if value is not None and not isinstance(value, str):
                raise BadInputError(f"{name}: expected a string, got {json.dumps(value)[:40]}")
        get = obj.get
        req = AddRequest(
            at=get("at"),
            tz=get("tz"),
            rrule=get("rrule"),
            cron=get("cron"),
            emails=_texts(obj, "email"),
            webhooks=_texts(obj, "webhook"),
            webhook_secrets=_texts(obj, "webhook_secret"),
            notifies=_texts(obj, "notify"),
            subject=get("subject") or "Reminder",
            body=get("body") or "",
            data=None,  # checked below, already parsed: no second json round trip
            key=get("key"),
            misfire_grace=get("misfire_grace"),
        )
        reminder, _ = build_reminder(req, default_tz, now, block_private=block_private)
        if "data" in obj:
            reminder = replace(reminder, data=validate.data_value(obj["data"]))
    except BadInputError as exc:
        # add's messages name flags (--email); here the same thing is a field (email).
        message = _FLAG.sub(lambda m: m[1].replace("-", "_"), str(exc))
        raise BadInputError(f"line {number}: {message}") from None
    return reminder


def _texts(obj: dict[str, Any], name: str) -> tuple[str, ...]:
    value = obj.get(name)
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise BadInputError(f"{name}: expected a string or a list of strings")
