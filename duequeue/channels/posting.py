"""What the webhook channel needs from an HTTP client: one POST, its status and a capped body.

Two posters implement it: `aiohttp_poster.AiohttpPoster`, the default (aiohttp's pool, called
directly), and `httpx_poster.HttpxPoster`, which sends through any httpx transport (the
private-address guard of netguard.py, or a scripted transport in tests). Both report a failed
attempt as `PostFailed` with a short, human message; the channel redacts and records it.
"""

import socket
import ssl
from typing import Literal, NamedTuple, Protocol

from duequeue.channels.base import causes


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


class Poster(Protocol):
    """An HTTP client the webhook channel POSTs through, opened by the channel."""

    async def post(self, url: str, body: bytes, headers: dict[str, str]) -> Posted:
        """POST `body`; return the response or raise PostFailed (never follow a redirect)."""
        ...

    async def aclose(self) -> None:
        """Close the connections."""
        ...


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
