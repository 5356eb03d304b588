"""The console entry point, and the body of `tick` that needs no CLI framework.

Cron runs `duequeue tick` every minute and almost every time nothing is due, so that line must
cost little more than starting Python: when argv is exactly a plain tick (fastargs.py), it runs
here without importing typer at all (typer and the operator commands cost more than the tick).
Every other invocation goes through the typer app in cli.py, whose `tick` command calls the
same `run_tick` below. Only the CLI reads the clock: `now` and `clock_ms` live here for both.
"""

import sys
import time
from datetime import UTC, datetime

from duequeue.errors import DuequeueError


def now() -> datetime:
    """Return the current instant (the one place the CLI reads the wall clock)."""
    return datetime.now(UTC)


def clock_ms() -> int:
    """Return the current instant as unix milliseconds."""
    # The same clock as now() (freezegun fakes both), without a datetime per call: a tick
    # stamps every delivery with it.
    return time.time_ns() // 1_000_000


def degrade_unencodable_output() -> None:
    """Print a character the terminal's charset lacks as ? instead of crashing on it."""
    # PYTHONIOENCODING=latin-1 or an ASCII locale would otherwise end `inspect` with a
    # UnicodeEncodeError at the first subject in another script; --json output is ASCII anyway.
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None and (stream.encoding or "").lower().replace("-", "") != "utf8":
            reconfigure(errors="replace")


def run_tick(db: str | None, config: str | None, limit: int | None, as_json: bool) -> None:
    """Run one tick with the effective settings and print its summary."""
    from duequeue import service
    from duequeue.config import load_settings
    from duequeue.store import open_store

    settings = load_settings({"db": db}, config_file=config)
    store = open_store(settings.db, settings.busy_timeout)
    try:
        summary = service.run_tick(store, settings, now(), clock_ms, limit)
    finally:
        store.close()
    if as_json:
        import json

        print(json.dumps(summary.as_json()))
    else:
        print(f"tick: {summary.line()}")
    if summary.stopped_by:
        from duequeue.engine.stopsignal import die_by

        sys.stdout.flush()
        die_by(summary.stopped_by)  # everything is written back; now end as the signal asks


def main() -> None:
    """Run the CLI (the console script entry point)."""
    degrade_unencodable_output()
    from duequeue.fastargs import tick_args

    args = tick_args(sys.argv[1:])
    if args is None:
        from duequeue.cli import app

        app()
        return
    try:
        run_tick(args.db, args.config, args.limit, args.as_json)
    except DuequeueError as exc:
        print(f"duequeue: error: {exc}", file=sys.stderr)
        sys.exit(exc.exit_code)
