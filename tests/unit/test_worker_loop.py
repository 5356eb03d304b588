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
