"""The email channel: a reminder as an email over SMTP (DUEQUEUE_SMTP_URL, from
DUEQUEUE_EMAIL_FROM).

Here: what an email target's address may be, the settings it reads, and how a tick opens it. The
sending itself (smtplib on a thread of its own, one reused connection) is email_sender.py,
imported only when a tick opens the channel.
"""

import contextlib
import re
from collections.abc import AsyncIterator, Mapping
from typing import Any

from duequeue.channels.base import Message, Outcome
from duequeue.channels.registry import Channel, Opening, Sender, opened, register
from duequeue.errors import BadInputError

MAX_EMAIL = 254
# A plain ASCII local@domain: what every SMTP server takes as a recipient.
_EMAIL = re.compile(r"^[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]+@[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?$")
NOT_CONFIGURED = "email not configured: set DUEQUEUE_SMTP_URL and DUEQUEUE_EMAIL_FROM"


def is_address(address: str) -> bool:
    """Tell whether `address` is a plain ASCII local@domain."""
    return len(address) <= MAX_EMAIL and bool(_EMAIL.match(address)) and ".." not in address


def check(address: str, settings: Mapping[str, Any]) -> str:
    """Return a valid email address or raise."""
    if not is_address(address):
        raise BadInputError(f"{address!r} is not a valid email address")
    return address


class _Unconfigured:
    """The channel without an SMTP server or a sender to use: every send fails, recorded and
    retried, and goes out once the operator sets the two (a setting missing is not a crash)."""

    async def send(self, msg: Message, address: str, secret: str | None = None) -> Outcome:
        return Outcome("failed", NOT_CONFIGURED)


@contextlib.asynccontextmanager
async def open_channel(opening: Opening) -> AsyncIterator[Sender]:
    """Open the email channel for one tick: one SMTP connection, opened at the first send."""
    smtp_url, sender = opening.settings.get("smtp_url"), opening.settings.get("email_from")
    if not smtp_url or not sender:
        async with opened(_Unconfigured()) as unconfigured:
            yield unconfigured
        return
    # Lazy: smtplib and the email package cost a tenth of a second to import.
    from duequeue.channels.email_sender import EmailChannel

    async with EmailChannel(
        smtp_url=smtp_url,
        sender=sender,
        timeout=opening.timeout,
        clock=opening.clock,
        smtp_user=opening.settings.get("smtp_user"),
        smtp_password=opening.settings.get("smtp_password"),
    ) as channel:
        yield channel


# One SMTP connection serves the whole tick, so emails go out one at a time on its thread; two
# are handed over at once, so that the next is already built and waiting when the last reply
# comes (one at a time, the thread and the loop ping-ponged on every message).
register(Channel("email", check=check, open=open_channel, workers=2))
