"""The webhook channel: POST a JSON event signed per Standard Webhooks, return an Outcome."""

import functools
import json
import os
import ssl
import time
import urllib.parse
from collections.abc import Callable
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING

from duequeue.channels.aiohttp_poster import AiohttpPoster, PostFailed
from duequeue.channels.base import SENT, TRANSIENT_4XX, Message, Outcome
from duequeue.channels.netguard import Guard
from duequeue.channels.signing import Signer, parse_secrets
from duequeue.errors import ConfigError
from duequeue.shared.timefmt import iso, to_ms
from duequeue.shared.version import __version__

if TYPE_CHECKING:
    from aiohttp.abc import AbstractResolver

_SNIPPET_CHARS = 200


def build_payload(msg: Message) -> bytes:
    """Return the compact UTF-8 JSON body of one reminder.fired event:

    {"type":"reminder.fired","timestamp":FIRE_AT,"data":{"reminder_id":ID,"fire_at":FIRE_AT,
     "subject":SUBJECT,"body":BODY,"data":DATA}}

    Byte for byte what json.dumps(event, ensure_ascii=False, allow_nan=False,
    separators=(",", ":")) gives (a test holds it to that), assembled from its encoded parts: a
    dict and a full encoder pass per message cost five times as much, a measurable share of a
    large tick. `timestamp` is the fire instant, not the send time: the body (and so the signed
    content) stays the same across retries, which lets a receiver deduplicate on content as
    well as on webhook-id.
    """
    fire_at = _iso(msg.fire_at)
    data = "null" if msg.data is None else _ENCODER.encode(msg.data)
    return (
        f'{{"type":"reminder.fired","timestamp":{fire_at},"data":{{'
        f'"reminder_id":{int(msg.reminder_id)},"fire_at":{fire_at},'
        f'"subject":{_string(msg.subject)},"body":{_string(msg.body)},"data":{data}}}}}'
    ).encode()


# One encoder for every payload's `data`: json.dumps with options builds a new one per call.
_ENCODER = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":"))
_string = _ENCODER.encode  # a str encodes as a JSON string, escaped as in the full encoding


@functools.lru_cache(maxsize=4096)
def _iso(fire_at: datetime) -> str:
    # The rows of one tick mostly share a handful of fire instants (cron's minute, an hour).
    # Returned JSON-encoded, quotes included, ready to go into the body.
    text = iso(to_ms(fire_at))
    assert text is not None
    return _string(text)


class WebhookChannel:
    """Deliver messages as signed webhook POSTs through one pooled HTTP client.

    Use as `async with WebhookChannel(...) as channel:`; `send` may run concurrently from many
    tasks, at most `max_connections` at once: the caller bounds them (a tick's pool of workers,
    an alert's one send at a time), as a send beyond them would wait for a pooled connection
    with its `timeout`, which covers one attempt from connect to the last byte read, running.
    A semaphore of the channel's own cost every send of a tick a few thousand instructions to
    repeat the bound its workers already keep.
    """

    def __init__(
        self,
        *,
        secret: str | None,
        timeout: float,
        clock: Callable[[], float] = time.time,
        max_connections: int = 100,
        max_response_bytes: int = 65536,
        block_private: bool = False,
        guard: Guard | None = None,
        resolver: "Callable[[], AbstractResolver] | None" = None,
    ) -> None:
        self._signer = Signer(parse_secrets(secret)) if secret is not None else None
        self._timeout = timeout
        self._clock = clock
        self._max_connections = max_connections
        self._max_response_bytes = max_response_bytes
        self._guard = guard or (Guard() if block_private else None)
        self._resolver = resolver
        self._poster: AiohttpPoster | None = None

    async def __aenter__(self) -> "WebhookChannel":
        """Open the HTTP connection pool."""
        self._poster = AiohttpPoster(
            timeout=self._timeout,
            max_connections=self._max_connections,
            max_response_bytes=self._max_response_bytes,
            ssl_context=_tls_context,
            guard=self._guard,
            resolver=self._resolver,
            headers=_HEADERS,
        )
        return self

    async def __aexit__(self, *exc: object) -> None:
        """Close the connection pool."""
        poster, self._poster = self._poster, None
        if poster is not None:
            await poster.aclose()

    async def send(self, msg: Message, url: str, secret: str | None = None) -> Outcome:
        """POST one message to `url` and return its outcome; never raise.

        `secret`: the target's own secret(s), space-separated, signing instead of the channel's.
        """
        try:
            body = build_payload(msg)
        except (TypeError, ValueError) as exc:
            # The same data will never serialise, so retrying cannot help.
            return Outcome("permanent", f"cannot build the payload: {exc}")
        try:
            signer = self._signer if secret is None else _target_signer(secret)
        except ConfigError:
            # Checked at `add`; a stored secret that no longer parses is not retried into.
            return Outcome("permanent", "the target's webhook secret is not valid")
        try:
            return await self._post(msg.delivery_id, url, body, signer)
        except Exception as exc:  # the channel contract: report, never raise
            return Outcome("failed", _redact(f"{type(exc).__name__}: {exc}", url))

    async def _post(self, msg_id: str, url: str, body: bytes, signer: Signer | None) -> Outcome:
        poster = self._poster
        if poster is None:
            return Outcome("failed", "webhook channel used outside 'async with'")
        timestamp = int(self._clock())
        # The poster sends _HEADERS ahead of these.
        headers = {"webhook-id": msg_id, "webhook-timestamp": str(timestamp)}
        if signer is not None:
            headers["webhook-signature"] = signer.sign(msg_id, timestamp, body)
        try:
            # The poster bounds the whole attempt by self._timeout.
            posted = await poster.post(url, body, headers)
        except PostFailed as exc:
            return Outcome(exc.status, _redact(exc.message, url))
        retry_after = None
        if posted.retry_after is not None:
            retry_after = parse_retry_after(posted.retry_after, self._clock())
        return _classify(posted.status, posted.head, retry_after)


@functools.lru_cache(maxsize=1024)
def _target_signer(secret: str) -> Signer:
    # Targets of one receiver share a secret: decode it and key its HMAC once per process.
    return Signer(parse_secrets(secret, "--webhook-secret"))


_HEADERS = {
    "content-type": "application/json",
    "user-agent": f"duequeue/{__version__}",
    "accept": "*/*",
    # The body is only read for an error snippet; a compressed one could expand far beyond
    # max_response_bytes.
    "accept-encoding": "identity",
}


@functools.cache
def _tls_context() -> ssl.SSLContext:
    # Loading the CA bundle costs tens of milliseconds; every channel of the process shares it.
    # Mozilla's CA bundle (certifi), or SSL_CERT_FILE / SSL_CERT_DIR when set (a private CA).
    if cafile := os.environ.get("SSL_CERT_FILE"):
        return ssl.create_default_context(cafile=cafile)
    if capath := os.environ.get("SSL_CERT_DIR"):
        return ssl.create_default_context(capath=capath)
    import certifi  # lazy: only an https:// webhook needs it

    return ssl.create_default_context(cafile=certifi.where())


def _classify(status: int, head: bytes, retry_after: float | None) -> Outcome:
    if 200 <= status < 300:
        return SENT
    if 300 <= status < 400:
        return Outcome("failed", f"HTTP {status} redirect not followed")
    snippet = _snippet(head)
    error = f"HTTP {status}: {snippet}" if snippet else f"HTTP {status}"
    if status == 410:
        # Standard Webhooks: the receiver removed the endpoint and asks the sender to stop.
        return Outcome("permanent", error + " (endpoint gone: target disabled)", gone=True)
    if 400 <= status < 500 and status not in TRANSIENT_4XX:
        return Outcome("permanent", error)
    return Outcome("failed", error, retry_after)


def _snippet(head: bytes) -> str:
    text = head[: _SNIPPET_CHARS * 4].decode("utf-8", errors="replace")
    # One line of printable text: the error ends up in logs, tables and terminals.
    text = " ".join("".join(ch if ch.isprintable() else " " for ch in text).split())
    return text if len(text) <= _SNIPPET_CHARS else text[:_SNIPPET_CHARS] + "..."


def parse_retry_after(value: str, now: float) -> float | None:
    """Return the seconds a Retry-After value asks to wait (delta or HTTP-date), None if invalid."""
    value = value.strip()
    if value.isascii() and value.isdigit():
        return float(min(int(value), 10**9))
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when.tzinfo is None:
        # RFC 9110 HTTP-dates are GMT; parsedate_to_datetime returns naive for "-0000".
        when = when.replace(tzinfo=UTC)
    return max(0.0, when.timestamp() - now)


def _redact(text: str, url: str) -> str:
    # Webhook URLs often carry a token (in the path, query or userinfo); errors must not echo it.
    text = " ".join(text.split())
    secrets = [url]
    try:
        parts = urllib.parse.urlsplit(url)
        # The path keeps its leading slash, as a message quoting the URL would have it: bare,
        # a path such as /refused would blank out "connection refused".
        secrets += [parts.password or "", parts.path, parts.query]
    except ValueError:
        pass
    # Short fragments ("/", "/v1") are not secrets, and replacing them would garble the message.
    for secret in sorted((s for s in secrets if len(s) >= 6), key=len, reverse=True):
        text = text.replace(secret, "***")
    return text
