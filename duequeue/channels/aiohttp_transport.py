"""An httpx transport that sends over aiohttp's connection pool.

httpx stays the API the webhook channel is written against (httpx.Request, httpx.Response, the
httpx exception tree); only the wire work moves to aiohttp, whose C HTTP parser and pool post
about 6x faster than httpx's own transport on loopback (figures in BENCHMARKS.md). The transport
never follows redirects and never decompresses; aiohttp errors become the httpx exception that
means the same thing, with the original kept as the cause (so "connection refused" stays
recognisable further up).
"""

import functools
import ssl
from collections.abc import AsyncIterator, Callable
from typing import Any

import aiohttp
import httpx
import yarl


class AiohttpTransport(httpx.AsyncBaseTransport):
    """Send httpx requests through one aiohttp session, opened on the first request."""

    def __init__(self, *, ssl_context: Callable[[], ssl.SSLContext], max_connections: int) -> None:
        # A callable: loading the CA bundle costs tens of milliseconds, which a tick posting
        # only to http:// URLs should not pay.
        self._ssl = ssl_context
        self._max_connections = max_connections
        self._session: aiohttp.ClientSession | None = None

    def _open(self) -> aiohttp.ClientSession:
        connector = aiohttp.TCPConnector(limit=self._max_connections, limit_per_host=0)
        # No cookie jar, no auto headers beyond what the request carries: a webhook POST is
        # exactly the request httpx built.
        self._session = aiohttp.ClientSession(
            connector=connector,
            cookie_jar=aiohttp.DummyCookieJar(),
            auto_decompress=False,
            skip_auto_headers=("Accept", "Accept-Encoding", "User-Agent", "Content-Type"),
        )
        return self._session

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Send `request` and return the response with its body still to be streamed."""
        url = request.url
        if url.scheme not in ("http", "https"):
            raise httpx.UnsupportedProtocol(f"unsupported URL scheme {url.scheme!r}")
        session = self._session or self._open()
        tls: ssl.SSLContext | bool = self._ssl() if url.scheme == "https" else True
        try:
            response = await session.request(
                request.method,
                _yarl(str(url)),
                ssl=tls,
                headers=request.headers.multi_items(),
                data=request.content,
                allow_redirects=False,
                timeout=_client_timeout(request.extensions.get("timeout")),
            )
        except aiohttp.ClientError as exc:
            raise _httpx_error(exc) from exc
        return httpx.Response(
            status_code=response.status,
            headers=response.raw_headers,
            stream=_Body(response),
            request=request,
        )

    async def aclose(self) -> None:
        """Close the pool and its connections."""
        session, self._session = self._session, None
        if session is not None:
            await session.close()


class _Body(httpx.AsyncByteStream):
    """A response body read in chunks as they arrive; closing early drops the connection."""

    def __init__(self, response: aiohttp.ClientResponse) -> None:
        self._response = response

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self._response.content.iter_any():
                yield chunk
        except aiohttp.ClientError as exc:
            raise _httpx_error(exc) from exc

    async def aclose(self) -> None:
        response = self._response
        if response.content.is_eof():
            response.release()  # fully read: the connection goes back to the pool
        else:
            response.close()  # a body left unread is not drained: the connection is closed


@functools.lru_cache(maxsize=1024)
def _yarl(url: str) -> yarl.URL:
    # httpx has already normalised and percent-encoded the URL; parsing it again per request
    # is measurable when thousands of rows share a handful of webhook URLs.
    return yarl.URL(url, encoded=True)


@functools.lru_cache(maxsize=16)
def _timeouts(connect: float | None, read: float | None) -> aiohttp.ClientTimeout:
    return aiohttp.ClientTimeout(total=None, sock_connect=connect, sock_read=read)


def _client_timeout(spec: Any) -> aiohttp.ClientTimeout:
    spec = spec if isinstance(spec, dict) else {}
    return _timeouts(spec.get("connect"), spec.get("read"))


def _httpx_error(exc: aiohttp.ClientError) -> httpx.TransportError:
    """Return the httpx exception meaning what `exc` means (the caller chains `exc`)."""
    text = str(exc) or type(exc).__name__
    if isinstance(exc, aiohttp.ConnectionTimeoutError):
        return httpx.ConnectTimeout(text)
    if isinstance(exc, aiohttp.ServerTimeoutError):
        return httpx.ReadTimeout(text)
    if isinstance(exc, aiohttp.InvalidURL):
        return httpx.UnsupportedProtocol(text)
    if isinstance(exc, aiohttp.ClientConnectorError):
        return httpx.ConnectError(text)
    if isinstance(exc, aiohttp.ServerDisconnectedError | aiohttp.ClientResponseError):
        return httpx.RemoteProtocolError(text)
    if isinstance(exc, aiohttp.ClientPayloadError | aiohttp.ClientOSError):
        return httpx.ReadError(text)
    return httpx.NetworkError(text)
