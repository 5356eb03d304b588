"""DUEQUEUE_WEBHOOK_BLOCK_PRIVATE in aiohttp's connector: nothing reaches a blocked address.

Every address here is loopback, so the tests judge with a stand-in rule that blocks 127.0.0.2
and allows 127.0.0.1 (the real rule's table is tested in tests/e2e/test_faults.py). A listener
on 127.0.0.2 shows whether a connection was even attempted: the kernel completes a handshake
into its accept queue without the program accepting it.
"""

import asyncio
import contextlib
import socket
from collections.abc import Iterator
from datetime import UTC, datetime

from duequeue.channels.base import Message, Outcome
from duequeue.channels.netguard import Guard, IPAddress
from duequeue.channels.webhook_sender import WebhookChannel
from tests.resolver import ScriptedResolver
from tests.servers import HttpSink

MSG = Message(1, datetime(2027, 1, 1, tzinfo=UTC), "s", "b", None, "dq_1_0_1")
BLOCKED = "127.0.0.2"
REFUSED = "a test-blocked address; refused by DUEQUEUE_WEBHOOK_BLOCK_PRIVATE"


def judge(ip: IPAddress) -> str | None:
    return "a test-blocked address" if str(ip) == BLOCKED else None


@contextlib.contextmanager
def blocked_listener(port: int) -> Iterator[socket.socket]:
    """Listen on the blocked address at `port`; never accept."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.bind((BLOCKED, port))
        listener.listen(8)
        listener.setblocking(False)
        yield listener


def was_connected(listener: socket.socket) -> bool:
    try:
        conn, _ = listener.accept()
    except BlockingIOError:
        return False
    conn.close()
    return True


def send(url: str, guard: Guard, names: dict[str, list[str]] | None = None) -> Outcome:
    async def run() -> Outcome:
        async with WebhookChannel(
            secret=None,
            timeout=2,
            guard=guard,
            resolver=lambda: ScriptedResolver(names or {}),
        ) as channel:
            return await channel.send(MSG, url)

    return asyncio.run(run())


def test_a_name_with_a_blocked_and_an_allowed_address_uses_the_allowed_one(
    http: HttpSink,
) -> None:
    url = http.url("/hook").replace("127.0.0.1", "hooks.test")
    with blocked_listener(http.port) as listener:
        outcome = send(url, Guard(judge), {"hooks.test": [BLOCKED, "127.0.0.1"]})
        connected = was_connected(listener)

    assert outcome == Outcome("sent")
    assert len(http.requests_for("/hook")) == 1
    assert not connected


def test_a_name_with_only_blocked_addresses_is_refused_without_a_handshake(
    http: HttpSink,
) -> None:
    url = http.url("/hook").replace("127.0.0.1", "hooks.test")
    with blocked_listener(http.port) as listener:
        outcome = send(url, Guard(judge), {"hooks.test": [BLOCKED]})
        connected = was_connected(listener)

    assert outcome == Outcome("permanent", f"webhook host resolved to {BLOCKED}, {REFUSED}")
    assert not connected


def test_a_blocked_ip_literal_is_refused_without_a_handshake(http: HttpSink) -> None:
    url = http.url("/hook").replace("127.0.0.1", BLOCKED)
    with blocked_listener(http.port) as listener:
        outcome = send(url, Guard(judge))
        connected = was_connected(listener)

    assert outcome == Outcome("permanent", f"webhook host is {BLOCKED}, {REFUSED}")
    assert not connected


class _HostCheckBypassed(Guard):
    """A guard whose pre-connect check misses the host, as a path not foreseen might."""

    def check_host(self, host: str | None) -> None:
        pass


def test_the_peer_actually_connected_is_checked_before_the_request_goes_out(
    http: HttpSink,
) -> None:
    url = http.url("/hook").replace("127.0.0.1", BLOCKED)
    with blocked_listener(http.port):
        # The listener never answers: were a request sent, the attempt would time out instead.
        outcome = send(url, _HostCheckBypassed(judge))

    assert outcome == Outcome("permanent", f"webhook connected to {BLOCKED}, {REFUSED}")


def test_an_allowed_literal_passes_all_three_checks(http: HttpSink) -> None:
    assert send(http.url("/hook"), Guard(judge)) == Outcome("sent")
    assert len(http.requests_for("/hook")) == 1
