"""What a request brings, read so that no input can make a 500: a JSON body (UTF-8, its
nesting bounded before anything recursive meets it), a form (any encoding or framing a client
can send), and the query's ids, numbers and search text, each refused with a BadInputError
naming it (app.py makes that a 400)."""

import json
import re
from itertools import accumulate
from typing import Any

from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError
from multidict import MultiDictProxy

from duequeue.errors import BadInputError
from duequeue.web.keys import parse_id

# Arrays and objects in a request body: the request's object holds `data`, whose own limit is
# 64 levels (docs/reference.md); nothing else a request holds is deeper than 3.
MAX_DEPTH = 65
# Longer than any subject, key or address a search could be part of.
MAX_SEARCH = 2048
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
# A JSON string, escapes and all (the unrolled form: no backtracking per character).
_STRINGS = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')
# Brackets as +1 and -1 (signed bytes); everything else deleted.
_SIGNS = bytes.maketrans(b"[{]}", b"\x01\x01\xff\xff")
_NOT_BRACKETS = bytes(sorted(set(range(256)) - set(b"[]{}")))


def _deeper_than(limit: int) -> str:
    return f"nested too deeply (at most {limit} levels of arrays and objects)"


async def json_object(request: web.Request) -> dict[str, Any]:
    """Return the request's JSON object, or raise BadInputError naming the body (or the field
    nested too deeply)."""
    if request.content_type != "application/json":
        # A page of another site can POST a form or text/plain without asking; JSON it cannot.
        raise BadInputError("send the reminder as application/json", field="body")
    if request.charset not in (None, "utf-8", "UTF-8"):
        raise BadInputError(f"JSON is UTF-8, not {request.charset[:32]!r}", field="body")
    raw = await request.read()
    # Fewer brackets than the bound cannot nest past it: most bodies stop at this count.
    if raw.count(b"[") + raw.count(b"{") > MAX_DEPTH and nesting(raw) > MAX_DEPTH:
        raise _too_deep(raw)
    try:
        body = json.loads(raw.decode("utf-8"))
    except RecursionError:  # not reached past the check above; kept so it can never be a 500
        raise BadInputError(_deeper_than(MAX_DEPTH), field="body") from None
    except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError alike
        raise BadInputError(f"not JSON: {exc}", field="body") from None
    if not isinstance(body, dict):
        raise BadInputError("expected a JSON object of add's fields", field="body")
    return body


def nesting(raw: bytes) -> int:
    """Return how deep arrays and objects nest in JSON text, counted without parsing it (and so
    without recursion): the strings taken out, then the running sum of its brackets."""
    brackets = _STRINGS.sub(b"", raw).translate(_SIGNS, _NOT_BRACKETS)
    return max(accumulate(memoryview(brackets).cast("b")), default=0)


def _too_deep(raw: bytes) -> BadInputError:
    """Return the error of a body nested too deeply, naming its field when it is an object
    (`data`'s own limit is the one inside it), else the body."""
    if nesting(raw) <= 2 * MAX_DEPTH:  # deeper is not parsed at all
        try:
            body = json.loads(raw.decode("utf-8"))
        except ValueError:
            body = None
        if isinstance(body, dict):
            for name, value in body.items():
                if nesting(json.dumps(value).encode()) > MAX_DEPTH - 1:
                    return BadInputError(_deeper_than(MAX_DEPTH - 1), field=str(name)[:64])
    return BadInputError(_deeper_than(MAX_DEPTH), field="body")


async def form(request: web.Request) -> MultiDictProxy[Any]:
    """Return the request's form fields, or raise BadInputError when it is no form a browser
    sends (bytes that are not its charset, an unknown charset, broken multipart framing)."""
    try:
        return await request.post()
    except web.HTTPException:
        raise  # 413 for a body too large, as aiohttp says it
    except (ValueError, LookupError, HttpProcessingError) as exc:
        # The reason's first line: a multipart error spreads the part it choked on below it.
        why = str(exc).strip().split("\n", 1)[0][:120]
        raise BadInputError(f"not a form: {why}", field="form") from None


def text_field(found: MultiDictProxy[Any], name: str) -> str:
    """Return a form field as text ('' when missing; a file's name is no text)."""
    value = found.get(name, "")
    return value if isinstance(value, str) else ""


def query_id(request: web.Request, name: str) -> int | None:
    """Return a reminder id given in the query (`before`), None when it is not given."""
    text = request.query.get(name)
    if text is None:
        return None
    value = parse_id(text, name)
    if value is None:
        raise BadInputError(f"expected a reminder id, not {text[:32]!r}", field=name)
    return value


def query_int(request: web.Request, name: str, default: int) -> int:
    """Return a whole number given in the query (`limit`), `default` when it is not given."""
    text = request.query.get(name)
    if text is None:
        return default
    if not text.isascii() or not text.isdigit() or len(text) > 6:
        raise BadInputError(f"expected a whole number, not {text[:32]!r}", field=name)
    return int(text)


def query_search(request: web.Request, name: str = "search") -> str | None:
    """Return the search text of the query, None when it is empty or not given."""
    return search_text(request.query.get(name, ""), name)


def search_text(text: str, name: str = "search") -> str | None:
    """Return a search as text to match, None when it is blank; refuse what no subject, key or
    address holds (control characters, bytes that were not UTF-8) and would only trouble the
    database (PostgreSQL refuses a NUL in a query's text)."""
    text = text.strip()
    if not text:
        return None
    if len(text) > MAX_SEARCH:
        raise BadInputError(f"longer than {MAX_SEARCH} characters", field=name)
    if _CONTROL.search(text) or not _utf8(text):
        raise BadInputError("control characters or bytes that are not UTF-8 text", field=name)
    return text


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
