"""A channel of our own, in one file, as a user would write one: the package is not touched.

Importing this module registers the `toy` channel (DUEQUEUE_CHANNELS=tests.toy_channel does it
for a command). Its addresses are `ok:NAME`, `flaky:NAME` (a failure that may clear, every
time) or `refuse:NAME` (refused for good), each optionally with a token, `#TOKEN`, that is
never shown. What it sends goes into SENT, with the `toy_greeting` setting it declares.
"""

import contextlib
import re
from collections.abc import AsyncIterator, Mapping
from typing import Any

from duequeue.channels.base import SENT as OK
from duequeue.channels.base import Message, Outcome
from duequeue.channels.registry import Channel, Opening, Sender, register
from duequeue.errors import BadInputError

_ADDRESS = re.compile(r"^(ok|flaky|refuse):([a-z]+)(#\w+)?$")

# (delivery id, address without its token, the greeting setting) of every message sent.
SENT: list[tuple[str, str, str]] = []


def check(address: str, settings: Mapping[str, Any]) -> str:
    if not _ADDRESS.match(address):
        raise BadInputError("a toy address is ok:NAME, flaky:NAME or refuse:NAME[#TOKEN]")
    return address


def shown(address: str) -> str:
    head, hash_, _ = address.partition("#")
    return head + (hash_ + "***" if hash_ else "")


class ToySender:
    def __init__(self, greeting: str) -> None:
        self.greeting = greeting

    async def send(self, msg: Message, address: str, secret: str | None) -> Outcome:
        kind = address.partition(":")[0]
        if kind == "flaky":
            return Outcome("failed", "toy is down")
        if kind == "refuse":
            return Outcome("permanent", "toy refuses")
        SENT.append((msg.delivery_id, shown(address), self.greeting))
        return OK


@contextlib.asynccontextmanager
async def open_toy(opening: Opening) -> AsyncIterator[Sender]:
    yield ToySender(str(opening.settings["toy_greeting"]))


register(
    Channel(
        "toy",
        check=check,
        open=open_toy,
        shown=shown,
        workers=3,
        settings={"toy_greeting": "hello"},
    )
)
