"""What every command shares, light enough for cron's plain `tick` (no typer here): the Queue a
command opens, and the body of `tick`."""

import os
import sys
from typing import TYPE_CHECKING

from duequeue.api.queue import Queue
from duequeue.errors import DatabaseLostError

if TYPE_CHECKING:
    import typer

    from duequeue.api.results import TickSummary


def degrade_unencodable_output() -> None:
    """Print a character the terminal's charset lacks as ? instead of crashing on it."""
    # PYTHONIOENCODING=latin-1 or an ASCII locale would otherwise end `inspect` with a
    # UnicodeEncodeError at the first subject in another script; --json output is ASCII anyway.
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None and (stream.encoding or "").lower().replace("-", "") != "utf8":
            reconfigure(errors="replace")


def queue(ctx: "typer.Context", *, create: bool = False) -> Queue:
    """Return the Queue the root command's --db and --config name, settings validated.

    Only `init` and the commands that add reminders create a missing database: any other
    command on a mistyped path must fail, not leave an empty database behind (a cron `tick`
    would log healthy lines on it forever, a `stats --prometheus` publish its zeros).
    """
    root = ctx.find_root().params
    return Queue(root.get("db"), config=root.get("config"), create=create)


def run_tick(db: str | None, config: str | None, limit: int | None, as_json: bool) -> None:
    """Run one tick with the effective settings and print its summary."""

    def show(summary: "TickSummary") -> None:
        # Printed while the tick still holds SIGTERM/SIGINT: a stop never cuts the summary off.
        if as_json:
            import json  # lazy: cron's plain `tick` prints text

            print(json.dumps(summary.as_json()))
        else:
            print(f"tick: {summary.line()}")
        sys.stdout.flush()
        lost = lost_line(summary)
        if lost is not None:
            print(lost, file=sys.stderr)

    # create=False: a tick on a missing database is a mistyped --db or a step of the setup left
    # out; it fails with one line naming the path and `duequeue init` (an os.path.exists).
    with Queue(db, config=config, create=False) as q:
        try:
            summary = q.tick(limit=limit, report=show)
        except DatabaseLostError as exc:
            summary = exc.summary
    lost = lost_line(summary)
    if summary.stopped_by:
        sys.stdout.flush()
        die_by(summary.stopped_by)  # everything is written back; now end as the signal asks
    if lost is not None:
        sys.exit(1)  # the tick could not do its job: its outcomes are not all in the ledger


def die_by(name: str) -> None:
    """End the process by the signal `name` (e.g. "SIGTERM") with its default action, so a
    shell sees 128+N and systemd a clean stop."""
    import signal  # lazy: only a tick a signal stopped gets here

    sig = signal.Signals[name]
    signal.signal(sig, signal.SIG_DFL)
    os.kill(os.getpid(), sig)


def lost_line(s: "TickSummary") -> str | None:
    """Return the one line a tick that lost its database says on stderr; None if it did not."""
    if s.lost is None:
        return None
    if not s.unrecorded:
        return (
            "tick: lost the database mid-tick; every send was recorded, and its unfinished "
            "rows come back after lease expiry"
        )
    sends = "send" if s.unrecorded == 1 else "sends"
    return (
        f"tick: lost the database mid-tick; {s.unrecorded} {sends} could not be recorded and "
        "may be sent again by another host after lease expiry"
    )
