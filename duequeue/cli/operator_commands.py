"""The operator's commands (import, history, retry, enable, cancel, stats, prune, doctor,
worker, config): flags, one call, output. Registered on the app in app.py; the clock is read
through context.py, and a DuequeueError is left to the app to report."""

import json
import sys
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import IO, Annotated, Any

import typer

from duequeue.cli import context
from duequeue.errors import BadInputError
from duequeue.store.base import Change, Store
from duequeue.timefmt import iso, to_ms

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
    """Add reminders from JSON Lines, all or nothing; existing keys are skipped."""
    from duequeue import importer

    settings = context.settings(ctx)
    now = context.now()
    with importer.gc_paused():
        if file == "-":
            result = _import(sys.stdin.buffer, None, settings, now)
        else:
            try:
                f = open(file, "rb")  # noqa: SIM115 - closed by the with below
            except OSError as exc:
                raise BadInputError(f"FILE: cannot read {file}: {exc.strerror}") from None
            with f:
                result = _import(f, Path(file).stat().st_size, settings, now)
    if as_json:
        _echo_json({"lines": result.lines, "imported": result.imported, "skipped": result.skipped})
    else:
        typer.echo(f"imported {result.imported}, skipped {result.skipped} existing keys")


def _import(f: IO[bytes], size: int | None, settings: Any, now: Any) -> Any:
    """Validate every line, then write them all; with a progress bar when stderr is a terminal."""
    from duequeue import importer, ops

    def write(spool: Any) -> Any:
        # Validated before the database is opened: a bad line writes nothing, creates nothing.
        # The spool is read back a chunk at a time, inside the one transaction.
        with spool:
            store = context.open_store(settings, create=True)
            try:
                return ops.import_reminders(store, spool, now)
            finally:
                store.close()

    if not sys.stderr.isatty():
        return write(
            importer.parse_lines(f, settings.tz, now, block_private=settings.webhook_block_private)
        )
    from rich.console import Console
    from rich.progress import Progress

    with Progress(console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task("checking", total=size)
        spool = importer.parse_lines(
            f,
            settings.tz,
            now,
            lambda n: bar.advance(task, n),
            block_private=settings.webhook_block_private,
        )
        bar.update(task, description="writing")
        return write(spool)


def history(
    ctx: typer.Context,
    reminder_id: Annotated[int, typer.Argument(metavar="ID", help="The reminder id.")],
    as_json: JSON = False,
) -> None:
    """Show every delivery attempt of a reminder, and its dead letters."""
    from duequeue import ops
    from duequeue.cli import output_ops

    settings = context.settings(ctx)
    store = context.open_store(settings)
    try:
        found = ops.history(store, reminder_id)
    finally:
        store.close()
    if as_json:
        _echo_json(output_ops.history_json(found))
    else:
        from duequeue.cli.table import terminal_width

        typer.echo(output_ops.history_text(found, terminal_width()))


def retry(
    ctx: typer.Context,
    ids: IDS = None,
    all_dead: Annotated[
        bool, typer.Option("--all-dead", help="Every reminder with a dead fire.")
    ] = False,
    as_json: JSON = False,
) -> None:
    """Re-arm dead-lettered fires: due now, error count reset; sent targets are not re-sent."""
    from duequeue import ops

    if bool(ids) == all_dead:
        raise BadInputError("retry: give reminder ids or --all-dead, not both or neither")
    settings = context.settings(ctx)
    store = context.open_store(settings)
    try:
        changes = ops.retry(store, ids or [], all_dead, context.now())
    finally:
        store.close()
    _changes(changes, "retried", as_json)


def cancel(ctx: typer.Context, ids: IDS = None, as_json: JSON = False) -> None:
    """Cancel reminders so they never fire again (inspect --all still lists them)."""
    from duequeue import ops

    _change_by_ids(ctx, ids, ops.cancel, "cancelled", as_json)


def enable(ctx: typer.Context, ids: IDS = None, as_json: JSON = False) -> None:
    """Switch back on the targets disabled after their endpoint answered 410 Gone."""
    from duequeue import ops

    _change_by_ids(ctx, ids, ops.enable, "enabled", as_json)


def _change_by_ids(
    ctx: typer.Context,
    ids: list[int] | None,
    change: Callable[[Store, Sequence[int], datetime], list[Change]],
    verb: str,
    as_json: bool,
) -> None:
    if not ids:
        raise BadInputError("ID: give at least one reminder id")
    store = context.open_store(context.settings(ctx))
    try:
        changes = change(store, ids, context.now())
    finally:
        store.close()
    _changes(changes, verb, as_json)


def _changes(changes: list[Change], verb: str, as_json: bool) -> None:
    done = [c for c in changes if c.skipped is None]
    skipped = [c for c in changes if c.skipped is not None]
    if as_json:
        applied: list[Any] = [
            {"id": c.reminder_id, "fire_at": iso(c.fire_at)} if verb == "retried" else c.reminder_id
            for c in done
        ]
        _echo_json(
            {
                verb: applied,
                "skipped": [{"id": c.reminder_id, "reason": c.skipped} for c in skipped],
            }
        )
        return
    for c in done:
        fire = f" (fire {iso(c.fire_at)} is due now)" if c.fire_at is not None else ""
        typer.echo(f"{verb} {c.reminder_id}{fire}")
    for c in skipped:
        typer.echo(f"skipped {c.reminder_id}: {c.skipped}")
    typer.echo(f"{verb} {len(done)}, skipped {len(skipped)}")


def stats(
    ctx: typer.Context,
    as_json: JSON = False,
    prometheus: Annotated[
        str | None,
        typer.Option(
            "--prometheus",
            metavar="FILE",
            help="Write the node_exporter textfile format to FILE (atomically) and print nothing "
            "unless --json is given.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Count reminders by state, due rows and recent deliveries."""
    from duequeue import metrics, ops

    settings = context.settings(ctx)
    now = context.now()
    store = context.open_store(settings)
    try:
        figures = ops.stats(store, now)
    finally:
        store.close()
    if prometheus is not None:
        metrics.write_atomically(Path(prometheus), metrics.prometheus_text(figures, to_ms(now)))
    if as_json:
        _echo_json(metrics.stats_json(figures, to_ms(now)))
    elif prometheus is None:
        typer.echo("\n".join(metrics.stats_lines(figures, to_ms(now))))


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
    from duequeue import ops
    from duequeue.timefmt import parse_duration

    age = parse_duration(older_than, "--older-than")
    settings = context.settings(ctx)
    now = context.now()
    store = context.open_store(settings)
    try:
        counts = ops.prune(store, age, now, dry_run)
    finally:
        store.close()
    if as_json:
        _echo_json(
            {
                "dry_run": dry_run,
                "before": iso(to_ms(now - age)),
                "deliveries": counts.deliveries,
                "done": counts.done,
                "cancelled": counts.cancelled,
                "dead_letters": counts.dead_letters,
            }
        )
        return
    verb = "would prune" if dry_run else "pruned"
    typer.echo(
        f"{verb}: {counts.deliveries} ledger rows, {counts.done} done reminders, "
        f"{counts.cancelled} cancelled reminders, {counts.dead_letters} dead letters"
    )


def doctor(ctx: typer.Context, as_json: JSON = False) -> None:
    """Check the database, SMTP (and email targets without it), the webhook secret and the
    zone data; exit 1 on a problem."""
    from duequeue import doctor as checks
    from duequeue.store import open_store

    found = checks.run(lambda: context.settings(ctx), lambda db: open_store(db, create=False))
    ok = all(c.ok for c in found)
    if as_json:
        _echo_json(
            {
                "ok": ok,
                "checks": [
                    {"name": c.name, "ok": c.ok, "detail": c.detail, "fix": c.fix} for c in found
                ],
            }
        )
    else:
        for c in found:
            typer.echo(f"{'ok     ' if c.ok else 'PROBLEM'}  {c.name}: {c.detail}")
            if c.fix:
                typer.echo(f"         fix: {c.fix}")
        typer.echo("all checks passed" if ok else "some checks found problems")
    raise typer.Exit(0 if ok else 1)


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
    """Tick every INTERVAL in the foreground until SIGTERM or SIGINT (for systemd)."""
    from duequeue import service
    from duequeue.timefmt import parse_duration
    from duequeue.worker import Ticked, Worker

    interval = parse_duration(every, "--every").total_seconds()
    settings = context.settings(ctx)
    # A database that cannot open stops the worker now, with exit 1; like `tick`, the worker
    # creates a missing one (cron or systemd may start before the first `add`).
    context.open_store(settings, create=True).close()

    def one_tick() -> Ticked:
        now = context.now()
        store = context.open_store(settings, create=True)
        try:
            summary = service.run_tick(store, settings, now, context.clock_ms, limit)
        finally:
            store.close()
        return Ticked(f"{iso(to_ms(now))} tick: {summary.line()}", summary.stopped_by)

    def log(line: str) -> None:
        typer.echo(line)
        sys.stdout.flush()

    from duequeue.store import safe_url

    log(f"worker: ticking every {every} on {safe_url(settings.db)}")
    Worker(interval, one_tick, log).run()


def config(ctx: typer.Context, as_json: JSON = False) -> None:
    """Print the effective settings, secrets masked: the file read, each value's source and
    the tz data in use."""
    from duequeue.config import load_settings_traced, masked
    from duequeue.schedule.zones import in_use

    root = ctx.find_root().params
    settings, origins = load_settings_traced({"db": root.get("db")}, config_file=root.get("config"))
    values = masked(settings)
    if as_json:
        _echo_json(values)
        return
    state = "read" if origins.config_file_read else "not found, none read"
    typer.echo(f"# config file: {origins.config_file} ({state})")
    typer.echo(f"# tz data: {in_use().describe()}")
    for name, value in values.items():
        typer.echo(f"{name} = {json.dumps(value)}  # {origins.sources[name]}")
