"""The notify channel: chat and push services through Apprise, one URL scheme for 100+ of them.

`slack://`, `discord://`, `tgram://`, `ntfys://host/topic`, `mmost://`, `gotify://`, `json://`,
... (https://github.com/caronc/apprise/wiki). Apprise is an optional extra (`pip install
'duequeue[notify]'`), imported only when a notify target is added, shown or due, so the core
install and the empty tick never pay for it.

Here: what a notify target's address may be (a URL Apprise can send to), how it is shown (its
tokens masked), and how a tick opens the channel. The sending itself is notify_sender.py.
"""

import contextlib
import functools
from collections.abc import AsyncIterator, Mapping
from typing import Any

from duequeue.channels.apprise_urls import WORKERS, MissingExtraError, masked, problem
from duequeue.channels.base import plain_text
from duequeue.channels.registry import Channel, Opening, Sender, register
from duequeue.errors import BadInputError

# DUEQUEUE_WEBHOOK_BLOCK_PRIVATE guards aiohttp's connections (netguard.py); Apprise's go
# through requests, out of its reach, so notify targets are refused rather than let through.
BLOCKED = (
    "refused while DUEQUEUE_WEBHOOK_BLOCK_PRIVATE is on: Apprise makes its own connections, "
    "which cannot be checked for private addresses"
)


def check(url: str, settings: Mapping[str, Any]) -> str:
    """Return a valid Apprise URL or raise; Apprise itself must be installed (the extra).

    Refused while DUEQUEUE_WEBHOOK_BLOCK_PRIVATE is on: Apprise makes its own connections, which
    the private-address guard cannot check.
    """
    if settings.get("webhook_block_private"):
        raise BadInputError(BLOCKED)
    return checked(url)


@functools.lru_cache(maxsize=1024)
def checked(url: str) -> str:
    """Return a valid Apprise URL or raise (cached: an import names a handful of services many
    times; a refused URL is not cached)."""
    plain_text(url, quote=False)  # not quoted: the URL holds tokens
    try:
        why = problem(url)
    except MissingExtraError as exc:
        raise BadInputError(str(exc)) from None
    if why is not None:
        scheme = url.split("://", 1)[0] if "://" in url else url[:20]
        raise BadInputError(f"{scheme}://...: {why}")
    return url


@contextlib.asynccontextmanager
async def open_channel(opening: Opening) -> AsyncIterator[Sender]:
    """Open the notify channel for one tick: a few threads for Apprise's blocking calls."""
    # Lazy: only a tick with notify targets due needs the threads and the send loop.
    from duequeue.channels.notify_sender import NotifyChannel

    settings = opening.settings
    async with NotifyChannel(
        timeout=opening.timeout,
        with_data=bool(settings.get("notify_data", False)),
        # Added before the block was switched on: refused now, as `add` would.
        refuse=f"notify {BLOCKED}" if settings.get("webhook_block_private") else None,
    ) as channel:
        yield channel


register(Channel("notify", check=check, open=open_channel, shown=masked, workers=WORKERS))
