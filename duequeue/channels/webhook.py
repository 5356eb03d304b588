"""The webhook channel: a reminder POSTed as a JSON event, signed per Standard Webhooks.

Here: what a webhook target's address may be, the endpoint its sends are bounded by, the
settings it reads, and how a tick opens it. The sending itself (aiohttp, signing, the private
address guard) is webhook_sender.py, imported only when a tick opens the channel.
"""

import contextlib
import functools
import ipaddress
import re
from collections.abc import AsyncIterator, Mapping
from typing import Any
from urllib.parse import urlsplit

import idna

from duequeue.channels.base import plain_text
from duequeue.channels.registry import Channel, Opening, Sender, register
from duequeue.errors import BadInputError

_LABEL = re.compile(r"^(?!-)[A-Za-z0-9_-]{1,63}(?<!-)$")
MAX_HOST = 253
_DEFAULT_PORTS = {"http": 80, "https": 443}


def check(url: str, settings: Mapping[str, Any]) -> str:
    """Return `url` if it is a valid webhook URL (whatever the settings), else raise."""
    return checked(url)


@functools.lru_cache(maxsize=4096)
def checked(url: str) -> str:
    """Return a valid http(s) webhook URL or raise.

    Cached: an import of thousands of reminders usually names a handful of receivers, and
    checking a URL was a third of an imported reminder's cost (a refused URL is not cached).

    Credentials in the URL (`https://user:pass@host/`) are refused: the URL is shown by
    `inspect` and stored in clear, so a secret does not belong in it; use the signing secret or
    a token the receiver checks.
    """
    plain_text(url)
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise BadInputError(f"{url!r} is not a valid URL ({exc})") from None
    if parts.scheme not in ("http", "https"):
        raise BadInputError(f"{url!r} must start with http:// or https://")
    if not parts.hostname:
        raise BadInputError(f"{url!r} has no host")
    if parts.username is not None or parts.password is not None:
        raise BadInputError(
            "credentials in the URL are not supported (they would be stored and "
            "shown in clear); use DUEQUEUE_WEBHOOK_SECRET or a token the receiver checks"
        )
    if port == 0:
        raise BadInputError(f"{url!r} has port 0")
    _host(parts.hostname, url)
    return url


def _host(host: str, url: str) -> None:
    """Raise unless `host` is an IP address or a DNS name (IDNA names in Unicode are fine)."""
    try:
        ipaddress.ip_address(host)
        return
    except ValueError:
        pass
    ascii_host = host
    if not host.isascii() or "xn--" in host.lower():
        try:
            ascii_host = idna.encode(host, uts46=True).decode("ascii")
            idna.decode(ascii_host)
        except (idna.IDNAError, UnicodeError):
            raise BadInputError(f"{url!r} has an invalid international host") from None
    labels = ascii_host.rstrip(".").split(".")
    if len(ascii_host) > MAX_HOST or not all(_LABEL.match(label) for label in labels):
        raise BadInputError(f"{url!r} has an invalid host name")


@functools.lru_cache(maxsize=4096)
def endpoint(url: str) -> str | None:
    """Return the `host:port` a webhook URL connects to, or None if it cannot be told.

    A URL that cannot be parsed is not bounded: its send fails at once as a bad URL. Names are
    not resolved: two names of one address are two endpoints.
    """
    try:
        parts = urlsplit(url)
        port = parts.port or _DEFAULT_PORTS.get(parts.scheme.lower())
    except ValueError:
        return None
    if not parts.hostname or port is None:
        return None
    return f"{parts.hostname}:{port}"


@contextlib.asynccontextmanager
async def open_channel(opening: Opening) -> AsyncIterator[Sender]:
    """Open the webhook channel for one tick: one pooled HTTP client."""
    # Lazy: aiohttp costs a third of a second to import; only a tick sending webhooks pays it.
    from duequeue.channels.webhook_sender import WebhookChannel

    settings = opening.settings
    async with WebhookChannel(
        secret=settings.get("webhook_secret"),
        timeout=opening.timeout,
        clock=opening.clock,
        max_connections=settings.get("concurrency", 64),
        block_private=bool(settings.get("webhook_block_private", False)),
    ) as channel:
        yield channel


register(
    Channel(
        "webhook",
        check=check,
        open=open_channel,
        endpoint=endpoint,
        secrets=True,
    )
)
