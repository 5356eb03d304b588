"""The token throttle: a client that keeps giving a wrong token waits longer before each try.

After `FREE` wrong tokens in a row from one client, each further one makes the next try wait:
1 s, then twice as long after each failure, at most `MAX_WAIT`. A try during the wait is not
judged at all (serve answers 429 with Retry-After), so a guess made then tells nothing; a
correct login resets the client. A client is an address as seen through trusted proxies (an
IPv6 /64, which one machine often holds whole), or a browser that logged in before (its device
cookie, auth.py): so an attacker elsewhere, or one sharing the admin's address, never locks the
admin's own browser out, and no wait lasts longer than `MAX_WAIT`.

Memory is bounded: at most `MAX_CLIENTS` clients are remembered, the one whose last failure is
oldest forgotten first, and a client is forgotten `FORGET` seconds after its last wait ended. The
clock is an argument (a monotonic one by default), so the tests move it.
"""

import ipaddress
import math
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

FREE = 5
FIRST_WAIT = 1.0
MAX_WAIT = 300.0
FORGET = 900.0
MAX_CLIENTS = 10_000


@dataclass(slots=True)
class _Record:
    failures: int
    last: float  # when the last failure was
    until: float  # no try is judged before this


class Throttle:
    """Failed tries per client, and how long each must wait."""

    def __init__(
        self,
        clock: Callable[[], float] = time.monotonic,
        *,
        free: int = FREE,
        first_wait: float = FIRST_WAIT,
        max_wait: float = MAX_WAIT,
        forget: float = FORGET,
        size: int = MAX_CLIENTS,
    ) -> None:
        self._clock = clock
        self._free = free
        self._first = first_wait
        self._max = max_wait
        self._forget = forget
        self._size = size
        self._records: OrderedDict[str, _Record] = OrderedDict()

    def __len__(self) -> int:
        return len(self._records)

    def wait(self, client: str) -> int:
        """Return the whole seconds `client` must still wait before a try is judged (0: none)."""
        record = self._current(client)
        if record is None:
            return 0
        left = record.until - self._clock()
        return math.ceil(left) if left > 0 else 0

    def failed(self, client: str) -> int:
        """Count a wrong token from `client`; return the seconds its next try must wait."""
        now = self._clock()
        record = self._current(client)
        if record is None:
            record = self._records[client] = _Record(0, now, now)
        record.failures += 1
        record.last = now
        beyond = record.failures - self._free
        if beyond >= 0:
            record.until = now + min(self._first * 2 ** min(beyond, 32), self._max)
        self._records.move_to_end(client)
        while len(self._records) > self._size:
            self._records.popitem(last=False)
        return self.wait(client)

    def succeeded(self, client: str) -> None:
        """Forget `client`'s failures: it gave the token."""
        self._records.pop(client, None)

    def _current(self, client: str) -> _Record | None:
        record = self._records.get(client)
        if record is not None and self._clock() - max(record.last, record.until) > self._forget:
            del self._records[client]
            return None
        return record


def client_key(remote: str | None) -> str:
    """Return the throttle's key of a client address: an IPv6 address's /64, else the address."""
    text = remote or "unknown"
    try:
        found = ipaddress.ip_address(text)
    except ValueError:
        return text
    if isinstance(found, ipaddress.IPv6Address):
        if found.ipv4_mapped is not None:
            return str(found.ipv4_mapped)
        return str(ipaddress.IPv6Network((found, 64), strict=False))
    return str(found)
