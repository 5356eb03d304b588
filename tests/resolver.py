"""A scripted name lookup for aiohttp: the one part of a webhook's path not real in tests.

No name but localhost resolves here without reaching beyond loopback, so tests that need a host
name (a DNS failure, a name with several addresses) give the channel this resolver.
"""

import socket

from aiohttp.abc import AbstractResolver, ResolveResult


class ScriptedResolver(AbstractResolver):
    """Name lookup as a script: `names` maps a host to its addresses; others fail as DNS does."""

    def __init__(self, names: dict[str, list[str]], error: Exception | None = None) -> None:
        self.names = names
        self.error = error
        self.asked: list[str] = []

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        self.asked.append(host)
        if self.error is not None:
            raise self.error
        if host not in self.names:
            raise socket.gaierror(-2, "Name or service not known")
        return [
            ResolveResult(
                hostname=host, host=ip, port=port, family=socket.AF_INET, proto=0, flags=0
            )
            for ip in self.names[host]
        ]

    async def close(self) -> None:
        pass
