"""The duequeue command line: parse flags, call one service function, render the result.

Only this module reads the clock; everything below takes `now` as an argument.
"""

import functools
from collections.abc import Callable
from typing import Annotated, Any, ParamSpec, TypeVar

import typer

from duequeue import cli_shell, entrypoint
from duequeue.entrypoint import now as _now
from duequeue.entrypoint import run_tick
from duequeue.errors import DuequeueError

app = cli_shell.Typer(
    name="duequeue",
    cls=cli_shell.Group,
    help="Deliver reminders on time from cron: email and signed webhooks, never twice.",
    invoke_without_command=True,  # bare `duequeue` prints help on stdout, exit 0 (_root)
    context_settings={"help_option_names": ["-h", "--help"]},
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)

P = ParamSpec("P")
R = TypeVar("R")


def _errors_to_exit(fn: Callable[P, R]) -> Callable[P, R]:
    """Map DuequeueError to one clean line on stderr and its exit code, in one place."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        except DuequeueError as exc:
            typer.echo(f"duequeue: error: {exc}", err=True)
            raise typer.Exit(exc.exit_code) from exc

    return wrapper


def _settings(ctx: typer.Context, **flags: Any) -> Any:
    from duequeue.config import load_settings

    root = ctx.find_root().params
    return load_settings({"db": root.get("db"), **flags}, config_file=root.get("config"))


def _store(settings: Any, create: bool = False) -> Any:
    """Open the database; only commands that add reminders create a missing one."""
    from duequeue.store import open_store

    # A read-only command on a mistyped path must fail, not leave an empty database behind
    # (a cron `stats --prometheus` would publish its zeros).
    return open_store(settings.db, settings.busy_timeout, create=create)


@app.callback()
def _root(
    ctx: typer.Context,
    db: Annotated[
        str | None,
        typer.Option(
            "--db",
            metavar="PATH|URL",
            help="Database: an SQLite file path or a postgresql:// URL (env DUEQUEUE_DB; "
            "default an SQLite file under the user data dir).",
            show_default=False,
        ),
    ] = None,
    config: Annotated[
        str | None,
        typer.Option(
            "--config",
            metavar="FILE",
            help="TOML config file (env DUEQUEUE_CONFIG; default under the user config dir).",
            show_default=False,
        ),
    ] = None,
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            is_eager=True,
            callback=cli_shell.print_version,
            help="Print the version and exit.",
        ),
    ] = False,
) -> None:
    """Deliver reminders on time from cron: email and signed webhooks, never twice."""
    if ctx.invoked_subcommand is None:
        typer.echo(ctx.get_help())
        raise typer.Exit(0)


@app.command()
@_errors_to_exit
def add(
    ctx: typer.Context,
    at: Annotated[
        str | None,
        typer.Option(
            "--at",
            metavar="WHEN",
            help="When: ISO 8601 with offset (2027-01-05T09:00+01:00), a local time read in --tz "
            "(2027-01-05T09:00), relative (+90s, +15m, +2h, +1d, +1w; +0m is now) or 'now'; a "
            "past time goes out at the next tick. For --rrule it is DTSTART. Optional with --cron "
            "(default now).",
            show_default=False,
        ),
    ] = None,
    tz: Annotated[
        str | None,
        typer.Option(
            metavar="ZONE",
            help="IANA time zone for --at and the rule (default DUEQUEUE_TZ or UTC).",
            show_default=False,
        ),
    ] = None,
    rrule: Annotated[
        str | None,
        typer.Option(
            metavar="RULE",
            help="Repeat by an RFC 5545 RRULE, e.g. 'FREQ=WEEKLY;BYDAY=MO,WE'.",
            show_default=False,
        ),
    ] = None,
    cron: Annotated[
        str | None,
        typer.Option(
            metavar="EXPR",
            help="Repeat by a 5-field cron expression or nickname, e.g. '0 9 * * 1-5', @daily.",
            show_default=False,
        ),
    ] = None,
    email: Annotated[
        list[str] | None,
        typer.Option(metavar="ADDR", help="Email target (repeatable).", show_default=False),
    ] = None,
    webhook: Annotated[
        list[str] | None,
        typer.Option(
            metavar="URL", help="Webhook target, an http(s) URL (repeatable).", show_default=False
        ),
    ] = None,
    subject: Annotated[
        str, typer.Option(metavar="TEXT", help="One-line subject (max 255 characters).")
    ] = ("Reminder"),
    body: Annotated[str, typer.Option(metavar="TEXT", help="Message body (max 64 KiB).")] = "",
    data: Annotated[
        str | None,
        typer.Option(
            metavar="JSON",
            help="JSON passed through to webhooks (max 16 KiB, 64 levels deep; no NaN/Infinity).",
            show_default=False,
        ),
    ] = None,
    key: Annotated[
        str | None,
        typer.Option(
            metavar="KEY",
            help="Idempotency key: adding the same key again adds nothing and prints "
            "the existing id.",
            show_default=False,
        ),
    ] = None,
    misfire_grace: Annotated[
        str | None,
        typer.Option(
            "--misfire-grace",
            metavar="DURATION",
            help="Skip (and record) a fire later than this, e.g. 1h, "
            "instead of delivering it late.",
            show_default=False,
        ),
    ] = None,
    dry_run: Annotated[
        bool,
        typer.Option("--dry-run", help="Validate and print the next 5 fires; write nothing."),
    ] = False,
) -> None:
    """Schedule a reminder; print its id alone on stdout.

    Times: --at takes ISO 8601 with an offset or Z, a local date-time read in --tz, +90s / +15m
    / +2h / +1d / +1w, or now. Rules run in --tz: a wall-clock time a DST change skips fires
    once just after the gap, a repeated one fires once (first occurrence); every-N-minutes or
    -hours rules follow real elapsed time. Check a rule first with --dry-run.
    """
    from duequeue import service

    settings = _settings(ctx)
    req = service.AddRequest(
        at=at,
        tz=tz,
        rrule=rrule,
        cron=cron,
        emails=tuple(email or ()),
        webhooks=tuple(webhook or ()),
        subject=subject,
        body=body,
        data=data,
        key=key,
        misfire_grace=misfire_grace,
    )
    now = _now()
    reminder, _ = service.build_reminder(req, settings.tz, now)  # validate before opening the DB
    notes = service.add_notes(reminder, settings, now)
    if dry_run:
        for note in notes:
            typer.echo(f"duequeue: {note}", err=True)
        assert reminder.fire_at is not None
        fires = service.preview(
            reminder.rule_kind, reminder.rule, reminder.tz, reminder.dtstart, reminder.fire_at, 5
        )
        from duequeue import output

        typer.echo(output.fires_text(reminder.tz, fires))
        return
    store = _store(settings, create=True)
    try:
        from duequeue.timefmt import to_ms

        rid, created = store.add(reminder, to_ms(now))
    finally:
        store.close()
    if not created:
        typer.echo(f"duequeue: key {key!r} exists as reminder {rid}; nothing added", err=True)
    else:
        for note in notes:
            typer.echo(f"duequeue: {note}", err=True)
    typer.echo(str(rid))


@app.command()
@_errors_to_exit
def tick(
    ctx: typer.Context,
    limit: Annotated[
        int | None,
        typer.Option(
            metavar="N",
            min=1,
            help=(
                "Most rows one claim takes; the tick claims again while rows are due "
                "(default DUEQUEUE_TICK_LIMIT or 100)."
            ),
            show_default=False,
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
) -> None:
    """Deliver due reminders once; run from cron every minute. Prints one summary line."""
    root = ctx.find_root().params
    run_tick(root.get("db"), root.get("config"), limit, as_json)


@app.command()
@_errors_to_exit
def inspect(
    ctx: typer.Context,
    dead: Annotated[bool, typer.Option("--dead", help="Dead-lettered fires (default).")] = False,
    due: Annotated[bool, typer.Option("--due", help="Rows due now.")] = False,
    pending: Annotated[bool, typer.Option("--pending", help="Rows with a next fire.")] = False,
    all_: Annotated[bool, typer.Option("--all", help="Every row, finished and cancelled too.")] = (
        False
    ),
    limit: Annotated[
        int | None,
        typer.Option(metavar="N", min=1, help="Show at most this many.", show_default=False),
    ] = None,
    subject_like: Annotated[
        str | None,
        typer.Option(
            "--subject-like",
            metavar="PATTERN",
            help="Only subjects matching this SQL LIKE pattern (% any run, _ one character; "
            "ASCII case-insensitive), e.g. '%rent%'.",
            show_default=False,
        ),
    ] = None,
    target_like: Annotated[
        str | None,
        typer.Option(
            "--target-like",
            metavar="PATTERN",
            help="Only reminders with a target address matching this LIKE pattern.",
            show_default=False,
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON array.")] = False,
) -> None:
    """List dead-lettered, due, pending or all reminders as a table or JSON."""
    from duequeue import service
    from duequeue.errors import BadInputError

    chosen = [
        name
        for name, on in (("dead", dead), ("due", due), ("pending", pending), ("all", all_))
        if on
    ]
    if len(chosen) > 1:
        raise BadInputError("inspect: choose one of --dead, --due, --pending, --all")
    view = chosen[0] if chosen else "dead"
    settings = _settings(ctx)
    store = _store(settings)
    try:
        views = service.inspect(
            store,
            view,  # type: ignore[arg-type]
            _now(),
            limit,
            subject_like=subject_like,
            target_like=target_like,
        )
    finally:
        store.close()
    from duequeue import output

    if as_json:
        import json

        typer.echo(json.dumps([output.reminder_json(v) for v in views], indent=2))
    elif not views:
        typer.echo("no reminders" if view == "all" else f"no {view} reminders")
    else:
        from duequeue.table import terminal_width

        typer.echo(output.reminder_table(views, terminal_width()))


@app.command("next")
@_errors_to_exit
def next_(
    ctx: typer.Context,
    reminder_id: Annotated[int, typer.Argument(metavar="ID", help="The reminder's id.")],
    count: Annotated[
        int, typer.Option(metavar="N", min=1, max=1000, help="How many fires to show.")
    ] = 5,
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON object.")] = False,
) -> None:
    """Print a reminder's next fire times, in its zone and in UTC."""
    import json

    from duequeue import output, service

    settings = _settings(ctx)
    store = _store(settings)
    try:
        view, fires = service.next_fires(store, reminder_id, count)
    finally:
        store.close()
    if as_json:
        typer.echo(
            json.dumps(
                {
                    "id": view.id,
                    "tz": view.tz,
                    "state": view.state,
                    "fires": output.fires_json(view.tz, fires),
                },
                indent=2,
            )
        )
    elif not fires:
        typer.echo(f"reminder {view.id} is {view.state}: no further fires")
    else:
        typer.echo(output.fires_text(view.tz, fires))


@app.command()
@_errors_to_exit
def migrate(
    ctx: typer.Context,
    to: Annotated[
        str,
        typer.Option(
            "--to",
            metavar="URL",
            help="The empty PostgreSQL database to copy into, e.g. postgresql://user@host/db.",
            show_default=False,
        ),
    ],
) -> None:
    """Copy the SQLite database (--db) into an empty PostgreSQL database, ids and all."""
    from duequeue import service
    from duequeue.store import safe_url

    settings = _settings(ctx)
    copied = service.migrate(settings.db, to)
    typer.echo(
        f"migrated {copied.reminders} reminders, {copied.targets} targets, "
        f"{copied.deliveries} deliveries, {copied.dead_letters} dead letters, "
        f"{copied.target_retries} target retries from {settings.db} to {safe_url(to)}"
    )


# The operator's commands (import, history, retry, cancel, stats, prune, doctor, worker,
# config) live in their own module and register themselves on `app`.
from duequeue import cli_ops  # noqa: E402, F401


def main() -> None:
    """Run the CLI; the console script enters at entrypoint.main, which may skip typer."""
    entrypoint.main()


if __name__ == "__main__":  # pragma: no cover
    main()
