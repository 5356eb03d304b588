"""The channel registry: every kind of target (`email`, `webhook`, `notify`, ...) is a `Channel`
that one module registers: its name, how it checks and shows an address, the settings it reads,
how many of its sends a tick runs at once, and how a tick opens it to send.

A channel module registers itself when imported, and must stay cheap to import: `add` checks
addresses and `inspect` masks them without sending anything, so what sending needs (aiohttp,
smtplib, Apprise) is imported by the channel's `open`. The built-in channels are imported on
first use, one at a time (BUILTIN); others register themselves with `register()` (a test, an
application), or are named by an entry point in the `duequeue.channels` group (a package), which
is looked up only when a name is not known otherwise.

A tick holds a `Senders`: the channels it has opened, each once, and one send per target that
never raises (a channel's failure is an Outcome, data like any other).
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import AsyncIterator, Callable, Collection, Mapping
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Protocol

from duequeue.channels.base import Message, Outcome
from duequeue.errors import BadInputError, ConfigError
from duequeue.shared import redact

# The built-in channels, by name: each module registers its channel when first imported.
BUILTIN = {
    "email": "duequeue.channels.email",
    "webhook": "duequeue.channels.webhook",
    "notify": "duequeue.channels.notify",
}
ENTRY_POINTS = "duequeue.channels"


class Sender(Protocol):
    """An open channel: sends one message to one address, never raises."""

    async def send(self, msg: Message, address: str, secret: str | None) -> Outcome:
        """Send `msg` to `address` (`secret`: the target's own, a webhook's signing secret)."""


@dataclass(frozen=True, slots=True)
class Opening:
    """What a channel gets when a tick opens it: the send timeout, the clock (seconds), and every
    setting by its name (`smtp_url`, `webhook_secret`, ..., and any a channel declares)."""

    timeout: float
    clock: Callable[[], float]
    settings: Mapping[str, Any]


def _as_given(address: str) -> str:
    return address


@dataclass(frozen=True, slots=True)
class Channel:
    """One kind of target.

    - `check(address, settings)`: the address to store, or BadInputError saying what is wrong
      (the caller names the field); `settings` as in Opening.
    - `shown(address)`: the address fit to print anywhere (tokens, passwords masked).
    - `open(opening)`: an async context manager giving the channel's Sender for one tick.
    - `workers`: the sends of this channel a tick runs at once; None: DUEQUEUE_CONCURRENCY.
    - `endpoint(address)`: the host:port its sends are bounded by (DUEQUEUE_WEBHOOK_PER_HOST),
      or None for a channel without such a bound.
    - `settings`: the settings the channel reads beyond duequeue's own, by name (each also
      DUEQUEUE_<NAME> and a config-file key), with their defaults.
    - `secrets`: whether a target of this channel takes a secret of its own (--webhook-secret).
    """

    name: str
    check: Callable[[str, Mapping[str, Any]], str]
    open: Callable[[Opening], contextlib.AbstractAsyncContextManager[Sender]]
    shown: Callable[[str], str] = _as_given
    workers: int | None = None
    endpoint: Callable[[str], str | None] | None = None
    settings: Mapping[str, Any] = field(default_factory=dict)
    secrets: bool = False


_REGISTERED: dict[str, Channel] = {}
# Names no built-in, registration or entry point provides, found so once: a tick meets one for
# every target of a channel only another host knows, and the entry points are read only once.
_UNKNOWN: set[str] = set()


def register(channel: Channel) -> None:
    """Make `channel` known by its name (a second registration of a name replaces the first)."""
    _REGISTERED[channel.name] = channel
    _UNKNOWN.discard(channel.name)


def get(name: str) -> Channel:
    """Return the channel registered as `name`; BadInputError naming the known ones if none."""
    found = _REGISTERED.get(name)
    if found is None and name in BUILTIN:
        importlib.import_module(BUILTIN[name])  # registers it
        found = _REGISTERED.get(name)
    if found is None and name not in _UNKNOWN:
        _load_entry_point(name)
        found = _REGISTERED.get(name)
    if found is None:
        _UNKNOWN.add(name)
        raise BadInputError(f"unknown channel {name!r}; known: {', '.join(names())}")
    return found


def find(name: str) -> Channel | None:
    """Return the channel registered as `name`; None when this process does not know it or
    cannot load it (a target stored where it was known fails its sends here: `unknown_here`)."""
    try:
        return get(name)
    except (BadInputError, ConfigError):
        return None


def unknown_here(name: str) -> str:
    """Return the error of a send to a channel this process does not know: what to do."""
    return (
        f"channel {name!r} is not known to this host: name the module that registers it in "
        "DUEQUEUE_CHANNELS (or install the package that provides it) wherever ticks run; "
        f"known here: {', '.join(names())}"
    )


def names() -> list[str]:
    """Return the names of the channels known without importing any."""
    return sorted({*BUILTIN, *_REGISTERED})


def check(name: str, address: str, settings: Mapping[str, Any]) -> str:
    """Return `address` as stored for a target of channel `name`, or raise BadInputError."""
    return get(name).check(address, settings)


def shown(name: str, address: str) -> str:
    """Return a target's address fit to print; nothing of it (the mask) for a channel this
    process does not know, as only the channel knows which of its parts are secret."""
    channel = find(name)
    return redact.whole(address) if channel is None else channel.shown(address)


def label(name: str, address: str) -> str:
    """Return how an error text names a target: its channel and shown address."""
    return f"{name} {shown(name, address)}"


def declared_settings() -> dict[str, Any]:
    """Return the settings the registered channels declare beyond duequeue's own, with their
    defaults (the built-in channels read only duequeue's own)."""
    return {name: default for c in _REGISTERED.values() for name, default in c.settings.items()}


def _load_entry_point(name: str) -> None:
    # Lazy: only a channel name nothing registered needs the installed packages' entry points.
    from importlib.metadata import entry_points

    for point in entry_points(group=ENTRY_POINTS, name=name):
        try:
            loaded = point.load()  # a module that registers its channel, or the Channel itself
        except Exception as exc:
            raise ConfigError(f"channel {name!r}: cannot load {point.value}: {exc}") from exc
        if isinstance(loaded, Channel):
            register(loaded)


class Senders:
    """The channels one tick has opened, each once, and a send that never raises."""

    def __init__(self, opening: Opening) -> None:
        self._opening = opening
        self._stack = contextlib.AsyncExitStack()
        self._open: dict[str, Sender] = {}
        self._problems: dict[str, str] = {}

    async def __aenter__(self) -> Senders:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self._stack.aclose()

    async def open(self, names_: Collection[str]) -> None:
        """Open the channels in `names_` not open yet (a draining tick meets them batch by
        batch). A channel that cannot open fails its sends instead (data, not a crash)."""
        for name in names_:
            if name in self._open or name in self._problems:
                continue
            try:
                channel = get(name)
            except BadInputError:
                self._problems[name] = unknown_here(name)
                continue
            except Exception as exc:  # an entry point that fails to load
                self._problems[name] = f"channel {name!r} could not be loaded: {exc}"
                continue
            try:
                self._open[name] = await self._stack.enter_async_context(
                    channel.open(self._opening)
                )
            except Exception as exc:
                self._problems[name] = f"channel {name!r} could not open: {exc}"

    async def send(self, msg: Message, channel: str, address: str, secret: str | None) -> Outcome:
        """Send one message to one target; never raises."""
        sender = self._open.get(channel)
        if sender is None:
            return Outcome("failed", self._problems.get(channel, f"channel {channel!r} not open"))
        try:
            return await sender.send(msg, address, secret)
        except Exception as exc:  # a channel must not raise; if one does, it is still data
            return Outcome("failed", f"{type(exc).__name__}: {exc}")


@contextlib.asynccontextmanager
async def opened(sender: Sender) -> AsyncIterator[Sender]:
    """Wrap a Sender that needs no closing as the context manager Channel.open returns."""
    yield sender
