"""Targets as (channel, address): the one table of the channels a reminder may name, with how
each checks an address and shows it.

The channel registry in channels/ is to replace this table; until then a channel is one row here.
"""

from collections.abc import Callable
from types import ModuleType
from typing import NamedTuple

from duequeue import validate
from duequeue.errors import BadInputError


class ChannelKind(NamedTuple):
    """How one channel's addresses are checked (raising BadInputError) and shown."""

    check: Callable[[str], str]
    shown: Callable[[str], str]


def _as_given(address: str) -> str:
    return address


def _masked_notify(url: str) -> str:
    masked: str = _notify().masked(url)
    return masked


def _notify() -> ModuleType:
    # Lazy: the notify channel loads asyncio and threading; cron's tick and most results
    # never touch a notify target.
    from duequeue.channels import notify

    return notify


CHANNELS: dict[str, ChannelKind] = {
    "email": ChannelKind(validate.email_address, _as_given),
    "webhook": ChannelKind(validate.webhook_url, _as_given),
    "notify": ChannelKind(validate.notify_url, _masked_notify),
}


def check(channel: str, address: str, *, block_private: bool = False) -> str:
    """Return `address` if it is a valid address of `channel`, else raise BadInputError.

    `block_private`: DUEQUEUE_WEBHOOK_BLOCK_PRIVATE, under which notify targets are refused:
    Apprise makes its own connections, which the private-address guard cannot check.
    """
    kind = CHANNELS.get(channel)
    if kind is None:
        raise BadInputError(f"unknown channel {channel!r}; known: {', '.join(sorted(CHANNELS))}")
    if block_private and channel == "notify":
        raise BadInputError(_notify().BLOCKED)
    return kind.check(address)


def shown(channel: str, address: str) -> str:
    """Return a target's address fit to print: a notify URL with its tokens masked."""
    kind = CHANNELS.get(channel)
    return address if kind is None else kind.shown(address)
