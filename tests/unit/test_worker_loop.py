"""The worker's loop in-process: a signal ends it between ticks, never inside one."""

import os
import signal

from duequeue.errors import DuequeueError, StoreError
from duequeue.operations.worker import Worker


def _never_fails(exc: DuequeueError) -> None:
    raise AssertionError(f"no tick should fail here: {exc}")


def test_a_signal_during_a_tick_lets_the_tick_finish_first() -> None:
    finished: list[int] = []

    def tick() -> None:
        os.kill(os.getpid(), signal.SIGTERM)  # arrives in the middle of this tick
        finished.append(1)

    before = signal.getsignal(signal.SIGTERM)
    Worker(60.0, tick, _never_fails).run()
    assert finished == [1]
    assert signal.getsignal(signal.SIGTERM) is before


def test_a_signal_the_tick_caught_itself_ends_the_loop_after_that_tick() -> None:
    ticks: list[str | None] = []
    results = iter([None, "SIGTERM", None])

    def tick() -> str | None:
        # The tick's own handler (stopsignal.py) took the signal, so only the result tells.
        ticks.append(next(results))
        return ticks[-1]

    Worker(0.0, tick, _never_fails).run()
    assert ticks == [None, "SIGTERM"]


def test_a_signal_between_ticks_ends_the_wait_at_once() -> None:
    ticks: list[int] = []

    def sleep(seconds: float) -> None:
        assert seconds > 0
        os.kill(os.getpid(), signal.SIGTERM)  # arrives while waiting for the next tick
        raise AssertionError("the signal should have ended the wait")

    Worker(60.0, lambda: ticks.append(1), _never_fails, sleep=sleep).run()
    assert ticks == [1]


def test_a_failing_tick_is_reported_and_the_loop_goes_on() -> None:
    failed: list[str] = []
    results = iter([StoreError("database locked"), "tick ok"])
    done: list[str] = []

    def tick() -> None:
        result = next(results)
        if isinstance(result, Exception):
            raise result
        os.kill(os.getpid(), signal.SIGTERM)
        done.append(result)

    Worker(0.001, tick, lambda exc: failed.append(str(exc))).run()
    assert (failed, done) == (["database locked"], ["tick ok"])


class _Clock:
    """A monotonic clock and a wall clock (unix ms) that only the fakes move."""

    def __init__(self) -> None:
        self.mono = 1000.0
        self.wall_ms = 1_700_000_000_000

    def pass_s(self, seconds: float) -> None:
        self.mono += seconds
        self.wall_ms += round(seconds * 1000)


class _Listener:
    """Scripted wake-ups: each wait returns the next answer, after the time it says passed."""

    def __init__(self, clock: _Clock, answers: list[tuple[float, list[int | None] | None]]):
        self.clock, self.answers = clock, answers
        self.waits: list[float] = []
        self.closed = False

    def wait(self, timeout_s: float) -> list[int | None] | None:
        self.waits.append(round(timeout_s, 3))
        if not self.answers:
            os.kill(os.getpid(), signal.SIGTERM)  # the script is over: stop the worker
            raise AssertionError("the signal should have ended the wait")
        after, woke = self.answers.pop(0)
        self.clock.pass_s(min(after, timeout_s))
        return woke

    def close(self) -> None:
        self.closed = True


def _worker(clock: _Clock, listener: _Listener, ticks: list[float]) -> Worker:
    return Worker(
        60.0,
        lambda: ticks.append(clock.mono),
        _never_fails,
        monotonic=lambda: clock.mono,
        sleep=clock.pass_s,
        listener=listener,
        wall_ms=lambda: clock.wall_ms,
    )


def test_a_fire_made_due_before_the_next_poll_wakes_the_worker_at_that_fire() -> None:
    clock = _Clock()
    ticks: list[float] = []
    listener = _Listener(
        clock,
        [
            (5.0, [clock.wall_ms + 5_000]),  # 5 s in: a reminder added due now
            (10.0, [clock.wall_ms + 15_000 + 20_000]),  # at 15 s: one due 20 s later
            (20.0, []),  # nothing else: that wait runs out at the fire
            (3.0, [None]),  # at 38 s: an import (fires not named): tick at once
        ],
    )
    _worker(clock, listener, ticks).run()
    assert ticks == [1000.0, 1005.0, 1035.0, 1038.0]
    # Each wait is bounded by the next poll (60 s after the tick before) or the fire named.
    assert listener.waits == [60.0, 60.0, 20.0, 60.0, 60.0]
    assert listener.closed


def test_a_fire_after_the_next_poll_does_not_wake_the_worker() -> None:
    clock = _Clock()
    ticks: list[float] = []
    listener = _Listener(clock, [(5.0, [clock.wall_ms + 3_600_000]), (55.0, [])])
    _worker(clock, listener, ticks).run()
    assert ticks == [1000.0, 1060.0]  # the regular poll only
    assert listener.waits == [60.0, 55.0, 60.0]


def test_a_listener_that_cannot_listen_falls_back_to_polling() -> None:
    clock = _Clock()
    ticks: list[float] = []
    listener = _Listener(clock, [(0.0, None), (0.0, None)])
    _worker(clock, listener, ticks).run()
    assert ticks == [1000.0, 1060.0, 1120.0]
