"""What add, tick, inspect, next and migrate do, between `duequeue.Queue` and the store and
engine: validated input in, the store's records out (api.py turns them into the public types)."""

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, cast
from zoneinfo import ZoneInfo

from duequeue import targets as channels_table
from duequeue import validate
from duequeue.config import Settings
from duequeue.engine.tick import HelperOptions, TickOptions, TickSummary, tick
from duequeue.errors import BadInputError, NotFoundError
from duequeue.store import is_postgres_url, postgres_module
from duequeue.store.base import Channel, NewReminder, NewTarget, ReminderView, Store, View
from duequeue.timefmt import from_ms, iso, parse_duration, to_ms

if TYPE_CHECKING:
    from duequeue.schedule.rules import RuleKind
    from duequeue.store.copy import Copied


@dataclass(frozen=True, slots=True)
class AddRequest:
    """The `add` arguments as given (to Queue.add, or on an import line), not yet validated.

    Field names are the API's, and so are the names errors give: `at`, `webhooks[1]`.
    """

    at: str | datetime | timedelta | None
    tz: str | None = None
    rrule: str | None = None
    cron: str | None = None
    emails: tuple[str, ...] = ()
    webhooks: tuple[str, ...] = ()
    notify: tuple[str, ...] = ()
    targets: tuple[tuple[str, str], ...] = ()  # (channel, address)
    # One secret for every webhook, or one per webhook in order; each may hold several (rotation).
    webhook_secrets: tuple[str, ...] = ()
    subject: str = "Reminder"
    body: str = ""
    data: Any = None  # a JSON value, None for none
    data_json: str | None = None  # or the same as JSON text (the CLI's --data)
    key: str | None = None
    misfire_grace: str | timedelta | None = None


def build_reminder(
    req: AddRequest, default_tz: str, now: datetime, *, block_private: bool = False
) -> NewReminder:
    """Validate an add request into a reminder ready to store.

    `block_private`: DUEQUEUE_WEBHOOK_BLOCK_PRIVATE, under which notify targets are refused.
    """
    # Lazy: schedule.rules loads dateutil and cronsim, which cron's empty tick never needs.
    from duequeue.schedule import rules as schedule

    given = _given_targets(req)
    validate.utf8(
        [
            ("at", req.at if isinstance(req.at, str) else None),
            ("tz", req.tz),
            ("rrule", req.rrule),
            ("cron", req.cron),
            ("subject", req.subject),
            ("body", req.body),
            ("data_json", req.data_json),
            ("key", req.key),
            ("misfire_grace", req.misfire_grace if isinstance(req.misfire_grace, str) else None),
            *((field, address) for field, _, address in given),
            *(
                (_item("webhook_secret", i, len(req.webhook_secrets)), s)
                for i, s in enumerate(req.webhook_secrets)
            ),
        ]
    )
    if req.rrule is not None and req.cron is not None:
        raise BadInputError("give one recurrence, not both", field=("rrule", "cron"))
    if req.data is not None and req.data_json is not None:
        raise BadInputError("give data as a value or as JSON text, not both", field="data")
    zone = schedule.parse_zone(req.tz or _zone_of(req.at) or default_tz)
    if req.at is None and req.cron is None:
        raise BadInputError("required (a time such as 2027-01-05T09:00, +15m or now)", field="at")
    start = _start(req.at, zone, now)
    checked = [
        (field, channel, _check_target(field, channel, address, block_private))
        for field, channel, address in given
    ]
    hooks = [field for field, channel, _ in checked if channel == "webhook"]
    secrets = validate.webhook_secrets(req.webhook_secrets, len(hooks))
    secret_of = dict(zip(hooks, secrets, strict=True))
    new_targets = tuple(
        # The table checked the channel: it is one the store knows.
        NewTarget(cast(Channel, channel), address, secret_of.get(field))
        for field, channel, address in checked
    )
    validate.target_count(len(new_targets))
    grace = None if req.misfire_grace is None else _grace_ms(req.misfire_grace)
    fire_at = to_ms(start)
    kind: RuleKind | None = None
    rule_text = None
    if req.rrule is not None or req.cron is not None:
        kind, text = ("rrule", req.rrule) if req.rrule is not None else ("cron", req.cron)
        assert text is not None
        wall = schedule.named_wall(req.at) if isinstance(req.at, str) else None
        rule = schedule.parse_rule(kind, text, zone, start, wall)
        first = schedule.first_fire(rule)
        if first is None:
            raise BadInputError("the rule has no fire at or after its start", field=kind)
        fire_at, rule_text = to_ms(first), rule.text
    if req.data_json is not None:
        data = validate.data(req.data_json, "data_json")
    elif req.data is not None:
        data = validate.data_value(req.data)
    else:
        data = None
    return NewReminder(
        subject=validate.subject(req.subject),
        body=validate.body(req.body),
        data=data,
        tz=zone.key,
        dtstart=to_ms(start),
        fire_at=fire_at,
        targets=new_targets,
        rule_kind=kind,
        rule=rule_text,
        misfire_grace_ms=grace,
        key=validate.key(req.key),
    )


def _given_targets(req: AddRequest) -> list[tuple[str, str, str]]:
    """Return every target given, as (field, channel, address), in the order they are stored."""
    given = [
        *((_item("emails", i), "email", a) for i, a in enumerate(req.emails)),
        *((_item("webhooks", i), "webhook", u) for i, u in enumerate(req.webhooks)),
        *((_item("notify", i), "notify", u) for i, u in enumerate(req.notify)),
    ]
    for i, pair in enumerate(req.targets):
        if not (
            isinstance(pair, tuple | list)
            and len(pair) == 2
            and all(isinstance(part, str) for part in pair)
        ):
            raise BadInputError("expected a (channel, address) pair", field=_item("targets", i))
        given.append((_item("targets", i), pair[0], pair[1]))
    return given


def _item(name: str, index: int, count: int = 0) -> str:
    """Return the field of one value of a list: `webhooks[1]` (the name alone for a single
    value given where a list may be, as with `webhook_secret`)."""
    return name if count == 1 else f"{name}[{index}]"


def _check_target(field: str, channel: str, address: str, block_private: bool) -> str:
    try:
        return channels_table.check(channel, address, block_private=block_private)
    except BadInputError as exc:
        raise exc.with_field(field) from None


def _zone_of(at: object) -> str | None:
    """Return the IANA zone of an aware datetime given in one: its rules then run there."""
    if isinstance(at, datetime) and isinstance(at.tzinfo, ZoneInfo):
        return at.tzinfo.key
    return None


def _start(at: str | datetime | timedelta | None, zone: ZoneInfo, now: datetime) -> datetime:
    """Return the instant `at` means: an aware datetime, a time from now, or text."""
    # Lazy: see build_reminder.
    from duequeue.schedule import rules as schedule

    if isinstance(at, datetime):
        if at.tzinfo is None or at.utcoffset() is None:
            raise BadInputError("a datetime needs a time zone (tzinfo)", field="at")
        return at.astimezone(UTC)
    if isinstance(at, timedelta):
        return now.astimezone(UTC) + at
    if at is not None and not isinstance(at, str):
        raise BadInputError(f"expected a datetime, a timedelta or text, not {at!r}", field="at")
    return schedule.parse_at(at or "now", zone, now)


def _grace_ms(grace: str | timedelta) -> int:
    if isinstance(grace, str):
        grace = parse_duration(grace, "misfire_grace")
    elif not isinstance(grace, timedelta) or grace <= timedelta(0):
        raise BadInputError(
            "expected a positive timedelta or text such as 1h", field="misfire_grace"
        )
    return grace // timedelta(milliseconds=1)


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
    """Return the pending fire and the ones after it, `count` in all (fewer if the rule ends),
    as aware datetimes in the reminder's zone `tz`."""
    # Lazy: see build_reminder.
    from duequeue.schedule import rules as schedule

    zone = schedule.parse_zone(tz)
    first = from_ms(fire_at)
    fires = [first]
    if rule_kind is not None and rule is not None and count > 1:
        parsed = schedule.parse_rule(rule_kind, rule, zone, from_ms(dtstart))
        fires += schedule.upcoming(parsed, first, count - 1)
    return [f.astimezone(zone) for f in fires]


def next_fires(store: Store, reminder_id: int, count: int) -> tuple[ReminderView, list[datetime]]:
    """Return a stored reminder and its next `count` fires; none once it is finished."""
    view = store.get(reminder_id)
    if view is None:
        raise NotFoundError(f"no reminder with id {reminder_id}", field="id")
    if view.fire_at is None or view.state != "pending" or view.dtstart is None:
        return view, []
    return view, preview(view.rule_kind, view.rule, view.tz, view.dtstart, view.fire_at, count)


def add(store: Store, reminder: NewReminder, now: datetime) -> tuple[int, bool]:
    """Store a reminder build_reminder validated; return (id, created). An existing key is not
    an error: nothing is written and the existing id comes back."""
    return store.add(reminder, to_ms(now))


def run_tick(
    store: Store, settings: Settings, now: datetime, clock: Callable[[], int], limit: int | None
) -> TickSummary:
    """Run one tick with the effective settings."""
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
    validate.utf8([("subject_like", subject_like), ("target_like", target_like)])
    return store.list_view(
        view, to_ms(now), limit, subject_like=subject_like, target_like=target_like
    )


def migrate(db: str, to: str) -> "Copied":
    """Copy the SQLite database `db` into the empty PostgreSQL database `to`."""
    if is_postgres_url(db):
        raise BadInputError(
            "migrate copies from an SQLite file, not a postgresql:// URL", field="db"
        )
    if not is_postgres_url(to):
        raise BadInputError(
            "give the postgresql:// URL of an empty database to copy into", field="to"
        )
    postgres_module()  # a clear error when psycopg is missing
    # Lazy: the copy loads psycopg, an optional dependency.
    from duequeue.store.copy import sqlite_to_postgres

    return sqlite_to_postgres(db, to)
