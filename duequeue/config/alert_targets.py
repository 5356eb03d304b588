"""`DUEQUEUE_ALERT`: the targets a person hears of new dead letters through, read from one
setting. Any target the channels take: an email address, a webhook URL, an Apprise URL; several
separated by spaces (none of the three holds one)."""

from collections.abc import Mapping
from typing import Any

from duequeue.channels import registry
from duequeue.errors import BadInputError, ConfigError

AlertTarget = tuple[str, str]  # (channel, address as stored)


def channel_of(item: str) -> str:
    """Return the channel a target of DUEQUEUE_ALERT goes through, by its form."""
    scheme, sep, _ = item.partition("://")
    if not sep:
        return "email"  # ops@example.com, or mailto:ops@example.com
    return "webhook" if scheme.lower() in ("http", "https") else "notify"


def parse(text: str, settings: Mapping[str, Any]) -> tuple[AlertTarget, ...]:
    """Return the alert targets `text` names, each checked as `add` checks a target; a
    ConfigError naming the setting (and never quoting a URL: it may hold a token) if one is not
    a target."""
    found: list[AlertTarget] = []
    for n, item in enumerate(text.split(), start=1):
        channel = channel_of(item)
        address = item.removeprefix("mailto:") if channel == "email" else item
        try:
            found.append((channel, registry.check(channel, address, settings)))
        except (BadInputError, ConfigError) as exc:
            raise ConfigError(
                f"target {n} is not a valid {channel} target: {exc.detail}", field="alert"
            ) from None
    if not found:
        raise ConfigError(
            "give an email address, a webhook URL or an Apprise URL (several: space-separated)",
            field="alert",
        )
    return tuple(found)


def shown(targets: tuple[AlertTarget, ...]) -> str:
    """Return the targets fit to print: each address as its channel masks it."""
    return " ".join(registry.shown(channel, address) for channel, address in targets)
