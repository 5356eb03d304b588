"""The operator's commands (import, history, retry, enable, cancel, pause, resume, stats,
prune, doctor, worker, config): flags, one `duequeue.Queue` call, output. Registered on the app
in app.py; a DuequeueError is left to the app to report (cli/report.py)."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Annotated, Any

import typer

from duequeue.api import jsonforms
from duequeue.api.prometheus import text as prometheus_text
from duequeue.api.queue import Queue, check_setup
from duequeue.cli import context, output_ops
from duequeue.cli.report import message
from duequeue.cli.table import table_width
from duequeue.cli.worker_log import WorkerLog
from duequeue.errors import BadInputError, DuequeueError

if TYPE_CHECKING:
    from duequeue.api.results import Change, ImportResult, QueuePause, TickSummary

IDS = Annotated[
    list[int] | None, typer.Argument(metavar="ID", help="Reminder ids.", show_default=False)
]
JSON = Annotated[bool, typer.Option("--json", help="Print JSON.")]


def _echo_json(value: Any) -> None:
    typer.echo(json.dumps(value, indent=2))


def import_(
    ctx: typer.Context,
    file: Annotated[
        str,
        typer.Argument(metavar="FILE", help="JSON Lines file, one reminder a line; - is stdin."),
    ],
    as_json: JSON = False,
) -> None:
    """Add reminders from JSON Lines, all or nothing; a live key with the same content is
    skipped, with other content the import is refused (exit 1, the lines named), as for add."""
    with context.queue(ctx, create=True) as q:
        if file == "-":
            result = _import(q, sys.stdin.buffer, None)
        else:
            try:
                f = open(file, "rb")  # noqa: SIM115 - closed by the with below
            except OSError as exc:
                raise BadInputError(f"cannot read {file}: {exc.strerror}", field="file") from None
            with f:
                result = _import(q, f, Path(file).stat().st_size)
    for note in result.notes:
        typer.echo(f"duequeue: {note}", err=True)
    if as_json:
        _echo_json({"lines": result.lines, "imported": result.imported, "skipped": result.skipped})
    else:
        typer.echo(f"imported {result.imported}, skipped {result.skipped} existing keys")


def _import(q: Queue, f: IO[bytes], size: int | None) -> ImportResult:
    """Import every line; with a progress bar when stderr is a terminal."""
    if not sys.stderr.isatty():
        return q.import_lines(f)
    # Lazy: rich is for a person at a terminal, never for cron.
    from rich.console import Console
    from rich.progress import Progress

    with Progress(console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task("checking", total=size)

        def progress(phase: str, size: int) -> None:
            if phase == "checking":
                bar.advance(task, size)
            else:
                bar.update(task, description=phase)

        return q.import_lines(f, progress=progress)


def history(
    ctx: typer.Context,
    reminder_id: Annotated[int, typer.Argument(metavar="ID", help="The reminder id.")],
    as_json: JSON = False,
    wide: Annotated[
        bool,
        typer.Option("--wide", help="On a terminal: every column, no cell shortened."),
    ] = False,
) -> None:
    """Show every delivery attempt of a reminder, and its dead letters.

    On a terminal each table row is one line fitted to its width (--wide shows everything);
    in a pipe the tables are tab-separated.
    """
    with context.queue(ctx) as q:
        found = q.history(reminder_id)
    if as_json:
        _echo_json(jsonforms.history(found))
    else:
        typer.echo(output_ops.history_text(found, table_width(wide)))


def retry(
    ctx: typer.Context,
    ids: IDS = None,
    all_dead: Annotated[
        bool, typer.Option("--all-dead", help="Every reminder with a dead fire.")
    ] = False,
    as_json: JSON = False,
) -> None:
    """Re-arm dead-lettered fires: due now, error count reset; sent targets are not re-sent."""
    with context.queue(ctx) as q:
        changes = q.retry(*(ids or ()), all_dead=all_dead)
    if not changes and not as_json:
        # Nothing to do is no failure (exit 0, so a cron line does not mail), but it is said.
        typer.echo("nothing to retry: no dead fire awaits retry")
    _changes(changes, "retried", as_json)


def cancel(
    ctx: typer.Context,
    ids: IDS = None,
    key: Annotated[
        str | None,
        typer.Option(
            "--key",
            metavar="KEY",
            help="Cancel the live reminder holding this key (as given to add --key).",
            show_default=False,
        ),
    ] = None,
    as_json: JSON = False,
) -> None:
    """Cancel reminders so they never fire again (inspect --all still lists them)."""
    with context.queue(ctx) as q:
        changes = q.cancel(*(ids or ()), key=key)
    _changes(changes, "cancelled", as_json)


def pause(ctx: typer.Context, ids: IDS = None, as_json: JSON = False) -> None:
    """Pause reminders, or without ID the whole queue: no tick delivers them until `resume`.

    A paused queue's ticks claim nothing and say so in their line and JSON; `stats`,
    `inspect` and `doctor` say so too. A paused reminder keeps its pending fire (`inspect
    --all` shows it `paused`); one a tick is delivering right now is skipped: try again.
    """
    with context.queue(ctx) as q:
        if ids:
            _changes(q.pause(*ids), "paused", as_json)
            return
        done = q.pause_queue()
    _queue_pause(done, as_json)


def resume(ctx: typer.Context, ids: IDS = None, as_json: JSON = False) -> None:
    """Resume paused reminders, or without ID the whole queue.

    A fire whose time passed while paused goes out once at the next tick (or is skipped past
    its misfire grace), as after missed ticks.
    """
    with context.queue(ctx) as q:
        if ids:
            _changes(q.resume(*ids), "resumed", as_json)
            return
        done = q.resume_queue()
    _queue_pause(done, as_json)


def _queue_pause(done: QueuePause, as_json: bool) -> None:
    if as_json:
        _echo_json(output_ops.queue_pause_json(done))
    else:
        typer.echo(output_ops.queue_pause_text(done))


def enable(ctx: typer.Context, ids: IDS = None, as_json: JSON = False) -> None:
    """Switch back on the targets disabled after their endpoint answered 410 Gone."""
    with context.queue(ctx) as q:
        changes = q.enable(*(ids or ()))
    _changes(changes, "enabled", as_json)


def _changes(changes: Sequence[Change], verb: str, as_json: bool) -> None:
    if as_json:
        _echo_json(output_ops.changes_json(changes, verb))
    else:
        typer.echo(output_ops.changes_text(changes, verb))


def stats(
    ctx: typer.Context,
    as_json: JSON = False,
    prometheus: Annotated[
        str | None,
        typer.Option(
            "--prometheus",
            metavar="FILE",
            help="Write the node_exporter textfile format to FILE (atomically) and print nothing "
            "unless --json is given; - writes it to stdout.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Count reminders by state, due rows and recent deliveries."""
    to_stdout = prometheus == "-"
    if to_stdout and as_json:
        raise BadInputError("- writes to stdout, as --json does: choose one", field="prometheus")
    with context.queue(ctx) as q:
        figures = q.stats(prometheus=None if to_stdout else prometheus)
    if to_stdout:
        typer.echo(prometheus_text(figures), nl=False)
    elif as_json:
        _echo_json(jsonforms.stats(figures))
    elif prometheus is None:
        typer.echo(output_ops.stats_text(figures))


def prune(
    ctx: typer.Context,
    older_than: Annotated[
        str,
        typer.Option(
            "--older-than",
            metavar="AGE",
            help="Delete what finished longer ago than this, e.g. 30d.",
        ),
    ],
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Count what would go; delete nothing.")
    ] = False,
    as_json: JSON = False,
) -> None:
    """Delete old ledger rows and finished or cancelled reminders; never pending or dead ones."""
    with context.queue(ctx) as q:
        counts = q.prune(older_than, dry_run=dry_run)
    if as_json:
        _echo_json(output_ops.prune_json(counts))
    else:
        typer.echo(output_ops.prune_text(counts))


def recompute(
    ctx: typer.Context,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="List the fires that would move; change nothing.")
    ] = False,
    as_json: JSON = False,
) -> None:
    """Compute again the pending fires an older tz data release computed, as the next tick
    would after a tz data update; each moved fire is kept in `history`."""
    with context.queue(ctx) as q:
        done = q.recompute(dry_run=dry_run)
    if as_json:
        _echo_json(output_ops.recomputed_json(done))
    else:
        typer.echo(output_ops.recomputed_text(done))


def doctor(ctx: typer.Context, as_json: JSON = False) -> None:
    """Check the settings, the database, SMTP (a login it requires, email targets without it),
    the webhook secrets, notify targets (Apprise installed, every service known) and the zone
    data; exit 1 on a problem."""
    root = ctx.find_root().params
    # Not a Queue: an invalid setting is one of doctor's findings, not the end of it.
    report = check_setup(root.get("db"), config=root.get("config"))
    if as_json:
        _echo_json(output_ops.doctor_json(report))
    else:
        typer.echo(output_ops.doctor_text(report))
    raise typer.Exit(0 if report.ok else 1)


def worker(
    ctx: typer.Context,
    every: Annotated[
        str, typer.Option("--every", metavar="INTERVAL", help="Time between ticks, e.g. 10s.")
    ] = "10s",
    limit: Annotated[
        int | None,
        typer.Option(
            metavar="N",
            min=1,
            help="Most rows one claim takes (default DUEQUEUE_TICK_LIMIT).",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Tick every INTERVAL in the foreground until SIGTERM or SIGINT (for systemd).

    Logs the first tick, each tick that did something and each new failure; while idle, a line
    an hour.
    """

    lines = WorkerLog()

    def log(line: str | None) -> None:
        if line is not None:
            typer.echo(line)
            sys.stdout.flush()

    def on_tick(summary: TickSummary) -> None:
        log(lines.tick(summary))

    def on_error(exc: DuequeueError) -> None:
        log(lines.failed(message(exc)))

    # Like `tick`, the worker refuses a missing database (`duequeue init` makes one); one that
    # cannot be opened stops it at once, with exit 1.
    with context.queue(ctx) as q:
        q.worker(
            every,
            limit=limit,
            on_start=lambda: log(f"worker: ticking every {every} on {q.location}"),
            on_tick=on_tick,
            on_error=on_error,
        )
    log("worker: stopped by a signal")


def config(ctx: typer.Context, as_json: JSON = False) -> None:
    """Print the effective settings, secrets masked: the file read, each value's source and
    the tz data in use."""
    with context.queue(ctx) as q:
        report = q.config()
    if as_json:
        _echo_json(report.settings)
    else:
        typer.echo(output_ops.config_text(report))
