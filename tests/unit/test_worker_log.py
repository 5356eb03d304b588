"""What `duequeue worker` logs: changes, and at most an hourly line while nothing happens."""

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from duequeue.cli.worker_log import WorkerLog
from duequeue.engine.summary import TickSummary

T0 = datetime(2027, 1, 5, 8, 0, tzinfo=UTC)
IDLE = TickSummary(at=T0)
BUSY = TickSummary(at=T0, claimed=1, sent=1, deliveries_sent=1)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _day_of_idle_ticks(log: WorkerLog, clock: Clock, every_s: float = 10.0) -> list[str]:
    lines = []
    for n in range(int(86_400 / every_s)):
        clock.now += every_s
        line = log.tick(replace(IDLE, at=T0 + timedelta(seconds=n * every_s)))
        if line is not None:
            lines.append(line)
    return lines


def test_a_day_of_idle_ticks_every_10s_logs_the_first_and_then_a_line_an_hour() -> None:
    clock = Clock()
    log = WorkerLog(monotonic=clock)
    lines = _day_of_idle_ticks(log, clock)
    # Before: 8,640 lines a day.
    assert len(lines) == 24
    assert lines[0] == f"2027-01-05T08:00:00.000Z tick: {IDLE.line()}"
    assert lines[1] == "2027-01-05T09:00:00.000Z worker: alive, 360 idle ticks since the last line"
    assert all("worker: alive, 360 idle ticks" in line for line in lines[1:])


def test_a_tick_that_did_something_is_always_logged() -> None:
    clock = Clock()
    log = WorkerLog(monotonic=clock)
    assert log.tick(IDLE) is not None
    assert log.tick(IDLE) is None
    assert log.tick(BUSY) == f"2027-01-05T08:00:00.000Z tick: {BUSY.line()}"
    assert log.tick(IDLE) is None
    assert log.tick(replace(IDLE, errors=("row 7: bad rule",))) is not None
    assert log.tick(replace(IDLE, stopped_by="SIGTERM")) is not None
    assert log.tick(replace(IDLE, alert_error="smtp: connection refused")) is not None


def test_a_failure_is_logged_when_new_its_repeats_hourly_and_the_recovery_at_once() -> None:
    clock = Clock()
    log = WorkerLog(monotonic=clock)
    assert log.tick(IDLE) is not None
    assert log.failed("database is locked") == "tick failed: database is locked"
    clock.now += 10
    assert log.failed("database is locked") is None
    assert log.failed("disk full") == "tick failed: disk full"
    for _ in range(360):
        clock.now += 10
        line = log.failed("disk full")
    assert line == "tick failed: disk full (359 more times since the last line)"
    assert log.tick(IDLE) == f"2027-01-05T08:00:00.000Z tick: {IDLE.line()}"  # back to work
