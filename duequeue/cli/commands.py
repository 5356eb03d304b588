"""The everyday commands (add, tick, inspect, next, migrate) and the root options: parse flags,
make one `duequeue.Queue` call, render the result. Registered on the app in app.py; a
DuequeueError is left to the app to report (cli/report.py)."""

import json
from typing import Annotated, Any

import typer

from duequeue.api import jsonforms
from duequeue.cli import context, inputs, output, shell
from duequeue.cli.instants import iso
from duequeue.cli.table import table_width
from duequeue.errors import BadInputError

# The target flags, shared by add and edit (change_commands.py): one help text each.
Emails = Annotated[
    list[str] | None,
    typer.Option(metavar="ADDR", help="Email target (repeatable).", show_default=False),
]
Webhooks = Annotated[
    list[str] | None,
    typer.Option(
        metavar="URL", help="Webhook target, an http(s) URL (repeatable).", show_default=False
    ),
]
WebhookSecrets = Annotated[
    list[str] | None,
    typer.Option(
        "--webhook-secret",
        metavar="WHSEC",
        help="Signing secret of these webhooks instead of DUEQUEUE_WEBHOOK_SECRET: one for "
        "all, or one per --webhook in order. Several space-separated secrets (rotation) "
        "sign each message with all of them. Stored in the database, never shown.",
        show_default=False,
    ),
]
WebhookSecretFile = Annotated[
    str | None,
    typer.Option(
        "--webhook-secret-file",
        metavar="FILE",
        help="Read the --webhook-secret values from FILE (- reads stdin), one a line, so "
        "that the secrets stay out of the process list (ps).",
        show_default=False,
    ),
]
NotifyUrls = Annotated[
    list[str] | None,
    typer.Option(
        metavar="URL",
        help="Chat or push target, an Apprise URL: slack://..., discord://..., tgram://..., "
        "ntfys://host/topic, mmost://..., gotify://... (repeatable; needs pip install "
        "'duequeue[notify]'). Shown masked.",
        show_default=False,
    ),
]
NotifyFile = Annotated[
    str | None,
    typer.Option(
        "--notify-file",
        metavar="FILE",
        help="Read --notify URLs from FILE, one a line (- reads stdin), so that their "
        "tokens stay out of the process list (ps) as --notify's would not.",
        show_default=False,
    ),
]
Targets = Annotated[
    list[str] | None,
    typer.Option(
        metavar="CHANNEL:ADDRESS",
        help="A target of any channel: email:ADDR, webhook:URL or notify:URL (repeatable).",
        show_default=False,
    ),
]


def root(
    ctx: typer.Context,
    db: Annotated[
        str | None,
        typer.Option(
            "--db",
            metavar="PATH|URL",
            help="Database: an SQLite file path, a postgresql:// or a mysql:// URL "
            "(env DUEQUEUE_DB; default an SQLite file under the user data dir).",
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
            "-V",
            is_eager=True,
            callback=shell.print_version,
            help="Print the version and exit.",
        ),
    ] = False,
) -> None:
    """Deliver reminders on time from cron: email, signed webhooks and chat or push
    notifications."""
    if ctx.invoked_subcommand is None:
        typer.echo(ctx.get_help())
        raise typer.Exit(0)


def add(
    ctx: typer.Context,
    at: Annotated[
        str | None,
        typer.Option(
            "--at",
            metavar="WHEN",
            help="When: ISO 8601 with offset (2027-01-05T09:00+01:00), a local time read in --tz "
            "(2027-01-05T09:00), relative (+90s, +15m, +2h, +1d, +1w; +0m is now), 'now', or as "
            "said: 'tomorrow 9am', '09:00', 'monday 08:30', 'noon', 'in 2 hours' (stderr says "
            "how it read it); a past time goes out at the next tick. For --rrule it is DTSTART. "
            "Optional with --cron (default now).",
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
    email: Emails = None,
    webhook: Webhooks = None,
    webhook_secret: WebhookSecrets = None,
    webhook_secret_file: WebhookSecretFile = None,
    notify: NotifyUrls = None,
    notify_file: NotifyFile = None,
    target: Targets = None,
    subject: Annotated[
        str, typer.Option(metavar="TEXT", help="One-line subject (max 255 characters).")
    ] = ("Reminder"),
    body: Annotated[
        str,
        typer.Option(metavar="TEXT", help="Message body (max 64 KiB); - reads it from stdin."),
    ] = "",
    data: Annotated[
        str | None,
        typer.Option(
            metavar="JSON",
            help="JSON passed through to webhooks, and to --notify targets with "
            "DUEQUEUE_NOTIFY_DATA=true (max 16 KiB, 64 levels deep; no NaN/Infinity).",
            show_default=False,
        ),
    ] = None,
    key: Annotated[
        str | None,
        typer.Option(
            metavar="KEY",
            help="Idempotency key, unique among live reminders: the same key and content "
            "again adds nothing and prints the existing id; other content exits 1. A done or "
            "cancelled reminder frees its key.",
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
    / +2h / +1d / +1w, now, or 'tomorrow 9am', '09:00', 'monday 08:30', 'noon', 'in 2 hours'.
    Rules run in --tz: a wall-clock time a DST change skips fires once just after the gap, a
    repeated one fires once (first occurrence); every-N-minutes or -hours rules follow real
    elapsed time. Check a rule first with --dry-run.
    """
    inputs.stdin_once(body=body, notify_file=notify_file, webhook_secret_file=webhook_secret_file)
    q = context.queue(ctx, create=True)
    fields: dict[str, Any] = {
        "at": at,
        "tz": tz,
        "rrule": rrule,
        "cron": cron,
        "emails": email or (),
        "webhooks": webhook or (),
        "notify": [*(notify or ()), *inputs.notify_lines(notify_file)],
        "targets": [target_pair(i, t) for i, t in enumerate(target or ())],
        "webhook_secret": inputs.webhook_secrets(webhook_secret, webhook_secret_file),
        "subject": subject,
        "body": inputs.body(body),
        "data_json": data,
        "key": key,
        "misfire_grace": misfire_grace,
    }
    with q:
        if dry_run:
            preview = q.preview(**fields)
            _notes(preview.notes)
            typer.echo(output.fires_text(preview.tz, preview.fires))
            return
        added = q.add(**fields)
    _notes(added.notes)
    typer.echo(str(added.id))


def target_pair(index: int, text: str) -> tuple[str, str]:
    """Return a --target CHANNEL:ADDRESS as (channel, address); the address may hold colons."""
    channel, colon, address = text.partition(":")
    # A URL alone (https://...) has a colon too, but no channel before it.
    if not colon or not channel or address.startswith("//"):
        raise BadInputError(
            "expected CHANNEL:ADDRESS, such as email:ann@example.com or "
            f"webhook:https://hooks.example.com/r, not {text!r}",
            field=f"targets[{index}]",
        )
    return channel, address


def _notes(notes: tuple[str, ...]) -> None:
    for note in notes:
        typer.echo(f"duequeue: {note}", err=True)


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
    context.run_tick(root.get("db"), root.get("config"), limit, as_json)


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
    wide: Annotated[
        bool,
        typer.Option("--wide", help="On a terminal: every column, no cell shortened."),
    ] = False,
) -> None:
    """List dead-lettered, due, pending or all reminders as a table or JSON.

    On a terminal: one line per reminder, long cells shortened with an ellipsis and the least
    useful columns left out to fit its width (--wide shows all). In a pipe: tab-separated.
    """
    chosen = [
        name
        for name, on in (("dead", dead), ("due", due), ("pending", pending), ("all", all_))
        if on
    ]
    if len(chosen) > 1:
        raise BadInputError("choose one of --dead, --due, --pending, --all", field=tuple(chosen))
    view = chosen[0] if chosen else "dead"
    with context.queue(ctx) as q:
        found = q.inspect(
            view,  # type: ignore[arg-type]
            # One more than asked, to say whether --limit left rows out.
            limit=None if limit is None else limit + 1,
            subject_like=subject_like,
            target_like=target_like,
        )
        paused = q.paused_since()
    if paused is not None:
        # On stderr, so the table and the JSON stay as they are: due rows wait for `resume`.
        typer.echo(
            f"duequeue: the queue is paused since {iso(paused)}: ticks deliver nothing "
            "until `duequeue resume`",
            err=True,
        )
    if limit is not None and len(found) > limit:
        found = found[:limit]
        typer.echo(
            f"duequeue: showing the first {limit}; more reminders match (raise --limit)",
            err=True,
        )
    if as_json:
        typer.echo(json.dumps([jsonforms.reminder(r) for r in found], indent=2))
    elif not found:
        typer.echo("no reminders" if view == "all" else f"no {view} reminders")
    else:
        typer.echo(output.reminder_table(found, table_width(wide), view))


def next_(
    ctx: typer.Context,
    reminder_id: Annotated[int, typer.Argument(metavar="ID", help="The reminder's id.")],
    count: Annotated[
        int, typer.Option(metavar="N", min=1, max=1000, help="How many fires to show.")
    ] = 5,
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON object.")] = False,
) -> None:
    """Print a reminder's next fire times, in its zone and in UTC."""
    with context.queue(ctx) as q:
        found = q.next_fires(reminder_id, count)
    if as_json:
        typer.echo(json.dumps(jsonforms.next_fires(found), indent=2))
    elif not found.fires:
        typer.echo(f"reminder {found.id} is {found.state}: no further fires")
    else:
        typer.echo(output.fires_text(found.tz, found.fires))
        note = output.intent_note(found)
        if note:
            typer.echo(f"duequeue: note: {note}", err=True)


def migrate(
    ctx: typer.Context,
    to: Annotated[
        str | None,
        typer.Option(
            "--to",
            metavar="URL",
            help="The empty database to copy into: postgresql://user@host/db, "
            "mysql://user@host/db, or an SQLite file (created when missing).",
            show_default=False,
        ),
    ] = None,
    contract: Annotated[
        bool,
        typer.Option(
            "--contract",
            help="Finish a rolling upgrade instead: apply the schema's pending contract steps "
            "to --db, once every host runs this version. Versions older than the steps then "
            "refuse the database; refused, nothing changed, while a host that ticked in the "
            "last day runs one (docs/upgrading.md).",
        ),
    ] = False,
) -> None:
    """Copy the database (--db) into an empty one, any of SQLite, PostgreSQL and MySQL each
    way, ids and all, in one transaction (stop cron first: leases are not copied); or, with
    --contract, finish a rolling upgrade of --db."""
    if contract == (to is not None):
        raise BadInputError("give either --to URL or --contract", field=("to", "contract"))
    if contract:
        with context.queue(ctx) as q:
            done = q.contract()
        if not done.steps:
            typer.echo(
                f"nothing to contract: {done.database} is at schema version {done.version}, "
                f"floor {done.floor}"
            )
        else:
            typer.echo(
                f"contracted {done.database}: {', '.join(done.steps)}; floor {done.floor_before} "
                f"-> {done.floor} (duequeue older than schema {done.floor} now refuses it)"
            )
        return
    assert to is not None
    with context.queue(ctx) as q:
        copied = q.migrate(to)
    typer.echo(
        f"migrated {copied.reminders} reminders, {copied.targets} targets, "
        f"{copied.deliveries} deliveries, {copied.dead_letters} dead letters, "
        f"{copied.target_retries} target retries from {copied.source} to {copied.destination}"
    )
