"""The console entry point.

Cron runs `duequeue tick` every minute and almost every time nothing is due, so that line must
cost little more than starting Python: when argv is exactly a plain tick (fastargs.py), it runs
context.run_tick here without importing typer at all (typer and the operator commands cost more
than the tick). Every other invocation goes through the typer app (app.py), whose `tick`
command calls the same `run_tick`.
"""

import sys

from duequeue.cli.context import degrade_unencodable_output, run_tick
from duequeue.cli.fastargs import tick_args
from duequeue.cli.report import report
from duequeue.errors import DuequeueError


def main() -> None:
    """Run the CLI (the console script entry point)."""
    degrade_unencodable_output()
    args = tick_args(sys.argv[1:])
    if args is None:
        # Lazy: typer (and pydantic under it) costs more than a whole empty tick.
        from duequeue.cli.app import app

        app()
        return
    try:
        run_tick(args.db, args.config, args.limit, args.as_json)
    except DuequeueError as exc:
        sys.exit(report(exc))
