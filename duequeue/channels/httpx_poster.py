"""A webhook poster over any httpx transport: the private-address guard, and scripted tests.

The default path is aiohttp_poster.py; this one keeps httpx's transport interface for what is
written against it (netguard.GuardedTransport sits in httpcore's connect step).
"""

import asyncio
from typing import Any

import httpx

from duequeue.channels.base import causes
from duequeue.channels.netguard import BlockedAddressError
from duequeue.channels.posting import (
    RETRY_AFTER_STATUSES,
    Posted,
    PostFailed,
    describe,
    timed_out,
)
from duequeue.channels.posting import last_message as _last_message


class HttpxPoster:
    """POST straight to an httpx transport: one request, redirects never followed."""

    def __init__(
        self, transport: httpx.AsyncBaseTransport, *, timeout: float, max_response_bytes: int
    ) -> None:
        self._transport = transport
        self._timeout = timeout
        self._max_bytes = max_response_bytes
        # These bound each phase; post() bounds the attempt as a whole.
        self._extensions = {"timeout": {"connect": timeout, "read": timeout, "write": timeout}}

    async def post(self, url: str, body: bytes, headers: dict[str, str]) -> Posted:
        """POST `body` to `url`; return the status and up to max_response_bytes of the body."""
        status: int | None = None
        phase = _Phase()
        try:
            # httpx bounds each phase; this bounds the attempt (a slow drip never ends a read).
            async with asyncio.timeout(self._timeout):
                extensions = {**self._extensions, "trace": phase.trace}
                request = httpx.Request(
                    "POST", url, content=body, headers=headers, extensions=extensions
                )
                response = await self._transport.handle_async_request(request)
                try:
                    status = response.status_code
                    head = await _read_capped(response, self._max_bytes)
                    retry_after = None
                    if status in RETRY_AFTER_STATUSES:
                        retry_after = response.headers.get("retry-after")
                finally:
                    await response.aclose()
        except (httpx.InvalidURL, httpx.UnsupportedProtocol) as exc:
            raise PostFailed("permanent", f"invalid webhook URL: {exc}") from exc
        except BlockedAddressError as exc:
            raise PostFailed("permanent", str(exc)) from exc
        except (TimeoutError, httpx.TransportError) as exc:
            if status is not None and 200 <= status < 300:
                # The receiver accepted the event; only its response body went wrong.
                return Posted(status, b"", None)
            connected = status is not None or phase.connected
            raise PostFailed("failed", _describe(exc, self._timeout, connected)) from exc
        return Posted(status, head, retry_after)

    async def aclose(self) -> None:
        """Close the transport."""
        await self._transport.aclose()


class _Phase:
    """Follow one request through httpcore's trace events: connecting, or sending.

    A transport that reports no events (a scripted one) counts as connected: without a sign
    that nothing went out, a timeout's delivery is unknown.
    """

    __slots__ = ("connecting", "sending")

    def __init__(self) -> None:
        self.connecting = False  # connect_tcp, start_tls: nothing of the request sent yet
        self.sending = False  # from the first byte of the request headers on

    @property
    def connected(self) -> bool:
        """Return whether the request may have reached the receiver."""
        return self.sending or not self.connecting

    async def trace(self, name: str, info: dict[str, Any]) -> None:
        if name.endswith(".send_request_headers.started"):
            self.sending = True
        elif name.startswith("connection."):
            self.connecting = True


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


def _describe(exc: BaseException, timeout: float, connected: bool) -> str:
    if isinstance(exc, httpx.ConnectTimeout):
        return timed_out(timeout, connected=False)
    if isinstance(exc, httpx.TimeoutException):
        return timed_out(timeout, connected=connected)
    known = describe(exc, timeout, connected=connected)
    if known is not None:
        return known
    if isinstance(exc, httpx.ProtocolError):
        return f"protocol error: {exc}"
    if isinstance(exc, httpx.ConnectError):
        return f"connection failed: {_last_message(causes(exc))}"
    return f"network error: {_last_message(causes(exc))}"
