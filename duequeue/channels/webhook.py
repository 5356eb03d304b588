"""The webhook channel: POST a JSON event signed per Standard Webhooks, return an Outcome."""

import asyncio
import functools
import json
import socket
import ssl
import time
import urllib.parse
from collections.abc import Callable
from datetime import UTC
from email.utils import parsedate_to_datetime
from typing import Any

import httpx

from duequeue import __version__
from duequeue.channels.base import Message, Outcome
from duequeue.channels.netguard import BlockedAddressError
from duequeue.channels.signing import parse_secret, sign_with_key
from duequeue.timefmt import iso, to_ms

_SNIPPET_CHARS = 200
# 408, 425 and 429 are the 4xx a server uses to say "not now"; every other 4xx will repeat.
_TRANSIENT_4XX = frozenset({408, 425, 429})
_RETRY_AFTER_STATUSES = frozenset({429, 503})


def build_payload(msg: Message) -> bytes:
    """Return the compact UTF-8 JSON body of one reminder.fired event."""
    fire_at = iso(to_ms(msg.fire_at))
    event = {
        "type": "reminder.fired",
        # The fire instant, not the send time: the body (and so the signed content) stays the same
        # across retries, which lets a receiver deduplicate on content as well as on webhook-id.
        "timestamp": fire_at,
        "data": {
            "reminder_id": msg.reminder_id,
            "fire_at": fire_at,
            "subject": msg.subject,
            "body": msg.body,
            "data": msg.data,
        },
    }
    return json.dumps(event, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode()


class WebhookChannel:
    """Deliver messages as signed webhook POSTs through one pooled HTTP client.

    Use as `async with WebhookChannel(...) as channel:`; `send` may run concurrently from many
    tasks. At most `max_connections` requests are in flight; a send waiting for a free slot does
    not spend its `timeout`, which covers one attempt from connect to the last byte read.
    """

    def __init__(
        self,
        *,
        secret: str | None,
        timeout: float,
        clock: Callable[[], float] = time.time,
        max_connections: int = 100,
        max_response_bytes: int = 65536,
        transport: httpx.AsyncBaseTransport | None = None,
        block_private: bool = False,
    ) -> None:
        self._key = parse_secret(secret) if secret is not None else None
        self._timeout = timeout
        self._clock = clock
        self._max_connections = max_connections
        self._max_response_bytes = max_response_bytes
        self._transport = transport
        self._block_private = block_private
        self._owned = False  # whether __aexit__ closes the transport (it opened it)
        self._slots: asyncio.Semaphore | None = None
        self._extensions: dict[str, Any] = {}

    async def __aenter__(self) -> "WebhookChannel":
        """Open the HTTP connection pool."""
        self._slots = asyncio.Semaphore(self._max_connections)
        if self._transport is None:
            if self._block_private:
                from duequeue.channels.netguard import GuardedTransport

                # The address check sits in httpcore's connect step, so the block takes httpx's
                # own (slower) pool: safety first where webhook URLs come from less trusted users.
                limits = httpx.Limits(
                    max_connections=self._max_connections,
                    max_keepalive_connections=self._max_connections,
                )
                self._transport = GuardedTransport(verify=_tls_context(), limits=limits)
            else:
                from duequeue.channels.aiohttp_transport import AiohttpTransport

                # httpx's own transport posts ~400/s here; aiohttp's pool behind the same httpx
                # types ~4,000/s (BENCHMARKS.md). The AsyncClient layer is skipped too: it adds
                # redirects, cookies and auth this channel never wants, and costs a third of a
                # send.
                self._transport = AiohttpTransport(
                    ssl_context=_tls_context, max_connections=self._max_connections
                )
            self._owned = True
        # The whole attempt runs under asyncio.timeout(self._timeout); these bound each phase.
        self._extensions = {
            "timeout": {"connect": self._timeout, "read": self._timeout, "write": self._timeout}
        }
        return self

    async def __aexit__(self, *exc: object) -> None:
        """Close the connection pool if this channel opened it."""
        transport, self._slots = self._transport, None
        if transport is not None and self._owned:
            self._transport, self._owned = None, False
            await transport.aclose()

    async def send(self, msg: Message, url: str) -> Outcome:
        """POST one message to `url` and return its outcome; never raise."""
        try:
            body = build_payload(msg)
        except (TypeError, ValueError) as exc:
            # The same data will never serialise, so retrying cannot help.
            return Outcome("permanent", f"cannot build the payload: {exc}")
        try:
            return await self._post(msg.delivery_id, url, body)
        except Exception as exc:  # the channel contract: report, never raise
            return Outcome("failed", _redact(f"{type(exc).__name__}: {exc}", url))

    async def _post(self, msg_id: str, url: str, body: bytes) -> Outcome:
        transport, slots = self._transport, self._slots
        if transport is None or slots is None:
            return Outcome("failed", "webhook channel used outside 'async with'")
        status: int | None = None
        head = b""
        retry_header: str | None = None
        async with slots:
            timestamp = int(self._clock())
            headers = {**_HEADERS, "webhook-id": msg_id, "webhook-timestamp": str(timestamp)}
            if self._key is not None:
                headers["webhook-signature"] = sign_with_key(self._key, msg_id, timestamp, body)
            try:
                async with asyncio.timeout(self._timeout):
                    request = httpx.Request(
                        "POST",
                        _url(url),
                        content=body,
                        headers=headers,
                        extensions=self._extensions,
                    )
                    # Straight to the transport: one request, redirects never followed.
                    response = await transport.handle_async_request(request)
                    try:
                        status = response.status_code
                        # Read even a 2xx body so the connection goes back to the pool.
                        head = await _read_capped(response, self._max_response_bytes)
                        if status in _RETRY_AFTER_STATUSES:
                            # Looked up only when it matters: a header lookup is a linear scan
                            # of the headers, paid on every send otherwise.
                            retry_header = response.headers.get("retry-after")
                    finally:
                        await response.aclose()
            except (httpx.InvalidURL, httpx.UnsupportedProtocol) as exc:
                return Outcome("permanent", _redact(f"invalid webhook URL: {exc}", url))
            except BlockedAddressError as exc:
                return Outcome("permanent", str(exc))
            except (TimeoutError, httpx.TransportError) as exc:
                if status is not None and 200 <= status < 300:
                    # The receiver accepted the event; only its response body went wrong.
                    return Outcome("sent")
                return Outcome(
                    "failed", _redact(_describe_transport_error(exc, self._timeout), url)
                )
        retry_after = None
        if status in _RETRY_AFTER_STATUSES and retry_header is not None:
            retry_after = parse_retry_after(retry_header, self._clock())
        return _classify(status, head, retry_after)


_HEADERS = {
    "content-type": "application/json",
    "user-agent": f"duequeue/{__version__}",
    # The body is only read for an error snippet; a compressed one could expand far beyond
    # max_response_bytes.
    "accept-encoding": "identity",
}


@functools.lru_cache(maxsize=1024)
def _url(url: str) -> httpx.URL:
    # Rows of one tick often share a webhook URL; parsing it once saves a measurable share of
    # a send. httpx.URL is immutable, so sharing it is safe.
    return httpx.URL(url)


@functools.cache
def _tls_context() -> ssl.SSLContext:
    # Loading the CA bundle costs tens of milliseconds; every channel of the process shares it.
    return httpx.create_ssl_context()


def _classify(status: int, head: bytes, retry_after: float | None) -> Outcome:
    if 200 <= status < 300:
        return Outcome("sent")
    if 300 <= status < 400:
        return Outcome("failed", f"HTTP {status} redirect not followed")
    snippet = _snippet(head)
    error = f"HTTP {status}: {snippet}" if snippet else f"HTTP {status}"
    if 400 <= status < 500 and status not in _TRANSIENT_4XX:
        return Outcome("permanent", error)
    return Outcome("failed", error, retry_after)


async def _read_capped(response: httpx.Response, limit: int) -> bytes:
    chunks: list[bytes] = []
    remaining = limit
    async for chunk in response.aiter_raw():
        chunks.append(chunk[:remaining])
        remaining -= len(chunk)
        if remaining <= 0:
            # Leaving the stream unread closes this connection instead of draining a huge body.
            break
    return b"".join(chunks)


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


def _describe_transport_error(exc: BaseException, timeout: float) -> str:
    if isinstance(exc, TimeoutError | httpx.TimeoutException):
        return f"timeout after {timeout:g}s"
    causes = _causes(exc)
    if any(isinstance(c, ConnectionRefusedError) for c in causes):
        return "connection refused"
    if any(isinstance(c, socket.gaierror) for c in causes):
        return f"DNS lookup failed: {_last_message(causes)}"
    if any(isinstance(c, ssl.SSLError | ssl.CertificateError) for c in causes):
        return f"TLS error: {_last_message(causes)}"
    if any(isinstance(c, ConnectionResetError) for c in causes):
        return "connection reset by peer"
    if isinstance(exc, httpx.ProtocolError):
        return f"protocol error: {exc}"
    if isinstance(exc, httpx.ConnectError):
        return f"connection failed: {_last_message(causes)}"
    return f"network error: {_last_message(causes)}"


def _causes(exc: BaseException) -> list[BaseException]:
    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in chain:
        chain.append(current)
        current = current.__cause__ or current.__context__
    return chain


def _last_message(chain: list[BaseException]) -> str:
    # The innermost exception usually says what happened; wrappers repeat or generalise it.
    for exc in reversed(chain):
        text = str(exc)
        if text:
            return " ".join(text.split())
    return type(chain[0]).__name__


def _redact(text: str, url: str) -> str:
    # Webhook URLs often carry a token (in the path, query or userinfo); errors must not echo it.
    text = " ".join(text.split())
    secrets = [url]
    try:
        parts = urllib.parse.urlsplit(url)
        secrets += [parts.password or "", parts.path.lstrip("/"), parts.query]
    except ValueError:
        pass
    # Short fragments ("/", "v1") are not secrets, and replacing them would garble the message.
    for secret in sorted((s for s in secrets if len(s) >= 6), key=len, reverse=True):
        text = text.replace(secret, "***")
    return text
