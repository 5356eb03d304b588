"""Graceful stop of a tick on SIGTERM / SIGINT, and dying by that signal afterwards.

A tick that gets SIGTERM (systemd stopping it, `kill`) or SIGINT (Ctrl-C) starts no new
delivery, lets the ones in flight finish within their timeouts, records and writes them back,
releases the rest, and then dies by the same signal: a shell sees 128+N, systemd counts it a clean
stop, and the database is as consistent as after a normal tick. A second signal abandons what is
still in flight (unrecorded, so possibly sent again later) and releases those rows too.
"""

import asyncio
import contextlib
import os
import signal
import sys
import threading
from collections.abc import AsyncIterator, Callable

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


@contextlib.asynccontextmanager
async def on_stop_signals(callback: Callable[[signal.Signals], None]) -> AsyncIterator[None]:
    """Call `callback` from the running loop on SIGTERM/SIGINT while inside the block."""
    if threading.current_thread() is not threading.main_thread() or os.name != "posix":
        # Signals reach only the main thread, and only POSIX loops can catch them; elsewhere a
        # stop ends the tick as a crash would, and the lease takes care of its rows.
        yield
        return
    loop = asyncio.get_running_loop()
    previous = {sig: signal.getsignal(sig) for sig in STOP_SIGNALS}

    received: list[signal.Signals] = []

    def stop(sig: signal.Signals) -> None:
        # One line for the cron log: the operator sees why this tick ended early.
        received.append(sig)
        if len(received) == 1:
            note = "stopping; deliveries in flight finish, the rest are released"
        else:
            note = "stopping now; deliveries in flight are abandoned and may be sent again"
        print(f"duequeue: {sig.name}: {note}", file=sys.stderr, flush=True)
        callback(sig)

    for sig in STOP_SIGNALS:
        loop.add_signal_handler(sig, stop, sig)
    try:
        yield
    finally:
        for sig, handler in previous.items():
            loop.remove_signal_handler(sig)
            if handler is not None:
                signal.signal(sig, handler)


def die_by(name: str) -> None:
    """End the process by the signal `name` (e.g. "SIGTERM") with its default action."""
    sig = signal.Signals[name]
    signal.signal(sig, signal.SIG_DFL)
    os.kill(os.getpid(), sig)
