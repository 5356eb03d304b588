"""Refuse webhooks to internal addresses (DUEQUEUE_WEBHOOK_BLOCK_PRIVATE).

Where reminders come from less trusted users, a webhook URL is a way to make the server send
requests into its own network (server-side request forgery): to localhost admin ports, the LAN,
or a cloud metadata service. Checking the URL's host name is not enough, because a name can
resolve to a public address when checked and to an internal one when connected (DNS rebinding).
So the check runs on the socket itself: after TCP connect, before a byte of the request is sent,
the peer address is classified and a blocked one closes the connection.
"""

import ipaddress
from typing import Any

import httpcore
import httpx

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


class BlockedAddressError(Exception):
    """A webhook connected to an address DUEQUEUE_WEBHOOK_BLOCK_PRIVATE refuses."""


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


class _GuardedBackend(httpcore.AsyncNetworkBackend):
    """Connect as usual, then refuse the connection if its peer is a blocked address."""

    def __init__(self, inner: httpcore.AsyncNetworkBackend) -> None:
        self._inner = inner

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Any = None,
    ) -> httpcore.AsyncNetworkStream:
        stream = await self._inner.connect_tcp(
            host, port, timeout=timeout, local_address=local_address, socket_options=socket_options
        )
        peer = stream.get_extra_info("server_addr")
        try:
            ip = ipaddress.ip_address(peer[0].split("%", 1)[0])  # drop an IPv6 zone id
        except (TypeError, IndexError, ValueError):
            await stream.aclose()
            raise BlockedAddressError(
                "cannot tell which address the webhook connected to; refused by "
                "DUEQUEUE_WEBHOOK_BLOCK_PRIVATE"
            ) from None
        reason = blocked_reason(ip)
        if reason is not None:
            await stream.aclose()
            raise BlockedAddressError(
                f"webhook host resolved to {ip}, {reason}; refused by "
                "DUEQUEUE_WEBHOOK_BLOCK_PRIVATE"
            )
        return stream

    async def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Any = None
    ) -> httpcore.AsyncNetworkStream:
        raise BlockedAddressError("unix sockets are refused by DUEQUEUE_WEBHOOK_BLOCK_PRIVATE")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


class GuardedTransport(httpx.AsyncHTTPTransport):
    """An httpx transport whose every connection passes the peer-address check.

    It never uses a proxy (a proxy's own address would be the one checked), and it swaps the
    connection pool httpx builds for one with the guarded network backend; the pool's other
    settings are httpx's.
    """

    def __init__(self, *, verify: Any, limits: httpx.Limits) -> None:
        super().__init__(verify=verify, limits=limits, trust_env=False)
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=verify,
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            network_backend=_GuardedBackend(httpcore.AnyIOBackend()),
        )
