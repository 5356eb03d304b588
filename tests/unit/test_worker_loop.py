"""The worker's loop in-process: a signal ends it between ticks, never inside one."""

import os
import signal

from duequeue.worker import Ticked, Worker


def test_a_signal_during_a_tick_lets_the_tick_finish_first() -> None:
    log: list[str] = []
    calls = 0

    def tick() -> Ticked:
        nonlocal calls
        calls += 1
        os.kill(os.getpid(), signal.SIGTERM)  # arrives in the middle of this tick
        return Ticked("tick finished")

    before = signal.getsignal(signal.SIGTERM)
    Worker(60.0, tick, log.append).run()
    assert calls == 1
    assert log == ["tick finished", "worker: stopped by a signal"]
    assert signal.getsignal(signal.SIGTERM) is before


def test_a_signal_the_tick_caught_itself_ends_the_loop_after_that_tick() -> None:
    log: list[str] = []
    results = iter([Ticked("first"), Ticked("second, stopped", stopped_by="SIGTERM")])

    def tick() -> Ticked:
        # The tick's own handler (stopsignal.py) took the signal, so only the result tells.
        return next(results)

    Worker(0.0, tick, log.append).run()
    assert log == ["first", "second, stopped", "worker: stopped by a signal"]


def test_a_signal_between_ticks_ends_the_wait_at_once() -> None:
    log: list[str] = []

    def sleep(seconds: float) -> None:
        assert seconds > 0
        os.kill(os.getpid(), signal.SIGTERM)  # arrives while waiting for the next tick
        raise AssertionError("the signal should have ended the wait")

    Worker(60.0, lambda: Ticked("tick"), log.append, sleep=sleep).run()
    assert log == ["tick", "worker: stopped by a signal"]


def test_a_failing_tick_is_logged_and_the_loop_goes_on() -> None:
    from duequeue.errors import StoreError

    log: list[str] = []
    results = iter([StoreError("database locked"), "tick ok"])

    def tick() -> Ticked:
        result = next(results)
        if isinstance(result, Exception):
            raise result
        os.kill(os.getpid(), signal.SIGTERM)
        return Ticked(result)

    Worker(0.001, tick, log.append).run()
    assert log == ["tick failed: database locked", "tick ok", "worker: stopped by a signal"]
