"""`worker`: tick on an interval in the foreground until SIGTERM or SIGINT (for systemd).

A signal never cuts a tick short: while one runs it only asks the loop to stop after it, so the
tick writes its outcomes back; between ticks it stops the wait at once. While a tick that claimed
rows runs, it holds the signal itself (stopsignal.py: in-flight sends finish, unstarted rows are
released) and this handler never sees it, so the tick reports it back and the loop ends there.
"""

import signal
import time
from collections.abc import Callable
from types import FrameType

from duequeue.errors import DuequeueError
from duequeue.schedule import rules
from duequeue.store.backend import Listener


def follow_tz_data() -> str | None:
    """Before a tick: follow tz data updated on disk since the last one (schedule/rules.py);
    return the new release when it changed.

    In the process, not by re-executing it: `Queue.worker` runs inside a caller's program,
    which an exec would replace, and an exec would also start whatever version of duequeue is
    installed by then, a code upgrade nobody asked for in the middle of a run. Every cache of
    zone data is duequeue's own (zoneinfo's cache, the zones' digests, the RRULE series, the
    release), so dropping them is complete: cronsim and dateutil keep none of their own (they
    are handed the zone each time).
    """
    return rules.follow_tz_data()


class _Stop(Exception):
    """Raised by the signal handler between ticks to end the wait."""


class Worker:
    """The loop of `duequeue worker`: `tick` runs one tick and returns the stop signal it caught
    itself (None if none); a DuequeueError it raises goes to `on_error` and the loop goes on."""

    def __init__(
        self,
        every_s: float,
        tick: Callable[[], str | None],
        on_error: Callable[[DuequeueError], None],
        monotonic: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
        listener: Listener | None = None,
        wall_ms: Callable[[], int] | None = None,
    ) -> None:
        self.every_s = every_s
        # Between ticks, a wait that a fire made due elsewhere ends early (PostgreSQL); `wall_ms`
        # (unix ms) tells whether a fire it names falls before the next poll.
        self._listener = listener
        self._wall_ms = wall_ms
        self._tick = tick
        self._on_error = on_error
        self._monotonic = monotonic
        self._sleep = sleep
        self._ticking = False
        self.stopping = False

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        self.stopping = True
        if not self._ticking:
            raise _Stop

    def run(self) -> None:
        """Tick every `every_s` seconds until a signal; return after the current tick."""
        previous = {s: signal.signal(s, self._on_signal) for s in (signal.SIGTERM, signal.SIGINT)}
        try:
            self._loop()
        except _Stop:
            pass
        finally:
            for s, handler in previous.items():
                signal.signal(s, handler)
            if self._listener is not None:
                self._listener.close()

    def _loop(self) -> None:
        next_at = self._monotonic()
        while not self.stopping:
            self._ticking = True
            try:
                if self._tick() is not None:
                    self.stopping = True
            except DuequeueError as exc:
                # A locked or unreadable database now may be fine next time; keep the loop up.
                self._on_error(exc)
            finally:
                self._ticking = False
            if self.stopping:
                return
            # Fixed rate, not fixed delay: a tick's own duration does not push the schedule back;
            # one that overran its interval is followed at once, never by a burst.
            next_at = max(next_at + self.every_s, self._monotonic())
            next_at = self._wait(next_at)

    def _wait(self, until: float) -> float:
        """Wait until the monotonic instant `until`, or less if a fire made due elsewhere
        falls before it (then until that fire); return the instant the wait ended at, which
        the fixed-rate schedule goes on from."""
        while (left := until - self._monotonic()) > 0:
            woke = None if self._listener is None else self._listener.wait(left)
            if woke is None:  # nothing to listen with (SQLite), or it is down: poll
                self._sleep(max(0.0, until - self._monotonic()))
                break
            if not woke:
                continue  # the listener's own timeout: `until` reached (the loop checks)
            # A fire not named (an import's), or no clock to place it by: looked for now.
            now_ms = 0 if self._wall_ms is None else self._wall_ms()
            named = [f for f in woke if f is not None and self._wall_ms is not None]
            soonest = min(named) if len(named) == len(woke) else now_ms
            if soonest - now_ms < left * 1000:
                # A wake-up for a fire before the next poll: tick at it, then poll on from there.
                until = self._monotonic() + max(0.0, (soonest - now_ms) / 1000)
        return until
