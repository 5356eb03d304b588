"""What every command shares, light enough for cron's plain `tick` (no typer here): the clock,
the settings and store a command opens, and the body of `tick`.

Only the CLI reads the clock: `now` and `clock_ms` are the one place; everything below takes
`now` as an argument.
"""

import sys
import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from duequeue.errors import DuequeueError

if TYPE_CHECKING:
    import typer

    from duequeue.config import Settings
    from duequeue.store.base import Store


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


def settings(ctx: "typer.Context", **flags: Any) -> "Settings":
    """Return the effective settings: a command's `flags`, then the root command's --db and
    --config, then DUEQUEUE_*, the config file and the defaults."""
    from duequeue.config import load_settings

    root = ctx.find_root().params
    return load_settings({"db": root.get("db"), **flags}, config_file=root.get("config"))


def report(exc: DuequeueError) -> int:
    """Say what went wrong in one line on stderr; return the exit code (the one mapping of
    DuequeueError to the command line, for typer's commands and cron's plain `tick` alike)."""
    print(f"duequeue: error: {exc}", file=sys.stderr)
    return exc.exit_code


def open_store(settings: "Settings", create: bool = False) -> "Store":
    """Open the database; only commands that add reminders create a missing one."""
    from duequeue.store import open_store as open_

    # A read-only command on a mistyped path must fail, not leave an empty database behind
    # (a cron `stats --prometheus` would publish its zeros).
    return open_(settings.db, settings.busy_timeout, create=create)
