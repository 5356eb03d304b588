"""The token throttle (duequeue/web/throttle.py) on a clock the test moves: free tries, then a
wait that doubles up to a cap, a success that resets, clients apart, bounded memory."""

import pytest

from duequeue.web.throttle import FREE, MAX_WAIT, Throttle, client_key


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


def test_a_few_wrong_tokens_are_free_then_each_waits_twice_as_long(clock: Clock) -> None:
    t = Throttle(clock)
    assert [t.failed("a") for _ in range(FREE - 1)] == [0] * (FREE - 1)
    waits = []
    for _ in range(6):
        waits.append(t.failed("a"))
        assert t.wait("a") == waits[-1]
        clock.now += waits[-1]  # the client waits as told, then tries (and fails) again
        assert t.wait("a") == 0
    assert waits == [1, 2, 4, 8, 16, 32]


def test_the_wait_never_passes_the_cap(clock: Clock) -> None:
    t = Throttle(clock)
    for _ in range(200):
        clock.now += t.wait("a")
        assert t.failed("a") <= MAX_WAIT
    assert t.wait("a") == MAX_WAIT


def test_a_try_during_the_wait_counts_for_nothing(clock: Clock) -> None:
    t = Throttle(clock)
    for _ in range(FREE):
        t.failed("a")
    assert t.wait("a") == 1
    clock.now += 0.5
    assert t.wait("a") == 1  # what is left, rounded up: Retry-After is whole seconds
    assert t.wait("a") == 1  # asking again neither lengthens nor resets it


def test_a_success_resets(clock: Clock) -> None:
    t = Throttle(clock)
    for _ in range(FREE + 3):
        clock.now += t.wait("a")
        t.failed("a")
    clock.now += t.wait("a")
    t.succeeded("a")
    assert [t.failed("a") for _ in range(FREE - 1)] == [0] * (FREE - 1)


def test_clients_are_apart(clock: Clock) -> None:
    t = Throttle(clock)
    for _ in range(FREE + 5):
        clock.now += t.wait("attacker")
        t.failed("attacker")
    assert t.wait("attacker") > 0
    assert t.wait("admin") == 0
    assert t.failed("admin") == 0


def test_failures_are_forgotten_after_a_quiet_while(clock: Clock) -> None:
    t = Throttle(clock, forget=900)
    for _ in range(FREE):
        t.failed("a")
    clock.now += 1 + 901
    assert t.wait("a") == 0 and len(t) == 0
    assert t.failed("a") == 0  # counted afresh


def test_memory_is_bounded_by_forgetting_the_longest_quiet(clock: Clock) -> None:
    t = Throttle(clock, size=100)
    for i in range(10_000):
        clock.now += 0.001
        t.failed(f"10.0.{i // 256}.{i % 256}")
    assert len(t) == 100
    for _ in range(FREE):
        t.failed("recent")
    assert t.wait("recent") > 0 and len(t) == 100


def test_a_client_is_an_address_or_its_ipv6_64() -> None:
    assert client_key("203.0.113.7") == "203.0.113.7"
    assert client_key("2001:db8:1:2:aaaa::1") == client_key("2001:db8:1:2:bbbb::9")
    assert client_key("2001:db8:1:2::1") != client_key("2001:db8:1:3::1")
    assert client_key("::ffff:203.0.113.7") == "203.0.113.7"
    assert client_key(None) == "unknown"
