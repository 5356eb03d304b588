"""What each command does, between the CLI (flags, output) and the store and engine."""

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from duequeue import validate
from duequeue.config import Settings
from duequeue.errors import BadInputError, NotFoundError
from duequeue.store.base import NewReminder, NewTarget, ReminderView, Store, View
from duequeue.timefmt import from_ms, iso, parse_duration, to_ms

if TYPE_CHECKING:
    from collections.abc import Callable

    from duequeue.engine.tick import TickSummary
    from duequeue.schedule.rules import Rule, RuleKind
    from duequeue.store.copy import Copied


@dataclass(frozen=True, slots=True)
class AddRequest:
    """The raw `add` arguments, as the user typed them."""

    at: str | None
    tz: str | None = None
    rrule: str | None = None
    cron: str | None = None
    emails: tuple[str, ...] = ()
    webhooks: tuple[str, ...] = ()
    notifies: tuple[str, ...] = ()
    # One secret for every webhook, or one per webhook in order; each may hold several (rotation).
    webhook_secrets: tuple[str, ...] = ()
    subject: str = "Reminder"
    body: str = ""
    data: str | None = None
    key: str | None = None
    misfire_grace: str | None = None


def build_reminder(
    req: AddRequest, default_tz: str, now: datetime, *, block_private: bool = False
) -> tuple[NewReminder, "Rule | None"]:
    """Validate an add request into a reminder ready to store, and its rule if recurring.

    `block_private`: DUEQUEUE_WEBHOOK_BLOCK_PRIVATE, under which notify targets are refused.
    """
    from duequeue.schedule import rules as schedule

    validate.utf8(
        [
            ("--at", req.at),
            ("--tz", req.tz),
            ("--rrule", req.rrule),
            ("--cron", req.cron),
            ("--subject", req.subject),
            ("--body", req.body),
            ("--data", req.data),
            ("--key", req.key),
            ("--misfire-grace", req.misfire_grace),
            *(("--email", a) for a in req.emails),
            *(("--webhook", u) for u in req.webhooks),
            *(("--notify", u) for u in req.notifies),
            *(("--webhook-secret", s) for s in req.webhook_secrets),
        ]
    )
    if block_private and req.notifies:
        from duequeue.channels.notify import BLOCKED

        raise BadInputError(f"--notify: {BLOCKED}")
    if req.rrule is not None and req.cron is not None:
        raise BadInputError("--rrule/--cron: give one recurrence, not both")
    zone = schedule.parse_zone(req.tz or default_tz)
    if req.at is None and req.cron is None:
        raise BadInputError("--at: required (a time such as 2027-01-05T09:00, +15m or now)")
    start = schedule.parse_at(req.at or "now", zone, now)
    secrets = validate.webhook_secrets(req.webhook_secrets, len(req.webhooks))
    targets = (
        tuple(NewTarget("email", validate.email_address(a)) for a in req.emails)
        + tuple(
            NewTarget("webhook", validate.webhook_url(u), secret)
            for u, secret in zip(req.webhooks, secrets, strict=True)
        )
        + tuple(NewTarget("notify", validate.notify_url(u)) for u in req.notifies)
    )
    validate.target_count(len(targets))
    grace = None
    if req.misfire_grace is not None:
        grace = to_ms(now + parse_duration(req.misfire_grace, "--misfire-grace")) - to_ms(now)
    rule = None
    fire_at = to_ms(start)
    kind: RuleKind | None = None
    if req.rrule is not None or req.cron is not None:
        kind, text = ("rrule", req.rrule) if req.rrule is not None else ("cron", req.cron)
        assert text is not None
        rule = schedule.parse_rule(kind, text, zone, start, schedule.named_wall(req.at or "now"))
        first = schedule.first_fire(rule)
        if first is None:
            raise BadInputError(f"--{kind}: the rule has no fire at or after --at")
        fire_at = to_ms(first)
    reminder = NewReminder(
        subject=validate.subject(req.subject),
        body=validate.body(req.body),
        data=validate.data(req.data),
        tz=zone.key,
        dtstart=to_ms(start),
        fire_at=fire_at,
        targets=targets,
        rule_kind=kind,
        rule=None if rule is None else rule.text,
        misfire_grace_ms=grace,
        key=validate.key(req.key),
    )
    return reminder, rule


def add_notes(reminder: NewReminder, settings: Settings, now: datetime) -> list[str]:
    """Return what the user should know about a valid reminder: nothing is wrong with it, but
    it will not go out as they may expect."""
    notes = []
    # Before the current second: rules keep whole seconds, so a rule starting "now" fires at
    # the start of this second, which is not a past time the user gave.
    if reminder.fire_at is not None and reminder.fire_at < to_ms(now) // 1000 * 1000:
        notes.append(
            f"note: the first fire, {iso(reminder.fire_at)}, is in the past: "
            "it goes out at the next tick"
        )
    if any(t.channel == "email" for t in reminder.targets):
        missing = [
            name
            for name, value in (
                ("DUEQUEUE_SMTP_URL", settings.smtp_url),
                ("DUEQUEUE_EMAIL_FROM", settings.email_from),
            )
            if not value
        ]
        if missing:
            notes.append(
                f"warning: {' and '.join(missing)} not set: email targets fail (retried, then "
                "dead-lettered) until they are; `duequeue doctor` checks the setup"
            )
    return notes


def preview(
    rule_kind: "RuleKind | None", rule: str | None, tz: str, dtstart: int, fire_at: int, count: int
) -> list[datetime]:
    """Return the pending fire and the ones after it, `count` in all (fewer if the rule ends)."""
    from duequeue.schedule import rules as schedule

    first = from_ms(fire_at)
    if rule_kind is None or rule is None:
        return [first]
    parsed = schedule.parse_rule(rule_kind, rule, schedule.parse_zone(tz), from_ms(dtstart))
    return [first, *schedule.upcoming(parsed, first, count - 1)]


def next_fires(store: Store, reminder_id: int, count: int) -> tuple[ReminderView, list[datetime]]:
    """Return a stored reminder and its next `count` fires; none once it is finished."""
    view = store.get(reminder_id)
    if view is None:
        raise NotFoundError(f"no reminder with id {reminder_id}")
    if view.fire_at is None or view.state != "pending" or view.dtstart is None:
        return view, []
    return view, preview(view.rule_kind, view.rule, view.tz, view.dtstart, view.fire_at, count)


def add(store: Store, reminder: NewReminder, now: datetime) -> tuple[int, bool]:
    """Store a reminder build_reminder validated; return (id, created). An existing key is not
    an error: nothing is written and the existing id comes back."""
    return store.add(reminder, to_ms(now))


def run_tick(
    store: Store, settings: Settings, now: datetime, clock: "Callable[[], int]", limit: int | None
) -> "TickSummary":
    """Run one tick with the effective settings."""
    from duequeue.engine.tick import HelperOptions, TickOptions, tick

    options = TickOptions(
        limit=limit or settings.tick_limit,
        lease_ms=settings.lease_ms,
        budget_s=settings.tick_budget,
        policy=settings.retry_policy,
        webhook_concurrency=settings.concurrency,
        webhook_per_host=settings.webhook_per_host,
        channel_timeout=settings.channel_timeout,
        smtp_url=settings.smtp_url,
        email_from=settings.email_from,
        webhook_secret=settings.webhook_secret,
        webhook_block_private=settings.webhook_block_private,
        notify_data=settings.notify_data,
        busy_timeout_s=settings.busy_timeout,
        # The helper reopens the store the way the CLI opened it.
        commit_helper=HelperOptions(
            settings.db, settings.busy_timeout, settings.commit_helper_rows
        ),
    )
    return tick(store, to_ms(now), options, clock)


def inspect(
    store: Store,
    view: View,
    now: datetime,
    limit: int | None,
    *,
    subject_like: str | None = None,
    target_like: str | None = None,
) -> list[ReminderView]:
    """List reminders (or dead fires) for the chosen view, filtered by LIKE patterns."""
    validate.utf8([("--subject-like", subject_like), ("--target-like", target_like)])
    return store.list_view(
        view, to_ms(now), limit, subject_like=subject_like, target_like=target_like
    )


def migrate(db: str, to: str) -> "Copied":
    """Copy the SQLite database `db` into the empty PostgreSQL database `to`."""
    from duequeue.store import is_postgres_url, postgres_module

    if is_postgres_url(db):
        raise BadInputError("--db: migrate copies from an SQLite file, not a postgresql:// URL")
    if not is_postgres_url(to):
        raise BadInputError("--to: give the postgresql:// URL of an empty database to copy into")
    postgres_module()  # a clear error when psycopg is missing
    from duequeue.store.copy import sqlite_to_postgres

    return sqlite_to_postgres(db, to)
