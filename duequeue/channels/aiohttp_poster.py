"""The default webhook poster: aiohttp's connection pool, called directly.

Why not through httpx: httpx's own transport posts about 400/s here, and httpx's Request and
Response objects in front of aiohttp's pool still cost about a tenth of a 20,000-row tick's CPU
(BENCHMARKS.md has the A/B figures). So the hot path is aiohttp alone: its C HTTP parser, one
timeout per attempt (connect to last body byte read) and no cookie jar, redirects or
decompression. httpx remains for the private-address guard (httpx_poster.py).
"""

import contextvars
import functools
import ssl
from collections.abc import Callable

import aiohttp
import yarl

from duequeue.channels.posting import RETRY_AFTER_STATUSES, Posted, PostFailed, describe

# Whether the current attempt got its connection: set False before each POST, True by the
# connector once it hands one over (a new one, TLS included, or one from the pool). A timeout
# raises the same TimeoutError in both phases; this tells them apart. A context variable,
# because aiohttp runs connect() inside the caller's task, with nothing of ours in between.
_CONNECTED: contextvars.ContextVar[bool] = contextvars.ContextVar("connected", default=False)


class _Connector(aiohttp.TCPConnector):
    """aiohttp's pool, noting when an attempt has its connection (see _CONNECTED)."""

    async def connect(
        self,
        req: aiohttp.ClientRequest,
        traces: list[aiohttp.tracing.Trace],
        timeout: aiohttp.ClientTimeout,
    ) -> aiohttp.connector.Connection:
        connection = await super().connect(req, traces, timeout)
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
    ) -> None:
        # A callable: loading the CA bundle costs tens of milliseconds, which a tick posting
        # only to http:// URLs should not pay.
        self._ssl = ssl_context
        self._timeout = timeout
        self._max_connections = max_connections
        self._max_bytes = max_response_bytes
        self._session: aiohttp.ClientSession | None = None

    def _open(self) -> aiohttp.ClientSession:
        # No limit_per_host: the tick bounds each endpoint itself (endpoints.py), before the
        # attempt's timer starts; a wait inside the connector would run down that timer.
        connector = _Connector(limit=self._max_connections, limit_per_host=0)
        self._session = aiohttp.ClientSession(
            connector=connector,
            cookie_jar=aiohttp.DummyCookieJar(),
            auto_decompress=False,
            # No skip_auto_headers: the channel sends every header aiohttp would add (Accept,
            # Accept-Encoding, User-Agent, Content-Type), so none is added, and a skip list
            # makes aiohttp rebuild two header dicts per request (~5% of a large tick's CPU).
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
