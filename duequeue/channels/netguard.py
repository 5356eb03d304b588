"""DUEQUEUE_WEBHOOK_BLOCK_PRIVATE: keep webhooks off loopback, private and metadata addresses.

For deployments where webhook URLs come from less trusted users (server-side request forgery).
The guard sits in the one delivery stack, aiohttp's connector (aiohttp_poster.py), and checks
an address at three points, so a blocked host gets nothing, not even a TCP handshake (whose
"connection refused" or not would tell a prober which internal ports are open):

- a host name's addresses pass through `GuardedResolver`: blocked ones are dropped, so a name
  with a public and a private address connects to the public one, and a name with only
  blocked addresses is refused;
- an IP-literal host, which aiohttp never resolves, is judged before connecting
  (`Guard.check_host`);
- the peer of the connection actually made is judged before a byte of the request is written
  (`Guard.check_peer`): defence in depth, should an address ever reach the socket another way.

The session never uses a proxy (aiohttp reads proxy variables only with trust_env=True), so the
peer is always the receiver itself.
"""

import ipaddress
import socket
from collections.abc import Callable

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

# Not covered by Python's is_private/is_global in every version, or worth naming on their own.
_NAMED_NETWORKS: tuple[tuple[str, str], ...] = (
    ("169.254.169.254/32", "a cloud metadata address"),
    ("fd00:ec2::254/128", "a cloud metadata address"),
    ("100.64.0.0/10", "a shared (CGNAT) address"),
    ("192.0.0.0/24", "an IETF protocol address"),
    ("198.18.0.0/15", "a benchmarking address"),
)
_NETWORKS = tuple((ipaddress.ip_network(net), reason) for net, reason in _NAMED_NETWORKS)
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_SETTING = "refused by DUEQUEUE_WEBHOOK_BLOCK_PRIVATE"


class BlockedAddressError(Exception):
    """A webhook host is (or resolved to) an address DUEQUEUE_WEBHOOK_BLOCK_PRIVATE refuses.

    Not an OSError: aiohttp would wrap one as a DNS or connection failure, which is retried;
    a refusal is permanent.
    """


def blocked_reason(address: str | IPAddress) -> str | None:
    """Return why `address` is refused ("a loopback address", ...), or None if it is public."""
    ip = ipaddress.ip_address(address) if isinstance(address, str) else address
    if isinstance(ip, ipaddress.IPv6Address):
        # An IPv4 address wrapped in IPv6 reaches the IPv4 host: judge that one.
        embedded = ip.ipv4_mapped or ip.sixtofour
        if embedded is None and ip in _NAT64:
            embedded = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
        if embedded is not None:
            return blocked_reason(embedded)
    for network, reason in _NETWORKS:
        if ip in network:
            return reason
    if ip.is_loopback:
        return "a loopback address"
    if ip.is_unspecified:
        return "the unspecified address"
    if ip.is_link_local:
        return "a link-local address"
    if ip.is_multicast:
        return "a multicast address"
    if ip.is_reserved:
        return "a reserved address"
    if ip.is_private:
        return "a private address"
    if not ip.is_global:
        return "a reserved address"
    return None


def _parse(host: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(host.split("%", 1)[0])  # drop an IPv6 zone id
    except ValueError:
        return None


class Guard:
    """The checks of one webhook channel; `reason` judges an address (blocked_reason)."""

    def __init__(self, reason: Callable[[IPAddress], str | None] = blocked_reason) -> None:
        self._reason = reason

    def resolver(self, inner: AbstractResolver | None = None) -> "GuardedResolver":
        """Return a resolver for aiohttp's connector: `inner` (aiohttp's default resolver
        unless given) minus the blocked addresses."""
        return GuardedResolver(self, inner or aiohttp.DefaultResolver())

    def refusal(self, host: str) -> str | None:
        """Return the refusal of a resolved address or IP literal, None if it may be used."""
        ip = _parse(host)
        if ip is None:
            return f"{host or 'an unknown address'}, which cannot be judged; {_SETTING}"
        reason = self._reason(ip)
        return None if reason is None else f"{ip}, {reason}; {_SETTING}"

    def check_host(self, host: str | None) -> None:
        """Refuse an IP-literal URL host that is blocked; a name is left to the resolver."""
        if host is None or _parse(host) is None:
            return
        refusal = self.refusal(host)
        if refusal is not None:
            raise BlockedAddressError(f"webhook host is {refusal}")

    def check_peer(self, connection: aiohttp.connector.Connection) -> None:
        """Refuse (and close) a connection whose peer is blocked, before the request goes out."""
        transport = connection.transport
        peer = transport.get_extra_info("peername") if transport is not None else None
        host = peer[0] if isinstance(peer, tuple) and peer and isinstance(peer[0], str) else ""
        refusal = self.refusal(host)
        if refusal is not None:
            connection.close()
            raise BlockedAddressError(f"webhook connected to {refusal}")


class GuardedResolver(AbstractResolver):
    """aiohttp's default resolver, minus the addresses the guard blocks."""

    def __init__(self, guard: Guard, inner: AbstractResolver) -> None:
        self._guard = guard
        self._inner = inner

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        results = await self._inner.resolve(host, port, family)
        allowed = [r for r in results if self._guard.refusal(r["host"]) is None]
        if not allowed:
            refusal = self._guard.refusal(results[0]["host"]) if results else None
            raise BlockedAddressError(f"webhook host resolved to {refusal or 'no address'}")
        return allowed

    async def close(self) -> None:
        await self._inner.close()
