"""Validate what a user gives `add`: addresses, URLs, JSON data and the documented size limits.

Every check raises BadInputError with one line; a check of one value of a field is named by the
field's name (`subject`, `data`), a check of an address by its caller, who knows which target it
is (`webhooks[1]`). Nothing is written before these pass.
"""

import functools
import json
import re
from collections.abc import Iterable
from typing import Any

from duequeue.channels.signing import parse_secrets
from duequeue.errors import BadInputError, ConfigError

MAX_SUBJECT = 255
MAX_BODY = 65_536
MAX_DATA = 16_384
# Arrays and objects nested in --data. The payload wraps it two levels deeper, and receivers'
# parsers stop at 100 (Ruby), 128 (serde_json) or about 1,000 (Python, and our own tick).
MAX_DATA_DEPTH = 64
MAX_KEY = 200
MAX_TARGETS = 20
MAX_EMAIL = 254
MAX_URL = 2048

# A pragmatic addr-spec: what SMTP servers accept in RCPT TO, without the quoted and commented
# forms nobody uses for reminders (and that would let one flag smuggle in several recipients).
_EMAIL = re.compile(r"^[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]+@[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?$")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
# A body may have tabs and line breaks; nothing else below 0x20 belongs in a text message, and
# NUL in particular is cut or refused by SMTP servers and C receivers.
_BODY_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_LABEL = re.compile(r"^(?!-)[A-Za-z0-9_-]{1,63}(?<!-)$")
MAX_HOST = 253


def utf8(fields: Iterable[tuple[str, str | None]]) -> None:
    """Raise unless every (field, value) is encodable text.

    Arguments that are not valid UTF-8 reach Python as lone surrogates; they could be neither
    stored nor sent, so they are refused up front with the field's name.
    """
    for field, value in fields:
        if value is None:
            continue
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise BadInputError("not valid UTF-8 text", field=field) from None


def subject(text: str) -> str:
    """Return a valid subject (one line: it becomes an email header) or raise."""
    if len(text) > MAX_SUBJECT:
        raise BadInputError(f"longer than {MAX_SUBJECT} characters", field="subject")
    if _CONTROL.search(text):
        raise BadInputError("must be one line without control characters", field="subject")
    return text


def body(text: str) -> str:
    """Return a valid body or raise."""
    if len(text.encode("utf-8")) > MAX_BODY:
        raise BadInputError(f"larger than {MAX_BODY} bytes", field="body")
    if _BODY_CONTROL.search(text):
        raise BadInputError("control characters other than tab and line breaks", field="body")
    return text


def data(text: str | None, field: str = "data") -> str | None:
    """Return the JSON text in canonical compact form, or raise."""
    if text is None:
        return None
    if len(text) > 4 * MAX_DATA:  # whitespace aside, far past the limit: do not parse it
        raise BadInputError(f"larger than {MAX_DATA} bytes", field=field)
    try:
        value = json.loads(text, parse_constant=reject_constant)
    except RecursionError:
        raise BadInputError(_TOO_DEEP, field=field) from None
    except ValueError as exc:
        raise BadInputError(f"not valid JSON ({exc})", field=field) from None
    return data_value(value, field)


_TOO_DEEP = f"nested too deeply (at most {MAX_DATA_DEPTH} levels of arrays and objects)"


def data_value(value: Any, field: str = "data") -> str:
    """Return an already parsed JSON value in canonical compact form, or raise.

    Refused here, not at delivery, is whatever every send would fail on: a number beyond a
    double (`1e400` parses as infinity, which JSON cannot carry), a lone surrogate from a
    `\\ud800` escape (not Unicode text, so it cannot be encoded), and nesting too deep to parse.
    """
    if _too_deep(value):
        raise BadInputError(_TOO_DEEP, field=field)
    if _beyond_a_double(value):
        # Python keeps such an integer exactly, but a receiver's JSON parser (JavaScript's,
        # Go's float64, Python's float()) turns it into Infinity or fails on it.
        raise BadInputError("a number is too large (beyond about 1.8e308)", field=field)
    try:
        compact = _encoder().encode(value)
    except ValueError:
        # Only infinity gets here (NaN was refused while parsing): a number beyond a double.
        raise BadInputError("a number is too large (beyond about 1.8e308)", field=field) from None
    except TypeError as exc:  # a Python value JSON has no form for (a set, a datetime)
        raise BadInputError(f"not a JSON value ({exc})", field=field) from None
    try:
        encoded = compact.encode("utf-8")
    except UnicodeEncodeError:
        raise BadInputError(
            "a string holds a lone surrogate (such as \\ud800), which is not text", field=field
        ) from None
    if len(encoded) > MAX_DATA:
        raise BadInputError(f"larger than {MAX_DATA} bytes", field=field)
    return compact


@functools.cache
def _encoder() -> json.JSONEncoder:
    # Built once: json.dumps with options builds a new encoder per call, and `import` calls this
    # once a line.
    return json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def _too_deep(value: Any) -> bool:
    # A loop, not recursion: the point is to stop nesting before anything recursive meets it.
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Iterable[Any] = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > MAX_DATA_DEPTH:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


def _beyond_a_double(value: Any) -> bool:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, int) and not isinstance(item, bool):
            try:
                float(item)
            except OverflowError:
                return True
    return False


def reject_constant(name: str) -> None:
    """Refuse NaN, Infinity and -Infinity, which Python's json reader accepts.

    They are Python's extension, not JSON: receivers could not parse them.
    """
    raise ValueError(f"{name} is not a JSON value")


def key(text: str | None) -> str | None:
    """Return a valid idempotency key or raise."""
    if text is None:
        return None
    if not text or len(text) > MAX_KEY or _CONTROL.search(text):
        raise BadInputError(f"1 to {MAX_KEY} characters without control characters", field="key")
    return text


# The inputs a reminder's targets come from, named together when their count is wrong.
TARGET_FIELDS = ("emails", "webhooks", "notify", "targets")


def target_count(n: int) -> None:
    """Raise unless 1 to MAX_TARGETS targets were given."""
    if n == 0:
        raise BadInputError("give at least one target", field=TARGET_FIELDS)
    if n > MAX_TARGETS:
        raise BadInputError(f"at most {MAX_TARGETS} targets per reminder", field=TARGET_FIELDS)


def webhook_secrets(secrets: tuple[str, ...], webhooks: int) -> tuple[str | None, ...]:
    """Return each webhook's own secret (None: DUEQUEUE_WEBHOOK_SECRET), or raise.

    One secret signs every webhook of the reminder; as many as there are webhooks pair up in
    order. A value may hold several secrets, space-separated: rotation.
    """
    if not secrets:
        return (None,) * webhooks
    if webhooks == 0:
        raise BadInputError("given without a webhook", field="webhook_secret")
    if len(secrets) not in (1, webhooks):
        raise BadInputError(
            f"{len(secrets)} given for {webhooks} webhooks; give one for all, or one per "
            "webhook in the same order",
            field="webhook_secret",
        )
    for i, secret in enumerate(secrets):
        field = "webhook_secret" if len(secrets) == 1 else f"webhook_secret[{i}]"
        utf8([(field, secret)])
        try:
            parse_secrets(secret, field)
        except ConfigError as exc:
            raise BadInputError(str(exc).removeprefix(f"{field}: "), field=field) from None
    normal = tuple(" ".join(p for p in s.split(" ") if p) for s in secrets)
    return normal * webhooks if len(normal) == 1 else normal
