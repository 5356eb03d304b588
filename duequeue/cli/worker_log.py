"""What `duequeue worker` logs: what changed, and a heartbeat at most hourly in between.

A worker ticking every 10 s would print 8,640 idle lines a day. It prints its first tick, every
tick that did something, the first tick after a failure, a failure when it is new (the same
failure again only in the hourly heartbeat); and when an hour passed without a line, one line
saying it is alive and how many ticks it did not log. `Queue.worker(on_tick=)` still gets every
tick; this is only the command line's choice.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from duequeue.cli.instants import iso

if TYPE_CHECKING:
    from collections.abc import Callable

    from duequeue.api.results import TickSummary

HEARTBEAT_S = 3600.0


def idle(summary: TickSummary) -> bool:
    """Return whether a tick found nothing to do and nothing went wrong."""
    return (
        summary.claimed == 0
        and not summary.errors
        and summary.stopped_by is None
        and summary.lost is None
        and not summary.refused
        and not summary.unrecorded
        and summary.alert_error is None
    )


class WorkerLog:
    """Decide which lines a long-running worker prints (a heartbeat every `heartbeat_s`)."""

    def __init__(
        self, heartbeat_s: float = HEARTBEAT_S, monotonic: Callable[[], float] = time.monotonic
    ) -> None:
        self.heartbeat_s = heartbeat_s
        self._monotonic = monotonic
        self._started = False
        self._failure: str | None = None  # the failure last logged, until a tick runs again
        self._printed_at = 0.0
        self._unlogged = 0  # ticks since the last line that were not logged

    def tick(self, summary: TickSummary) -> str | None:
        """Return the line to print for a tick that ran (None for most idle ones)."""
        changed = not self._started or self._failure is not None or not idle(summary)
        self._started, self._failure = True, None
        if changed:
            return self._printed(f"{iso(summary.at)} tick: {summary.line()}")
        self._unlogged += 1
        if not self._due():
            return None
        return self._printed(
            f"{iso(summary.at)} worker: alive, {self._unlogged} idle ticks since the last line"
        )

    def failed(self, message: str) -> str | None:
        """Return the line to print for a tick that failed with `message` (None: a repeat)."""
        again = self._failure == message
        if again and not self._due():
            self._unlogged += 1
            return None
        more = f" ({self._unlogged} more times since the last line)" if again else ""
        self._started, self._failure = True, message
        return self._printed(f"tick failed: {message}{more}")

    def _due(self) -> bool:
        return self._monotonic() - self._printed_at >= self.heartbeat_s

    def _printed(self, line: str) -> str:
        self._printed_at = self._monotonic()
        self._unlogged = 0
        return line
