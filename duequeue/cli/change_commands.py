"""The commands that make or change what is there: init (the database), reschedule and edit (a
reminder). Flags, one `duequeue.Queue` call, output; registered on the app in app.py; a
DuequeueError is left to the app to report (cli/report.py)."""

import json
from typing import TYPE_CHECKING, Annotated

import typer

from duequeue.api import jsonforms
from duequeue.cli import commands, context, inputs
from duequeue.cli.instants import iso

if TYPE_CHECKING:
    from duequeue.api.results import Changed


def init(ctx: typer.Context) -> None:
    """Create the database (--db / DUEQUEUE_DB) if it does not exist, or check and upgrade it.

    `tick`, `worker` and `serve` refuse a missing database, so that a mistyped path fails
    loudly instead of ticking an empty queue forever; `add` and `import` create one and say so.
    """
    with context.queue(ctx, create=True) as q:
        done = q.init()
    state = "created" if done.created else "exists"
    typer.echo(f"database {done.location}: {state}")


ID = Annotated[int, typer.Argument(metavar="ID", help="The reminder's id.", show_default=False)]
BUSY = (
    "Refused (exit 1, nothing changed) while a tick is delivering the reminder: try again; "
    "and for a done or cancelled one. Recorded in `history`."
)


def reschedule(
    ctx: typer.Context,
    reminder_id: ID,
    at: Annotated[
        str | None,
        typer.Option(
            "--at",
            metavar="WHEN",
            help="The new time, as add's --at (for a rule: its new start).",
            show_default=False,
        ),
    ] = None,
    tz: Annotated[
        str | None,
        typer.Option(
            metavar="ZONE", help="A new IANA zone for --at and the rule.", show_default=False
        ),
    ] = None,
    rrule: Annotated[
        str | None,
        typer.Option(metavar="RULE", help="A new RFC 5545 RRULE.", show_default=False),
    ] = None,
    cron: Annotated[
        str | None,
        typer.Option(metavar="EXPR", help="A new 5-field cron expression.", show_default=False),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the reminder as JSON.")] = False,
) -> None:
    """Move a reminder's next fire, or give it a new rule or zone; what is not given is kept.

    A rule or zone changed without --at fires next at its first fire from now on. A one-shot
    moves with --at. Prints the id and the next fire.
    """
    with context.queue(ctx) as q:
        done = q.reschedule(reminder_id, at=at, tz=tz, rrule=rrule, cron=cron)
    _print(done, as_json, "rescheduled")


def edit(
    ctx: typer.Context,
    reminder_id: ID,
    subject: Annotated[
        str | None, typer.Option(metavar="TEXT", help="A new subject.", show_default=False)
    ] = None,
    body: Annotated[
        str | None,
        typer.Option(metavar="TEXT", help="A new body; - reads it from stdin.", show_default=False),
    ] = None,
    data: Annotated[
        str | None,
        typer.Option(metavar="JSON", help="New JSON data (as add's --data).", show_default=False),
    ] = None,
    email: commands.Emails = None,
    webhook: commands.Webhooks = None,
    webhook_secret: commands.WebhookSecrets = None,
    webhook_secret_file: commands.WebhookSecretFile = None,
    notify: commands.NotifyUrls = None,
    notify_file: commands.NotifyFile = None,
    target: commands.Targets = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the reminder as JSON.")] = False,
) -> None:
    """Change a reminder's subject, body, data or targets; what is not given is kept.

    Target flags, if any, give the whole new set: a target kept keeps its ledger and retries,
    a removed one loses its pending retries, a new one starts fresh.
    """
    inputs.stdin_once(body=body, notify_file=notify_file, webhook_secret_file=webhook_secret_file)
    with context.queue(ctx) as q:
        done = q.edit(
            reminder_id,
            subject=subject,
            body=inputs.body(body),
            data_json=data,
            emails=email or (),
            webhooks=webhook or (),
            notify=[*(notify or ()), *inputs.notify_lines(notify_file)],
            targets=[commands.target_pair(i, t) for i, t in enumerate(target or ())],
            webhook_secret=inputs.webhook_secrets(webhook_secret, webhook_secret_file),
        )
    _print(done, as_json, "edited")


def _print(done: "Changed", as_json: bool, verb: str) -> None:
    for note in done.notes:
        typer.echo(f"duequeue: {note}", err=True)
    r = done.reminder
    if as_json:
        typer.echo(json.dumps(jsonforms.reminder(r), indent=2))
    else:
        typer.echo(f"{verb} {r.id}: next fire {iso(r.next_fire_at) or '-'}")


reschedule.__doc__ = f"{reschedule.__doc__}\n\n    {BUSY}"
edit.__doc__ = f"{edit.__doc__}\n\n    {BUSY}"
