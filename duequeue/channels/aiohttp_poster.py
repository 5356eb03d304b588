"""The webhook channel's HTTP client: aiohttp's connection pool, called directly.

One POST, its status and a capped body; a failed attempt is `PostFailed` with a short, human
message, which the channel redacts and records. Why aiohttp alone and not through httpx:
httpx's own transport posts about 400/s here, and httpx's Request and Response objects in front
of aiohttp's pool still cost about a tenth of a 20,000-row tick's CPU (BENCHMARKS.md has the
A/B figures). So the hot path is aiohttp's C HTTP parser, one timeout per attempt (connect to
last body byte read) and no cookie jar, redirects or decompression. The private-address guard
(DUEQUEUE_WEBHOOK_BLOCK_PRIVATE, netguard.py) sits in the same connector.
"""

import contextvars
import functools
import socket
import ssl
from collections.abc import Callable, Mapping
from typing import Literal, NamedTuple

import aiohttp
import yarl
from aiohttp.abc import AbstractResolver

from duequeue.channels.base import causes
from duequeue.channels.netguard import BlockedAddressError, Guard


class Posted(NamedTuple):
    """A response: its status, the first bytes of its body, and Retry-After when it matters."""

    status: int
    head: bytes
    retry_after: str | None


class PostFailed(Exception):
    """No usable response: `status` says whether retrying can help."""

    def __init__(self, status: Literal["failed", "permanent"], message: str) -> None:
        super().__init__(message)
        self.status: Literal["failed", "permanent"] = status  # failed = transient
        self.message = message


# 429 and 503 are where a server says when to come back; elsewhere Retry-After is not read.
RETRY_AFTER_STATUSES = frozenset({429, 503})


def timed_out(timeout: float, *, connected: bool) -> str:
    """Return the error of an attempt cut at `timeout`, by whether it had a connection.

    Without one, nothing of the request left this host: the receiver cannot have the event.
    With one, the request may have arrived and been acted on, so a retry may repeat it (the
    stable webhook-id lets the receiver drop that copy).
    """
    if connected:
        return f"response timeout after {timeout:g}s (delivery unknown)"
    return f"connect timeout after {timeout:g}s (nothing sent)"


def describe(exc: BaseException, timeout: float, *, connected: bool = True) -> str | None:
    """Return what a network failure means for an operator, from its exception chain.

    `connected`: whether the attempt had its connection when it failed (see timed_out). None
    when nothing in the chain is recognised; the poster then describes it itself.
    """
    if isinstance(exc, TimeoutError):
        return timed_out(timeout, connected=connected)
    chain = causes(exc)
    if any(isinstance(c, ConnectionRefusedError) for c in chain):
        return "connection refused"
    if any(isinstance(c, socket.gaierror) for c in chain):
        return f"DNS lookup failed: {last_message(chain)}"
    if any(isinstance(c, ssl.SSLError | ssl.CertificateError) for c in chain):
        return f"TLS error: {last_message(chain)}"
    if any(isinstance(c, ConnectionResetError) for c in chain):
        return "connection reset by peer"
    return None


def last_message(chain: list[BaseException]) -> str:
    """Return the innermost non-empty message of a chain, on one line."""
    # The innermost exception usually says what happened; wrappers repeat or generalise it.
    for exc in reversed(chain):
        text = str(exc)
        if text:
            return " ".join(text.split())
    return type(chain[0]).__name__


# Whether the current attempt got its connection: set False before each POST, True by the
# connector once it hands one over (a new one, TLS included, or one from the pool). A timeout
# raises the same TimeoutError in both phases; this tells them apart. A context variable,
# because aiohttp runs connect() inside the caller's task, with nothing of ours in between.
_CONNECTED: contextvars.ContextVar[bool] = contextvars.ContextVar("connected", default=False)


class _Connector(aiohttp.TCPConnector):
    """aiohttp's pool, noting when an attempt has its connection (see _CONNECTED), and with
    DUEQUEUE_WEBHOOK_BLOCK_PRIVATE, checking the host before and the peer after connecting."""

    def __init__(
        self, *, guard: Guard | None, resolver: AbstractResolver | None, limit: int
    ) -> None:
        # The guard's resolver drops blocked addresses of a host name before any connect.
        if guard is not None:
            resolver = guard.resolver(resolver)
        # No limit_per_host: the tick bounds each endpoint itself (endpoints.py), before the
        # attempt's timer starts; a wait inside the connector would run down that timer.
        super().__init__(limit=limit, limit_per_host=0, resolver=resolver)
        self._guard = guard

    async def connect(
        self,
        req: aiohttp.ClientRequest,
        traces: list[aiohttp.tracing.Trace],
        timeout: aiohttp.ClientTimeout,
    ) -> aiohttp.connector.Connection:
        guard = self._guard
        if guard is not None:
            guard.check_host(req.url.host)
        connection = await super().connect(req, traces, timeout)
        if guard is not None:
            guard.check_peer(connection)
        _CONNECTED.set(True)
        return connection


class AiohttpPoster:
    """POST through one aiohttp session, opened on the first request."""

    def __init__(
        self,
        *,
        timeout: float,
        max_connections: int,
        max_response_bytes: int,
        ssl_context: Callable[[], ssl.SSLContext],
        guard: Guard | None = None,
        resolver: Callable[[], AbstractResolver] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        # A callable: loading the CA bundle costs tens of milliseconds, which a tick posting
        # only to http:// URLs should not pay.
        self._ssl = ssl_context
        self._timeout = timeout
        self._max_connections = max_connections
        self._max_bytes = max_response_bytes
        self._guard = guard
        self._resolver = resolver  # aiohttp's default when None; tests give one
        # Sent with every request, ahead of the request's own: aiohttp copies these in C,
        # where each header given with a request costs a turn of two Python loops.
        self._headers = headers
        self._session: aiohttp.ClientSession | None = None

    def _open(self) -> aiohttp.ClientSession:
        resolver = self._resolver() if self._resolver is not None else None
        connector = _Connector(guard=self._guard, resolver=resolver, limit=self._max_connections)
        self._session = aiohttp.ClientSession(
            connector=connector,
            headers=self._headers,
            cookie_jar=aiohttp.DummyCookieJar(),
            auto_decompress=False,
            # No skip_auto_headers: the channel sends every header aiohttp would add (Accept,
            # Accept-Encoding, User-Agent, Content-Type, in `headers`), so none is added, and a
            # skip list makes aiohttp rebuild two header dicts per request (~5% of a large
            # tick's CPU).
            # `total` covers the whole attempt, the body read included, with one timer; the
            # channel bounds how many attempts run, so none ever waits for a pooled connection.
            timeout=aiohttp.ClientTimeout(total=self._timeout),
        )
        return self._session

    async def post(self, url: str, body: bytes, headers: dict[str, str]) -> Posted:
        """POST `body` to `url`; return the status and up to max_response_bytes of the body."""
        session = self._session or self._open()
        try:
            target, https = _target(url)
        except (ValueError, TypeError) as exc:
            raise PostFailed("permanent", f"invalid webhook URL: {exc}") from exc
        status: int | None = None
        _CONNECTED.set(False)
        try:
            response = await session.post(
                target,
                data=body,
                headers=headers,
                allow_redirects=False,
                ssl=self._ssl() if https else True,
            )
            try:
                status = response.status
                head = await _read_capped(response.content, self._max_bytes)
                retry_after = None
                if status in RETRY_AFTER_STATUSES:
                    retry_after = response.headers.get("Retry-After")
            finally:
                if response.content.is_eof():
                    response.release()  # fully read: the connection goes back to the pool
                else:
                    response.close()  # a body left unread is not drained: the connection closes
        except aiohttp.InvalidURL as exc:
            raise PostFailed("permanent", f"invalid webhook URL: {exc}") from exc
        except BlockedAddressError as exc:
            # Nothing was sent; the same host will be refused again.
            raise PostFailed("permanent", str(exc)) from exc
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            if status is not None and 200 <= status < 300:
                # The receiver accepted the event; only its response body went wrong.
                return Posted(status, b"", None)
            raise PostFailed("failed", _describe(exc, self._timeout, _CONNECTED.get())) from exc
        return Posted(status, head, retry_after)

    async def aclose(self) -> None:
        """Close the pool and its connections."""
        session, self._session = self._session, None
        if session is not None:
            await session.close()


@functools.lru_cache(maxsize=1024)
def _target(url: str) -> tuple[yarl.URL, bool]:
    # Rows of one tick often share a webhook URL; parsing it once per process saves a
    # measurable share of a send. yarl.URL is immutable, so sharing it is safe.
    parsed = yarl.URL(url)
    if parsed.scheme not in ("http", "https"):
        raise ValueError(f"unsupported URL scheme {parsed.scheme!r}")
    if not parsed.host:
        raise ValueError("no host in the URL")
    return parsed, parsed.scheme == "https"


async def _read_capped(content: aiohttp.StreamReader, limit: int) -> bytes:
    chunks: list[bytes] = []
    remaining = limit
    while remaining > 0:
        chunk = await content.readany()
        if not chunk:
            break
        chunks.append(chunk[:remaining])
        remaining -= len(chunk)
    return b"".join(chunks)


def _describe(exc: BaseException, timeout: float, connected: bool) -> str:
    known = describe(exc, timeout, connected=connected)
    if known is not None:
        return known
    text = " ".join(str(exc).split()) or type(exc).__name__
    protocol = aiohttp.ServerDisconnectedError | aiohttp.ClientResponseError
    if isinstance(exc, protocol | aiohttp.ClientPayloadError):
        return f"protocol error: {text}"
    if isinstance(exc, aiohttp.ClientConnectorError):
        return f"connection failed: {text}"
    return f"network error: {text}"
