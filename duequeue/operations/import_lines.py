"""Read JSON Lines for `import`: one reminder per line, with Queue.add's fields, validated
exactly as `add` validates."""

import contextlib
import gc
import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any, NamedTuple

from duequeue.errors import BadInputError, KeyConflictError
from duequeue.operations.add import AddRequest, build_reminder
from duequeue.operations.import_spool import Spool
from duequeue.rules import validate
from duequeue.shared.timefmt import to_ms
from duequeue.store.records import NewReminder
from duequeue.store.store import Store

# The fields of a line: Queue.add's keyword arguments, spelled the same.
FIELDS = (
    "at",
    "tz",
    "rrule",
    "cron",
    "emails",
    "webhooks",
    "notify",
    "targets",
    "webhook_secret",
    "subject",
    "body",
    "data",
    "key",
    "misfire_grace",
)
# Names lines had before they matched Queue.add's; still read, with a note.
OLD_NAMES = {"email": "emails", "webhook": "webhooks"}
_KNOWN = frozenset(FIELDS) | frozenset(OLD_NAMES)
_TEXT_FIELDS = ("at", "tz", "rrule", "cron", "subject", "body", "key", "misfire_grace")
_TEXT_SET = frozenset(_TEXT_FIELDS)
# The most entries of build_reminder's memo (time fields and target addresses seen before):
# a file of few distinct times and addresses computes each once; one of all distinct ones
# holds a few MB at most before the memo starts again.
MEMO_SIZE = 4_096
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


class Parsed(NamedTuple):
    """An import's validated reminders, spooled, and what the user should know about its lines."""

    spool: Spool
    notes: list[str]
    blank: list[int]  # the numbers of the blank lines, to name a spooled reminder's line


def parse_lines(
    lines: Iterable[bytes | str],
    default_tz: str,
    now: datetime,
    progress: Callable[[int], None] | None = None,
    *,
    settings: Mapping[str, Any] | None = None,
) -> Parsed:
    """Validate every line into a reminder; raise on the first bad one, naming its line number.

    The reminders go to a Spool (a temporary file) as they are made, so memory does not grow
    with the input; the caller closes it. Blank lines are skipped but counted, so N is the line
    number an editor shows. `progress` is called with the size of each line read.
    """
    spool = Spool()
    old: set[str] = set()
    blank: list[int] = []
    settings = settings or {}
    memo: dict[Any, Any] = {}
    try:
        for number, raw in enumerate(lines, 1):
            if progress is not None:
                progress(len(raw))
            if raw.strip():
                if len(memo) >= MEMO_SIZE:
                    memo.clear()
                spool.add(_line(raw, number, default_tz, now, settings, old, memo))
            else:
                blank.append(number)
    except BaseException:
        spool.close()
        raise
    notes = [
        f"note: field {name!r} is read as {OLD_NAMES[name]!r}, its name in Queue.add; "
        "rename it, the old name may go"
        for name in sorted(old)
    ]
    return Parsed(spool, notes, blank)


def _line(
    raw: bytes | str,
    number: int,
    default_tz: str,
    now: datetime,
    settings: Mapping[str, Any],
    old: set[str],
    memo: dict[Any, Any] | None = None,
) -> NewReminder:
    try:
        # Decoding first spares json its encoding sniffing, and says what is wrong plainly.
        text = raw if isinstance(raw, str) else raw.decode("utf-8")
        obj = _DECODER.decode(text)
    except UnicodeDecodeError:
        raise BadInputError("not UTF-8 text", line=number) from None
    except RecursionError:
        raise BadInputError("nested too deeply", line=number) from None
    except ValueError as exc:
        raise BadInputError(f"not valid JSON ({exc})", line=number) from None
    if not isinstance(obj, dict):
        raise BadInputError("expected a JSON object, one reminder per line", line=number)
    if not _KNOWN.issuperset(obj):
        unknown = sorted(set(obj) - _KNOWN)
        raise BadInputError(
            f"unknown field {unknown[0]!r}; known: {', '.join(FIELDS)}", line=number
        )
    renamed = {}
    for name, new in OLD_NAMES.items():
        if name in obj:
            if new in obj:
                raise BadInputError(f"give {new!r} or {name!r}, not both", line=number)
            old.add(name)
            renamed[new] = name
            obj[new] = obj.pop(name)
    try:
        for name, value in obj.items():  # the line's few fields, not all eight text ones
            if value is not None and type(value) is not str and name in _TEXT_SET:
                _not_text(obj)
        get = obj.get
        req = AddRequest(
            at=get("at"),
            tz=get("tz"),
            rrule=get("rrule"),
            cron=get("cron"),
            emails=_texts(obj, "emails") if "emails" in obj else (),
            webhooks=_texts(obj, "webhooks") if "webhooks" in obj else (),
            notify=_texts(obj, "notify") if "notify" in obj else (),
            targets=_pairs(obj) if "targets" in obj else (),
            webhook_secrets=_texts(obj, "webhook_secret") if "webhook_secret" in obj else (),
            subject=get("subject") or "Reminder",
            body=get("body") or "",
            data=get("data"),  # already parsed: no second json round trip
            key=get("key"),
            misfire_grace=get("misfire_grace"),
        )
        reminder = build_reminder(req, default_tz, now, settings=settings, memo=memo)
    except BadInputError as exc:
        # Named as the line named it: `email[0]` in a line that still says "email".
        fields = tuple(_as_written(f, renamed) for f in exc.fields)
        raise exc.with_field(fields).at_line(number) from None
    return reminder


def _not_text(obj: dict[str, Any]) -> None:
    """Raise for the first text field (in _TEXT_FIELDS' order) that is not a string."""
    for name in _TEXT_FIELDS:
        value = obj.get(name)
        if value is not None and not isinstance(value, str):
            raise BadInputError(f"expected a string, got {json.dumps(value)[:40]}", field=name)


def _as_written(field: str, renamed: dict[str, str]) -> str:
    name, bracket, rest = field.partition("[")
    return renamed.get(name, name) + bracket + rest


def _texts(obj: dict[str, Any], name: str) -> tuple[str, ...]:
    value = obj.get(name)
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise BadInputError("expected a string or a list of strings", field=name)


def _pairs(obj: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    value = obj.get("targets")
    if value is None:
        return ()
    if not isinstance(value, list):
        raise BadInputError("expected a list of [channel, address] pairs", field="targets")
    # build_reminder checks each pair and names the bad one (`targets[1]`).
    return tuple(tuple(v) if isinstance(v, list) else v for v in value)


def write(
    store: Store, reminders: Iterable[NewReminder], now: datetime, blank: Sequence[int] = ()
) -> tuple[int, int]:
    """Store validated reminders in one transaction; return (imported, skipped).

    A line whose key a live reminder holds is skipped when it is that reminder (the same
    content, as `add` compares it); with other content it is a conflict, and the import writes
    nothing: KeyConflictError naming how many lines and which (`blank`: the blank lines'
    numbers, which the reminders' positions skip).
    """
    try:
        return store.add_many(reminders, to_ms(now))
    except KeyConflictError as exc:
        if not exc.conflicts:
            raise
        raise _conflicting(exc, blank) from None


_SHOWN = 10  # conflicting lines named one by one; the rest are counted


def _conflicting(exc: KeyConflictError, blank: Sequence[int]) -> KeyConflictError:
    """Return the store's conflicts as one error naming the lines of the file."""
    lines = tuple(
        (_line_number(position, blank), key, rid, differ)
        for position, key, rid, differ in exc.conflicts
    )
    count = len(lines)
    shown = "; ".join(
        f"line {line}: key {key!r} is reminder {rid}'s, which differs ({differ})"
        for line, key, rid, differ in lines[:_SHOWN]
    )
    more = f"; and {count - _SHOWN} more" if count > _SHOWN else ""
    which = "1 line names" if count == 1 else f"{count} lines name"
    return KeyConflictError(
        f"{which} a live key with other content, so nothing was imported: {shown}{more} "
        "(`duequeue edit` / `reschedule` change a reminder, `cancel` frees its key)",
        field=None,
        existing=exc.existing,
        conflicts=lines,
    )


def _line_number(position: int, blank: Sequence[int]) -> int:
    """Return the line number of the `position`th reminder (from 1), past the blank lines."""
    line = position
    for number in blank:  # ascending
        if number > line:
            break
        line += 1
    return line
