"""Due times and recurrence: parse `at`, `tz`, `rrule` and `cron` and find the next fire.

All instants returned are aware UTC datetimes and `now` is always an argument. A naive time is a
wall time in the reminder's zone, and DST follows Debian cron for RRULE and cron alike:

- Named wall-clock rules (RRULE DAILY and longer or with any BYxxx part; cron with a fixed hour
  field) fire a wall time skipped by a gap once, at the first valid instant after the gap, and a
  repeated wall time once, at its first occurrence. 08:00 stays 08:00 on both sides of a change.
- Every-N rules (RRULE HOURLY, MINUTELY or SECONDLY without BYxxx; cron whose hour field starts
  with '*') follow real elapsed time: they fire in both copies of a repeated hour and lose nothing
  in a gap (cron fires a skipped match at the instant the offset before the gap gives it).
- A named RRULE whose `at` is a wall time skipped by a gap (02:30 on a spring-forward night) fires
  first at the gap's end and keeps that wall time afterwards: the stored start is an instant,
  which cannot say 02:30, so the parts the rule takes from its start are written into its text.

`recurrence.py` has the details; `wallclock.py` the wall-time arithmetic.
"""

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from itertools import islice
from typing import Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from duequeue.errors import BadInputError
from duequeue.schedule import release, spoken, zones
from duequeue.schedule.recurrence import (
    RuleError,
    cron_fires_after,
    normalize_cron,
    normalize_rrule,
    pin_start,
    rrule_series,
)
from duequeue.schedule.wallclock import resolve_wall, to_wall
from duequeue.shared.timefmt import positive_duration

RuleKind = Literal["rrule", "cron"]

_TICK = timedelta(microseconds=1)


@dataclass(frozen=True)
class Rule:
    """A validated recurrence: RRULE or cron text evaluated in tz from dtstart.

    dtstart is normalised to UTC with whole seconds, the resolution of RRULE times.
    """

    kind: RuleKind
    text: str
    tz: ZoneInfo
    dtstart: datetime

    def __post_init__(self) -> None:
        _require_aware(self.dtstart, "Rule.dtstart")
        object.__setattr__(self, "dtstart", self.dtstart.astimezone(UTC).replace(microsecond=0))


def parse_zone(name: str) -> ZoneInfo:
    """Return the IANA zone called name, from the newest tz database at hand (zones.py)."""
    try:
        return zones.zone(name)
    except (ZoneInfoNotFoundError, ValueError, OSError) as exc:
        raise BadInputError(f"unknown time zone {name!r}", field="tz") from exc


def parse_at(text: str, tz: ZoneInfo, now: datetime) -> datetime:
    """Return the aware UTC instant meant by `at`: now, +15m, ISO 8601, a wall time in tz, or
    a spoken form (spoken.py: `tomorrow 9am`, `in 2 hours`)."""
    _require_aware(now, "now")
    stripped = text.strip()
    said = _spoken(stripped, tz, now)
    if said is not None:
        if said.after is not None:
            return now.astimezone(UTC) + said.after  # real elapsed time, as +2h
        assert said.wall is not None
        return resolve_wall(said.wall, tz)
    try:
        if stripped.lower() == "now":
            return now.astimezone(UTC)
        if stripped.startswith("+"):
            # +0m is now: a script computing the offset may well arrive at zero.
            duration = positive_duration(stripped[1:], zero=True)
            if duration is None:
                raise BadInputError(
                    f"invalid relative time {text!r}: expected + and a whole number "
                    "and a unit s, m, h, d or w, such as +15m",
                    field="at",
                )
            # Relative times are real elapsed time, so add in UTC: +1d across a DST change is
            # 24 hours, not the same wall time tomorrow.
            return now.astimezone(UTC) + duration
        parsed = datetime.fromisoformat(stripped)
        if parsed.tzinfo is not None:
            return parsed.astimezone(UTC)
        return resolve_wall(parsed, tz)
    except ValueError as exc:
        reason = str(exc)
        if not reason or reason.startswith("Invalid isoformat"):
            reason = (
                f"expected 'now', '+15m', {spoken.FORMS} or ISO 8601 such as "
                "2027-01-05T09:00 or ...+01:00"
            )
        raise BadInputError(f"invalid time {text!r}: {reason}", field="at") from exc
    except OverflowError as exc:
        raise BadInputError(f"time {text!r} is out of range", field="at") from exc


def _spoken(text: str, tz: ZoneInfo, now: datetime) -> "spoken.Spoken | None":
    """Return what a spoken `at` means; None for ISO 8601 or text that is no spoken form."""
    try:
        datetime.fromisoformat(text)
    except ValueError:
        return spoken.parse(text, tz, now)
    return None  # ISO 8601 wins: 2027-01-05 is a date, never a spoken form


def is_spoken(text: str) -> bool:
    """Tell whether `at` text is a spoken form (`tomorrow 9am`), whose reading add reports."""
    stripped = text.strip()
    if stripped.lower() == "now" or stripped.startswith("+"):
        return False
    try:
        datetime.fromisoformat(stripped)
    except ValueError:
        return True  # valid text, so a spoken form: parse_at took it
    return False


def is_from_now(text: str) -> bool:
    """Tell whether `at` text names a time from now (`now`, `+15m`, `in 2 hours`): an instant,
    which a repeat of the same add names anew."""
    stripped = text.strip()
    return stripped.lower() == "now" or stripped.startswith("+") or spoken.is_from_now(stripped)


def named_wall(text: str, tz: ZoneInfo, now: datetime) -> datetime | None:
    """Return the wall time `at` names when it is a local date-time (ISO 8601 without an
    offset, or a spoken day and time), else None."""
    stripped = text.strip()
    try:
        parsed = datetime.fromisoformat(stripped)
    except ValueError:
        try:
            said = spoken.parse(stripped, tz, now)
        except BadInputError:
            return None
        return None if said is None else said.wall
    return parsed if parsed.tzinfo is None else None


def gap_skips(text: str, tz: ZoneInfo, now: datetime) -> datetime | None:
    """Return the local time `at` becomes when it names a wall time a DST gap skips (02:30 on
    a spring-forward night becomes 03:00), else None."""
    wall = named_wall(text, tz, now)
    if wall is None:
        return None
    instant = resolve_wall(wall, tz)
    return instant.astimezone(tz) if to_wall(instant, tz) != wall else None


def parse_rule(
    kind: RuleKind, text: str, tz: ZoneInfo, dtstart: datetime, wall: datetime | None = None
) -> Rule:
    """Validate RRULE or cron text and return it as a Rule starting at dtstart.

    wall is the local time `at` named, if it named one: when a gap skips it, an RRULE keeps
    that wall time (see `pin_start`) while its first fire is dtstart, the end of the gap.
    """
    try:
        if kind == "rrule":
            if wall is not None:
                shown = to_wall(resolve_wall(wall, tz), tz)
                if shown != wall:
                    text = pin_start(text, wall, shown)
            rule = Rule(kind, normalize_rrule(text), tz, dtstart)
            rrule_series(rule.text, rule.tz, rule.dtstart)
        elif kind == "cron":
            rule = Rule(kind, normalize_cron(text), tz, dtstart)
        else:
            raise ValueError(f"unknown rule kind {kind!r}")
        if first_fire(rule) is None:
            raise RuleError(f"{text!r} never fires at or after the start time")
    except RuleError as exc:
        raise BadInputError(str(exc), field=kind) from exc
    return rule


def next_fire(rule: Rule, after: datetime) -> datetime | None:
    """Return the first fire strictly after an aware instant, or None once the rule has ended."""
    return next(_fires_after(rule, after), None)


def first_fire(rule: Rule) -> datetime | None:
    """Return the first fire at or after the rule's start, or None if it never fires."""
    return next(_fires_after(rule, rule.dtstart - _TICK), None)


def upcoming(rule: Rule, after: datetime, count: int) -> list[datetime]:
    """Return the next count fires strictly after an aware instant; fewer if the rule ends."""
    if count <= 0:
        return []
    return list(islice(_fires_after(rule, after), count))


def count_fires(rule: Rule, after: datetime, until: datetime, cap: int = 100_000) -> int:
    """Return how many fires lie in (after, until], counting no further than cap."""
    return latest_fire(rule, after, until, cap)[1]


def latest_fire(
    rule: Rule, after: datetime, until: datetime, cap: int = 100_000
) -> tuple[datetime | None, int]:
    """Return the last fire in (after, until] and how many fires lie there (up to cap).

    (None, 0) when there is none; past cap, the cap-th fire and cap.
    """
    _require_aware(until, "until")
    last: datetime | None = None
    total = 0
    for fire in _fires_after(rule, after):
        if fire > until or total >= cap:
            break
        last, total = fire, total + 1
    return last, total


def fires_after(rule: Rule, after: datetime) -> Iterator[datetime]:
    """Yield a rule's fires strictly after an aware instant, increasing, as UTC."""
    return _fires_after(rule, after)


def wall_text(instant: datetime, tz: str) -> str:
    """Return the wall time tz's clocks show at an instant, as stored: ISO 8601 without offset."""
    return to_wall(instant, parse_zone(tz)).isoformat()


def zone_digest(name: str) -> str | None:
    """Return the digest of zone `name`'s compiled rules in the data in use (zones.py)."""
    return zones.digest(name)


def data_release() -> str:
    """Return the tz release the zones are read from ('' when unknown)."""
    return release.in_use() or ""


def follows_elapsed_time(rule: Rule) -> bool:
    """Return whether a rule counts real elapsed time (every N hours, minutes or seconds) rather
    than naming wall-clock times (recurrence.py)."""
    if rule.kind == "cron":
        return rule.text.split()[1].startswith("*")
    parts = dict(part.split("=", 1) for part in rule.text.split(";"))
    return parts["FREQ"] in ("HOURLY", "MINUTELY", "SECONDLY") and not any(
        name.startswith("BY") for name in parts
    )


def _fires_after(rule: Rule, after: datetime) -> Iterator[datetime]:
    """Yield a rule's fires strictly after an aware instant, increasing, as UTC."""
    _require_aware(after, "after")
    if rule.kind == "rrule":
        return rrule_series(rule.text, rule.tz, rule.dtstart).fires_after(after)
    # A cron rule fires at its first match at or after dtstart.
    return cron_fires_after(rule.text, rule.tz, max(after, rule.dtstart - _TICK))


def _require_aware(instant: datetime, name: str) -> None:
    if instant.tzinfo is None or instant.utcoffset() is None:
        raise ValueError(f"{name} must be an aware datetime, got naive {instant!r}")
