"""What `add` does: a request as given (to Queue.add, on an import line) checked field by field
into a reminder ready to store, what the user should know about it, its first fires, and the
write. reschedule, edit and import check times and targets by these same rules."""

from collections.abc import Iterable, Mapping
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, NamedTuple

from duequeue.channels import registry
from duequeue.config.settings import Settings
from duequeue.errors import BadInputError
from duequeue.rules import validate
from duequeue.schedule import rules as schedule
from duequeue.shared.timefmt import from_ms, iso, parse_duration, to_ms
from duequeue.store.records import NewReminder, NewSchedule, NewTarget, ReminderView
from duequeue.store.store import Store

if TYPE_CHECKING:
    from zoneinfo import ZoneInfo

    from duequeue.schedule.rules import RuleKind


class AddRequest(NamedTuple):
    """The `add` arguments as given (to Queue.add, or on an import line), not yet validated.

    Field names are the API's, and so are the names errors give: `at`, `webhooks[1]`. A
    NamedTuple, not a frozen dataclass: import makes one a line, and a frozen dataclass's
    __init__ sets each of its 15 fields through object.__setattr__ (~1.5 us a line).
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


def request(
    at: str | datetime | timedelta | None,
    tz: str | None,
    rrule: str | None,
    cron: str | None,
    emails: Iterable[str],
    webhooks: Iterable[str],
    notify: Iterable[str],
    targets: Iterable[tuple[str, str]],
    webhook_secret: str | Iterable[str] | None,
    subject: str,
    body: str,
    data: Any,
    data_json: str | None,
    key: str | None,
    misfire_grace: str | timedelta | None,
) -> AddRequest:
    """Return Queue.add's arguments as one request, each list checked to be one."""
    return AddRequest(
        at=at,
        tz=tz,
        rrule=rrule,
        cron=cron,
        emails=_strings("emails", emails),
        webhooks=_strings("webhooks", webhooks),
        notify=_strings("notify", notify),
        targets=tuple(_list("targets", targets)),
        webhook_secrets=(
            ()
            if webhook_secret is None
            else (webhook_secret,)
            if isinstance(webhook_secret, str)
            else _strings("webhook_secret", webhook_secret)
        ),
        subject=subject,
        body=body,
        data=data,
        data_json=data_json,
        key=key,
        misfire_grace=misfire_grace,
    )


def _list(name: str, values: Iterable[Any]) -> Iterable[Any]:
    if isinstance(values, str | bytes):
        raise BadInputError("give a list, not one string", field=name)
    return values


def _strings(name: str, values: Iterable[str]) -> tuple[str, ...]:
    found = tuple(_list(name, values))
    for i, value in enumerate(found):
        if not isinstance(value, str):
            raise BadInputError(f"expected a string, not {value!r}", field=f"{name}[{i}]")
    return found


# What build_reminder computed from an add's time fields (at, tz, rrule, cron, misfire_grace),
# for the next line of an import that gives the same ones: the zone's name, the start and first
# fire (ms), the rule's kind and text, the grace (ms), the wall time named, whether it is from
# now, and the tz release and zone digest that computed them.
_When = tuple[
    str, int, int, "RuleKind | None", str | None, int | None, str | None, bool, str, str | None
]


def build_reminder(
    req: AddRequest,
    default_tz: str,
    now: datetime,
    *,
    settings: Mapping[str, Any] | None = None,
    memo: dict[Any, Any] | None = None,
) -> NewReminder:
    """Validate an add request into a reminder ready to store.

    `settings`: every setting by name (Settings.by_name()): a channel may check an address
    against them (notify targets are refused under DUEQUEUE_WEBHOOK_BLOCK_PRIVATE).

    `memo`: import's batch memo, a dict kept across the lines of one import (one `now`,
    `default_tz` and `settings`; the caller bounds its size): what was computed from time
    fields and target addresses seen before is taken from it. Only what succeeded is kept, and
    everything kept is a function of what keys it, so a line gets the same reminder, or the
    same first refusal, with or without it.
    """
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
        ]
    )
    if req.rrule is not None and req.cron is not None:
        raise BadInputError("give one recurrence, not both", field=("rrule", "cron"))
    if req.data is not None and req.data_json is not None:
        raise BadInputError("give data as a value or as JSON text, not both", field="data")
    settings = settings or {}
    # Text (or nothing) in every time field: what they mean depends on nothing else.
    when_key = (
        ("when", req.at, req.tz, req.rrule, req.cron, req.misfire_grace)
        if memo is not None
        and (req.at is None or type(req.at) is str)
        and (req.misfire_grace is None or type(req.misfire_grace) is str)
        else None
    )
    when: _When | None = None if memo is None else memo.get(when_key)
    if when is None:
        when, new_targets = _when(req, default_tz, now, settings, memo)
        if memo is not None and when_key is not None:
            memo[when_key] = when
    else:
        new_targets = _targets(req, settings, memo)
    tz, dtstart, fire_at, kind, rule_text, grace, start_wall, relative, release, digest = when
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
        tz=tz,
        dtstart=dtstart,
        fire_at=fire_at,
        targets=new_targets,
        rule_kind=kind,
        rule=rule_text,
        misfire_grace_ms=grace,
        key=validate.key(req.key),
        relative=relative,
        start_wall=start_wall,
        release=release,
        zone_digest=digest,
    )


def _when(
    req: AddRequest,
    default_tz: str,
    now: datetime,
    settings: Mapping[str, Any],
    memo: dict[Any, Any] | None,
) -> tuple[_When, tuple[NewTarget, ...]]:
    """Return what an add's time fields mean, and its targets checked (between them, in the
    order add has always checked them, so a line with several faults is refused for the same
    one)."""
    zone = schedule.parse_zone(req.tz or _zone_of(req.at) or default_tz)
    if req.at is None and req.cron is None:
        raise BadInputError("required (a time such as 2027-01-05T09:00, +15m or now)", field="at")
    start = _start(req.at, zone, now)
    new_targets = _targets(req, settings, memo)
    grace = None if req.misfire_grace is None else _grace_ms(req.misfire_grace)
    fire_at = to_ms(start)
    kind: RuleKind | None = None
    rule_text = None
    if req.rrule is not None or req.cron is not None:
        kind, text = ("rrule", req.rrule) if req.rrule is not None else ("cron", req.cron)
        assert text is not None
        wall = schedule.named_wall(req.at, zone, now) if isinstance(req.at, str) else None
        rule = schedule.parse_rule(kind, text, zone, start, wall)
        first = schedule.first_fire(rule)
        if first is None:
            raise BadInputError("the rule has no fire at or after its start", field=kind)
        fire_at, rule_text = to_ms(first), rule.text
    when = (
        zone.key,
        to_ms(start),
        fire_at,
        kind,
        rule_text,
        grace,
        _start_wall(req.at, zone, now),
        _relative(req.at),
        schedule.data_release(),
        None if zone.key == "UTC" else schedule.zone_digest(zone.key),
    )
    return when, new_targets


def _relative(at: str | datetime | timedelta | None) -> bool:
    """Return whether `at` means a time from now, which a repeat of the add moves."""
    if at is None or isinstance(at, timedelta):
        return True
    return isinstance(at, str) and schedule.is_from_now(at)


def _start_wall(
    at: str | datetime | timedelta | None, zone: "ZoneInfo", now: datetime
) -> str | None:
    """Return the wall time `at` named in the reminder's zone, kept so newer zone rules can
    place it again (like RFC 5545's DTSTART;TZID=); None when it named an instant (UTC, an
    offset, a time from now), which no rules change moves."""
    if zone.key == "UTC":
        return None
    if isinstance(at, str):
        wall = schedule.named_wall(at, zone, now)
    elif isinstance(at, datetime) and _zone_of(at) == zone.key:
        wall = at.replace(tzinfo=None)
    else:
        wall = None
    return None if wall is None else wall.isoformat()


def _targets(
    req: AddRequest, settings: Mapping[str, Any], memo: dict[Any, Any] | None = None
) -> tuple[NewTarget, ...]:
    """Return every target given, checked, in the order they are stored, each webhook with its
    own secret if one was given (`memo`: build_reminder's, for addresses checked before)."""
    checked: list[NewTarget] = []
    for name, channel, addresses in (
        ("emails", "email", req.emails),
        ("webhooks", "webhook", req.webhooks),
        ("notify", "notify", req.notify),
    ):
        for i, address in enumerate(addresses):
            found = None if memo is None else memo.get((channel, address))
            if found is None:
                found = _target(name, i, channel, address, settings)
                if memo is not None:
                    memo[(channel, address)] = found
            checked.append(found)
    for i, pair in enumerate(req.targets):
        if not (
            isinstance(pair, tuple | list)
            and len(pair) == 2
            and all(isinstance(part, str) for part in pair)
        ):
            raise BadInputError("expected a (channel, address) pair", field=f"targets[{i}]")
        checked.append(_target("targets", i, pair[0], pair[1], settings))
    if req.webhook_secrets:
        # The targets whose channel takes a secret of its own (a webhook's signing secret).
        hooks = [n for n, t in enumerate(checked) if registry.get(t.channel).secrets]
        secrets = validate.webhook_secrets(req.webhook_secrets, len(hooks))
        for n, secret in zip(hooks, secrets, strict=True):
            checked[n] = replace(checked[n], secret=secret)
    validate.target_count(len(checked))
    return tuple(checked)


def _target(
    name: str, index: int, channel: str, address: str, settings: Mapping[str, Any]
) -> NewTarget:
    """Return one target checked; an error names it as the list and place it was given in."""
    try:
        address.encode("utf-8")  # not a lone surrogate from argv that is not UTF-8
    except UnicodeEncodeError:
        raise BadInputError("not valid UTF-8 text", field=f"{name}[{index}]") from None
    try:
        checked = registry.check(channel, address, settings)
    except BadInputError as exc:
        raise exc.with_field(f"{name}[{index}]") from None
    return NewTarget(channel, checked, shown=shown(channel, checked))


def shown(channel: str, address: str) -> str | None:
    """Return the address as its channel shows it (what search finds), None when that is the
    address as stored."""
    found = registry.shown(channel, address)
    return None if found == address else found


def _zone_of(at: object) -> str | None:
    """Return the IANA zone of an aware datetime given in one (a ZoneInfo): its rules then run
    there."""
    # By its key rather than isinstance(ZoneInfo): cron's tick does not load zoneinfo.
    key = getattr(at.tzinfo, "key", None) if isinstance(at, datetime) else None
    return key if isinstance(key, str) else None


def _start(at: str | datetime | timedelta | None, zone: "ZoneInfo", now: datetime) -> datetime:
    """Return the instant `at` means: an aware datetime, a time from now, or text."""
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


def add_notes(
    reminder: NewReminder, settings: Settings, now: datetime, at: object = None
) -> list[str]:
    """Return what the user should know about a valid reminder: nothing is wrong with it, but
    it will not go out as they may expect. `at` is what the caller gave as add's `at`."""
    notes = []
    if isinstance(at, str) and reminder.dtstart is not None and schedule.is_spoken(at):
        # As at(1) says when its job runs: a spoken time is read one way of several possible.
        notes.append(f"note: read {at.strip()!r} as {_shown(reminder.dtstart, reminder.tz)}")
    if isinstance(at, str):
        moved = schedule.gap_skips(at, schedule.parse_zone(reminder.tz), now)
        if moved is not None:
            notes.append(
                f"note: {at.strip()} does not exist in {reminder.tz} (a DST change skips it): "
                f"the first fire is {moved.isoformat()}, the end of the gap"
            )
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


def _shown(instant: int, tz: str) -> str:
    """Return an instant as the zone's clocks show it and in UTC (UTC alone for UTC)."""
    utc = str(iso(instant))
    if tz == "UTC":
        return utc
    local = from_ms(instant).astimezone(schedule.parse_zone(tz))
    return f"{local:%Y-%m-%d %H:%M:%S %Z} ({tz}), {utc}"


def fires(
    rule_kind: "RuleKind | None", rule: str | None, tz: str, dtstart: int, fire_at: int, count: int
) -> list[datetime]:
    """Return the pending fire and the ones after it, `count` in all (fewer if the rule ends),
    as aware datetimes in the reminder's zone `tz`."""
    zone = schedule.parse_zone(tz)
    first = from_ms(fire_at)
    fires = [first]
    if rule_kind is not None and rule is not None and count > 1:
        parsed = schedule.parse_rule(rule_kind, rule, zone, from_ms(dtstart))
        fires += schedule.upcoming(parsed, first, count - 1)
    return [f.astimezone(zone) for f in fires]


def new_schedule(
    current: ReminderView,
    at: str | datetime | timedelta | None,
    tz: str | None,
    rrule: str | None,
    cron: str | None,
    now: datetime,
) -> tuple[NewSchedule, list[str]]:
    """Return when a reminder fires after `reschedule`, and notes for the user.

    What is not given is kept: the zone, the rule (and its kind), the start. A new `at` is the
    new start (a rule's DTSTART) as for `add`; without one, a rule (new, or kept in a new zone)
    keeps its start and the pending fire becomes its first fire from now on. A one-shot moves
    only with `at`.
    """
    validate.utf8(
        [("at", at if isinstance(at, str) else None), ("tz", tz), ("rrule", rrule), ("cron", cron)]
    )
    if rrule is not None and cron is not None:
        raise BadInputError("give one recurrence, not both", field=("rrule", "cron"))
    if at is None and tz is None and rrule is None and cron is None:
        raise BadInputError("give a new time or rule (--at, --rrule, --cron or --tz)", field="at")
    zone = schedule.parse_zone(tz or _zone_of(at) or current.tz)
    kind: RuleKind | None = current.rule_kind
    text = current.rule
    if rrule is not None or cron is not None:
        kind, text = ("rrule", rrule) if rrule is not None else ("cron", cron)
    if kind is None and at is None:
        raise BadInputError("a one-shot moves with a new time: give --at", field="at")
    assert current.dtstart is not None  # every stored reminder has its start
    start = _start(at, zone, now) if at is not None else from_ms(current.dtstart)
    notes = []
    if kind is None or text is None:
        fire = start
    else:
        wall = schedule.named_wall(at, zone, now) if isinstance(at, str) else None
        rule = schedule.parse_rule(kind, text, zone, start, wall)
        if at is not None:
            first = schedule.first_fire(rule)
        else:
            # The start is kept, and may be long past: the next fire is the first from now on,
            # never a burst of the ones in between.
            upcoming = schedule.upcoming(rule, now - timedelta(milliseconds=1), 1)
            first = upcoming[0] if upcoming else None
        if first is None:
            raise BadInputError("the rule has no fire from now on", field=kind)
        fire, text = first, rule.text
    if to_ms(fire) < to_ms(now) // 1000 * 1000:
        notes.append(
            f"note: the new fire, {iso(to_ms(fire))}, is in the past: it goes out at the next tick"
        )
    return (
        NewSchedule(
            zone.key,
            to_ms(start),
            to_ms(fire),
            kind,
            text if kind is not None else None,
            start_wall=_start_wall(at, zone, now) if at is not None else None,
            release=schedule.data_release() if at is not None else "",
        ),
        notes,
    )


def new_targets(
    emails: Iterable[str],
    webhooks: Iterable[str],
    notify: Iterable[str],
    targets: Iterable[tuple[str, str]],
    webhook_secret: str | Iterable[str] | None,
    settings: Mapping[str, Any],
) -> tuple[NewTarget, ...] | None:
    """Return `edit`'s new set of targets checked as `add` checks them; None if none is given."""
    req = request(
        None, None, None, None, emails, webhooks, notify, targets, webhook_secret, "", "", None,
        None, None, None,
    )  # fmt: skip
    if not (req.emails or req.webhooks or req.notify or req.targets):
        if req.webhook_secrets:
            raise BadInputError(
                "a secret goes with the webhooks it signs: give them too", field="webhook_secret"
            )
        return None
    return _targets(req, settings)


def kept_note(store: Store, rid: int, reminder: NewReminder, at: object) -> str:
    """Return what an add of a live key with the same content says: nothing was added, and,
    when its time was given from now (`+5h` after `+2h`), that the first time is kept."""
    same = f"key {reminder.key!r} exists: reminder {rid}, with the same content"
    if not reminder.relative:
        return f"{same}; nothing added"
    kept = store.get(rid)
    pending = None if kept is None else kept.next_fire_at
    if pending is None or pending == reminder.fire_at:
        return f"{same}; nothing added"
    given = f"{at.strip()!r}" if isinstance(at, str) else "the time given"
    return (
        f"{same} but its first time: it keeps {iso(pending)} ({given} would be "
        f"{iso(reminder.fire_at)}); nothing added (`duequeue reschedule {rid} --at ...` moves it)"
    )


def write(store: Store, reminder: NewReminder, now: datetime) -> tuple[int, bool]:
    """Store a reminder build_reminder made; return (id, created). A live key with the same
    content is not an error: nothing is written and the existing id comes back."""
    return store.add(reminder, to_ms(now))
