"""Graceful stop of a tick on SIGTERM / SIGINT, held until its outcomes are written back.

A tick that gets SIGTERM (systemd stopping it, `kill`) or SIGINT (Ctrl-C) starts no new
delivery, lets the ones in flight finish within their timeouts, records and writes them back,
releases the rest, and then dies by the same signal: a shell sees 128+N, systemd counts it a clean
stop, and the database is as consistent as after a normal tick. A second signal abandons what is
still in flight (unrecorded, so possibly sent again later) and releases those rows too.

One handler (`held`) is in place from the tick's first claim that found rows until its caller
lets go, after the summary is printed: never swapped while the tick runs, so there is no moment
in which a signal finds the default action and kills the tick between a receiver's answer and
its ledger row. While the deliveries run it passes each signal to the tick's event loop; once
they are over (the outcomes being written back, the summary being made) a signal is only noted:
nothing is cut short then, not even by a second signal. A signal the summary could no longer
report is passed on, when the hold ends, to whatever handled it before.
"""

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


class Stops:
    """The stop signals one tick caught, and where it passes them while it delivers."""

    def __init__(self) -> None:
        self.caught: list[signal.Signals] = []
        self.told = 0  # how many of them the tick's summary reports (stopped_by)
        self.writing = False  # the deliveries are over: only writing back is left
        self._forward: tuple[Any, Callable[[signal.Signals], None]] | None = None

    def note(self, sig: signal.Signals) -> None:
        """Take one signal: say so in one line (the cron log), and pass it to the loop."""
        self.caught.append(sig)
        if self.writing:
            note = "stopping once the outcomes are written back"
        elif len(self.caught) == 1:
            note = "stopping; deliveries in flight finish, the rest are released"
        else:
            note = "stopping now; deliveries in flight are abandoned and may be sent again"
        print(f"duequeue: {sig.name}: {note}", file=sys.stderr, flush=True)
        if self._forward is not None:
            loop, callback = self._forward
            # A Python handler runs between two bytecodes of the loop's own thread: the loop is
            # only ever told through its thread-safe door.
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                loop.call_soon_threadsafe(callback, sig)

    @contextlib.contextmanager
    def forwarded(self, loop: Any, callback: Callable[[signal.Signals], None]) -> Iterator[None]:
        """Pass every signal to `callback`, on `loop`, while inside the block."""
        self._forward = (loop, callback)
        try:
            yield
        finally:
            self._forward = None


@contextlib.contextmanager
def held() -> Iterator[Stops]:
    """Catch SIGTERM/SIGINT while inside the block (see the module's docstring)."""
    stops = Stops()
    if threading.current_thread() is not threading.main_thread() or os.name != "posix":
        # Signals reach only the main thread's handlers, and only on POSIX can a tick take them;
        # elsewhere a stop ends the tick as a crash would, and the lease takes care of its rows.
        yield stops
        return
    previous = {sig: signal.getsignal(sig) for sig in STOP_SIGNALS}

    def handler(signum: int, frame: FrameType | None) -> None:
        stops.note(signal.Signals(signum))

    for sig in STOP_SIGNALS:
        signal.signal(sig, handler)
    try:
        yield stops
    finally:
        for sig, before in previous.items():
            signal.signal(sig, signal.SIG_DFL if before is None else before)
        if len(stops.caught) > stops.told:
            # Caught after the summary was made: everything is written back and reported, so
            # the signal now does what it would have done (the default: end the process).
            signal.raise_signal(stops.caught[-1])


def die_by(name: str) -> None:
    """End the process by the signal `name` (e.g. "SIGTERM") with its default action."""
    sig = signal.Signals[name]
    signal.signal(sig, signal.SIG_DFL)
    os.kill(os.getpid(), sig)
