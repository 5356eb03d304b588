"""Apprise URLs, for the notify channel: is Apprise installed, can it send to a URL, and the URL
with its tokens masked. Light to import: Apprise itself is imported on first use.
"""

import functools
import logging
from typing import Any

from duequeue.shared import redact

# Apprise's calls block: a notify channel runs at most this many at once, each on a thread of
# its own (notify_sender.py).
WORKERS = 4


class MissingExtraError(Exception):
    """Apprise is not installed."""


INSTALL_HINT = "notify targets need Apprise: pip install 'duequeue[notify]'"


def apprise_module() -> Any:
    """Return the apprise module, or raise MissingExtraError saying how to install it."""
    try:
        import apprise  # the optional extra, imported only when a notify URL is looked at
    except ImportError:
        raise MissingExtraError(INSTALL_HINT) from None
    return apprise


def problem(url: str) -> str | None:
    """Return why `url` is not a notify URL Apprise can send to, or None if it is."""
    apprise = apprise_module()
    scheme = url.partition("://")[0].lower() if "://" in url else ""
    if not scheme:
        return "not a URL (an Apprise URL such as ntfys://ntfy.sh/topic or slack://...)"
    plugin = instantiate(apprise, url)
    if plugin is not None:
        return _unusable(scheme, plugin)
    if scheme not in _schemes(apprise):
        return f"unknown service {scheme!r} (Apprise knows {len(_schemes(apprise))} schemes)"
    return f"not a valid {scheme}:// URL for Apprise (a token or part is missing or malformed)"


def _unusable(scheme: str, plugin: Any) -> str | None:
    """Return why a URL Apprise accepted can still never be sent to, or None.

    Apprise accepts a port out of range (the send then fails on every try) and an ntfy or MQTT
    URL without a topic (nothing to publish to).
    """
    # The plugin's port, not the URL's: some services put a colon in a token where a port
    # would be (tgram://123456:ABC/...), and Apprise knows which.
    port = getattr(plugin, "port", None)
    if isinstance(port, int) and not 1 <= port <= 65535:
        return "the port must be a number from 1 to 65535"
    if getattr(plugin, "topics", None) == []:
        return f"no topic: give one as the path ({scheme}://host/topic)"
    return None


@functools.cache
def _schemes(apprise: Any) -> frozenset[str]:
    """Return every URL scheme the installed Apprise has a service for."""
    try:
        # The plugin registry Apprise.instantiate loads anyway: free once a URL was parsed.
        from apprise import manager_plugins

        manager: Any = manager_plugins.NotificationManager  # untyped in Apprise
        return frozenset(s.lower() for s in manager().schemas())
    except (ImportError, AttributeError):  # an Apprise without it: the documented details()
        found: set[str] = set()
        for service in apprise.Apprise().details()["schemas"]:
            for key in ("protocols", "secure_protocols"):
                value = service.get(key) or ()
                found.update([value] if isinstance(value, str) else value)
        return frozenset(s.lower() for s in found)


def instantiate(apprise: Any, url: str) -> Any:
    """Return Apprise's plugin for `url`, None if Apprise cannot send to it."""
    logger = logging.getLogger("apprise")
    if logger.handlers:
        # Someone listens (a notify channel's handler during a tick, or the application's):
        # the logger is left as it is. Switching it off here would be a race with the
        # channel's threads, whose failures are read from what Apprise logs.
        return apprise.Apprise.instantiate(url, suppress_exceptions=True)
    # Nobody does: why Apprise refuses a URL would reach stderr through logging's last resort,
    # token and all; the caller words the error itself.
    disabled, logger.disabled = logger.disabled, True
    try:
        return apprise.Apprise.instantiate(url, suppress_exceptions=True)
    finally:
        logger.disabled = disabled


@functools.lru_cache(maxsize=4096)
def masked(url: str) -> str:
    """Return an Apprise URL with its tokens masked: `slack://T...2/A...D/T...Q`.

    Only Apprise knows which parts of each service's URL are secrets (a Slack URL's host is a
    token, an ntfy URL's a server), so its privacy mode (`url(privacy=True)`) decides for the
    host and user parts. Every path part is masked on top of that: Apprise leaves an ntfy topic
    in clear, though on a public server the topic is all it takes to read or post. The query,
    where Apprise puts its defaults and some services their keys, is left out. Without Apprise
    (the extra uninstalled since) nothing past the scheme is shown.
    """
    scheme = url.split("://", 1)[0] if "://" in url else "notify"
    try:
        plugin = instantiate(apprise_module(), url)
        text = None if plugin is None else str(plugin.url(privacy=True))
    except Exception:  # any failure shows less, never more
        text = None
    if not text or "://" not in text:
        return f"{scheme}://{redact.MASK}"
    head, _, path = text.split("?", 1)[0].partition("://")[2].partition("/")
    parts = [_mask_part(p) for p in path.split("/") if p]
    return f"{scheme}://" + "/".join([head, *parts])


def _mask_part(part: str) -> str:
    if "..." in part:
        return part  # Apprise masked it already
    return f"{part[0]}...{part[-1]}" if len(part) > 4 else redact.MASK
