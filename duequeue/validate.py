"""Validate what a user gives `add`: addresses, URLs, JSON data and the documented size limits.

Every check raises BadInputError with one line naming the flag, so the CLI exits 2 having written
nothing.
"""

import re
from urllib.parse import urlsplit

from duequeue.errors import BadInputError

MAX_SUBJECT = 255
MAX_BODY = 65_536
MAX_DATA = 16_384
MAX_KEY = 200
MAX_TARGETS = 20
MAX_EMAIL = 254
MAX_URL = 2048

# A pragmatic addr-spec: what SMTP servers accept in RCPT TO, without the quoted and commented
# forms nobody uses for reminders (and that would let one flag smuggle in several recipients).
_EMAIL = re.compile(r"^[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]+@[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?$")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def email_address(address: str) -> str:
    """Return a valid email address or raise."""
    if len(address) > MAX_EMAIL or not _EMAIL.match(address) or ".." in address:
        raise BadInputError(f"--email: {address!r} is not a valid email address")
    return address


def webhook_url(url: str) -> str:
    """Return a valid http(s) webhook URL or raise."""
    if len(url) > MAX_URL:
        raise BadInputError(f"--webhook: URL longer than {MAX_URL} characters")
    if _CONTROL.search(url) or " " in url:
        raise BadInputError(f"--webhook: {url!r} contains spaces or control characters")
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError on a port out of range
    except ValueError as exc:
        raise BadInputError(f"--webhook: {url!r} is not a valid URL ({exc})") from None
    if parts.scheme not in ("http", "https"):
        raise BadInputError(f"--webhook: {url!r} must start with http:// or https://")
    if not parts.hostname:
        raise BadInputError(f"--webhook: {url!r} has no host")
    return url


def subject(text: str) -> str:
    """Return a valid subject (one line: it becomes an email header) or raise."""
    if len(text) > MAX_SUBJECT:
        raise BadInputError(f"--subject: longer than {MAX_SUBJECT} characters")
    if _CONTROL.search(text):
        raise BadInputError("--subject: must be one line without control characters")
    return text


def body(text: str) -> str:
    """Return a valid body or raise."""
    if len(text.encode("utf-8")) > MAX_BODY:
        raise BadInputError(f"--body: larger than {MAX_BODY} bytes")
    return text


def data(text: str | None) -> str | None:
    """Return the JSON text in canonical compact form, or raise."""
    if text is None:
        return None
    import json  # here, not at the top: `tick` imports this module and never needs json

    try:
        value = json.loads(text)
    except ValueError as exc:
        raise BadInputError(f"--data: not valid JSON ({exc})") from None
    compact = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    if len(compact.encode("utf-8")) > MAX_DATA:
        raise BadInputError(f"--data: larger than {MAX_DATA} bytes")
    return compact


def key(text: str | None) -> str | None:
    """Return a valid idempotency key or raise."""
    if text is None:
        return None
    if not text or len(text) > MAX_KEY or _CONTROL.search(text):
        raise BadInputError(f"--key: 1 to {MAX_KEY} characters without control characters")
    return text


def target_count(n: int) -> None:
    """Raise unless 1 to MAX_TARGETS targets were given."""
    if n == 0:
        raise BadInputError("--email/--webhook: give at least one target")
    if n > MAX_TARGETS:
        raise BadInputError(f"--email/--webhook: at most {MAX_TARGETS} targets per reminder")
