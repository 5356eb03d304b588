"""Trusted reverse proxies (`--forwarded-allow-ips`): the client, and the scheme and host it
asked for, as a proxy in front of serve saw them.

As uvicorn's and gunicorn's `--forwarded-allow-ips`: only a request whose peer (the other end
of the TCP connection) is one of the addresses or networks named is read for X-Forwarded-For,
X-Forwarded-Proto and X-Forwarded-Host, or, when it carries none of those, for RFC 7239's
Forwarded; from any other peer they are ignored. Nobody is trusted by default, and `*` (every
peer) only when it is written.

The hops are walked from the nearest: a hop that is itself a trusted proxy is passed over, and
the first that is not is the client. A client therefore cannot name itself: what it writes into
X-Forwarded-For stays left of the address its proxy appends. The scheme and host are those the
proxy that recorded that client wrote beside it (the values at the same position from the
right; the leftmost when a proxy set one value rather than appending).
"""

import ipaddress
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

from aiohttp import web

from duequeue.errors import ConfigError

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network

_X_FAMILY = ("X-Forwarded-For", "X-Forwarded-Proto", "X-Forwarded-Host")
_SCHEMES = frozenset({"http", "https"})
# A Host header's value: a name or an IPv4 address, or an IPv6 one in brackets, and a port.
_HOST = re.compile(r"^(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9](?:[A-Za-z0-9.-]{0,252}))(?::[0-9]{1,5})?$")


@dataclass(frozen=True, slots=True)
class Trusted:
    """The peers whose forwarding headers are believed."""

    networks: tuple[Network, ...] = ()
    everyone: bool = False

    def __bool__(self) -> bool:
        return self.everyone or bool(self.networks)

    def holds(self, address: Address) -> bool:
        """Return whether `address` is a trusted proxy."""
        return self.everyone or any(address in n for n in self.networks)


def parse_allowed(text: str) -> Trusted:
    """Return the trusted proxies a `web_forwarded_allow_ips` value names, or raise ConfigError."""
    items = [item.strip() for item in text.split(",") if item.strip()]
    if items == ["*"]:
        return Trusted(everyone=True)
    networks = []
    for item in items:
        try:
            networks.append(ipaddress.ip_network(item, strict=True))
        except ValueError:
            if item == "*":
                why = "* trusts every peer: give it alone"
            else:
                why = (
                    f"{item[:64]!r} is not an IP address or network: give them comma-separated,"
                    " such as 127.0.0.1,10.0.0.0/8,::1 (or * for every peer)"
                )
            raise ConfigError(why, field="web_forwarded_allow_ips") from None
    return Trusted(tuple(networks))


class Seen(NamedTuple):
    """A request as the client made it to the proxy in front."""

    scheme: str
    host: str
    remote: str


def seen(request: web.BaseRequest, trusted: Trusted) -> Seen | None:
    """Return how the client made `request` through trusted proxies, or None when nothing in it
    is to be believed (its peer is not a trusted proxy, or it says nothing)."""
    peer = address(request.remote or "")
    if not trusted or peer is None or not trusted.holds(peer):
        return None
    headers = request.headers
    if any(name in headers for name in _X_FAMILY):
        fors = _values(headers.getall("X-Forwarded-For", ()))
        protos = _values(headers.getall("X-Forwarded-Proto", ()))
        hosts = _values(headers.getall("X-Forwarded-Host", ()))
    elif "Forwarded" in headers:
        elements = request.forwarded
        fors = [e.get("for", "") for e in elements]
        protos = [e.get("proto", "") for e in elements]
        hosts = [e.get("host", "") for e in elements]
    else:
        return None
    remote, hop = _client(fors, peer, trusted)
    scheme = _at(protos, hop).lower()
    host = _at(hosts, hop)
    return Seen(
        scheme if scheme in _SCHEMES else request.scheme,
        host if len(host) <= 255 and _HOST.match(host) else request.host,
        str(remote),
    )


def _client(fors: Sequence[str], peer: Address, trusted: Trusted) -> tuple[Address, int]:
    """Return the client and its position from the right in `fors`.

    A value that is no address (`unknown`, an obfuscated name, garbage) ends the walk: the
    client is then the last hop known, a trusted proxy."""
    known = peer
    for hop, text in enumerate(reversed(fors)):
        found = address(text)
        if found is None:
            return known, hop
        if not trusted.holds(found):
            return found, hop
        known = found
    return known, max(len(fors) - 1, 0)


def _at(values: Sequence[str], hop: int) -> str:
    """Return the value the proxy of `hop` wrote: at that position from the right, or the
    leftmost when fewer were written (a proxy that set the header rather than appending)."""
    if not values:
        return ""
    return values[-1 - hop] if hop < len(values) else values[0]


def _values(lines: Sequence[str]) -> list[str]:
    # Several lines of one header are one comma-separated list (RFC 9110, 5.3).
    return [v.strip() for line in lines for v in line.split(",")]


def address(text: str) -> Address | None:
    """Return the IP address of a peer or a forwarded node (`1.2.3.4`, `1.2.3.4:80`, `::1`,
    `[::1]:80`), an IPv4-mapped IPv6 one as IPv4; None when it is no address."""
    text = text.strip().strip('"')
    if text.startswith("["):
        text = text[1:].split("]", 1)[0]
    elif text.count(":") == 1:
        text = text.split(":", 1)[0]
    try:
        found = ipaddress.ip_address(text)
    except ValueError:
        return None
    if isinstance(found, ipaddress.IPv6Address) and found.ipv4_mapped is not None:
        return found.ipv4_mapped
    return found
