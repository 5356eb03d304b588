"""`--at` as people say it at a terminal, the forms at(1) users type: `tomorrow 9am`, `09:00`,
`monday 08:30`, `noon`, `in 2 hours`. docs/time.md has the table of cases.

A small grammar rather than a general natural-language parser: every form is listed, each has
one meaning, and anything else is refused with the list (a fuzzy parser that guesses wrongly
schedules a reminder at the wrong time without a word). A day and a time name a wall time in
the reminder's zone, resolved by the one DST rule of wallclock.py; `in N units` is real elapsed
time, as `+2h` is.
"""

import re
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from zoneinfo import ZoneInfo

from duequeue.errors import BadInputError
from duequeue.schedule.wallclock import resolve_wall, to_wall

_DAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
# Every spelling of a weekday people write: the full name, its first three letters, and the
# longer abbreviations calendars use.
_WEEKDAYS = {
    **{name: i for i, name in enumerate(_DAYS)},
    **{name[:3]: i for i, name in enumerate(_DAYS)},
    "tues": 1,
    "wednes": 2,
    "thur": 3,
    "thurs": 3,
}
_UNITS = {
    **dict.fromkeys(("s", "sec", "secs", "second", "seconds"), timedelta(seconds=1)),
    **dict.fromkeys(("m", "min", "mins", "minute", "minutes"), timedelta(minutes=1)),
    **dict.fromkeys(("h", "hr", "hrs", "hour", "hours"), timedelta(hours=1)),
    **dict.fromkeys(("d", "day", "days"), timedelta(days=1)),
    **dict.fromkeys(("w", "week", "weeks"), timedelta(weeks=1)),
}
_NAMED_TIMES = {"noon": time(12), "midnight": time(0)}
_CLOCK = re.compile(r"(\d{1,2}):(\d{2})(?::(\d{2}))?")
_TWELVE = re.compile(r"(\d{1,2})(?::(\d{2}))?(am|pm)")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_COUNT_UNIT = re.compile(r"(\d+)([a-z]+)")
_WORDS = frozenset([*_WEEKDAYS, *_NAMED_TIMES, "today", "tomorrow", "in", "at", "next", "tonight"])
_MAX_COUNT = 100_000  # weeks: about 1,900 years, well past any reminder and inside datetime

FORMS = "'in 2 hours', 'tomorrow 9am', 'monday 08:30', '17:00', 'noon'"


@dataclass(frozen=True, slots=True)
class Spoken:
    """What a spoken `at` means: a wall time in the zone, or a span of real time from now."""

    wall: datetime | None = None
    after: timedelta | None = None


def is_from_now(text: str) -> bool:
    """Tell whether `at` text names a span from now (`in 2 hours`), whose repeat moves."""
    return text.strip().lower().startswith("in ")


def parse(text: str, tz: ZoneInfo, now: datetime) -> Spoken | None:
    """Return what a spoken `at` means, read in tz at `now`; None when `text` holds none of
    the grammar's words or times (then it is no spoken form, and ISO 8601's error is the one
    to give). Raises BadInputError for a spoken form that is wrong."""
    tokens = _tokens(text)
    if not tokens or not any(_is_ours(t) for t in tokens):
        return None
    if tokens[0] == "in":
        return Spoken(after=_span(text, tokens[1:]))
    if "next" in tokens:
        raise _bad(text, "'next' is ambiguous; a weekday alone ('monday') is the coming one")
    if "tonight" in tokens:
        raise _bad(text, "say the time instead ('tonight' has none), e.g. 'today 21:00'")
    day: str | date | None = None
    clock: time | None = None
    for token in (t for t in tokens if t != "at"):
        found_time = _time(token)
        if found_time is not None:
            if clock is not None:
                raise _bad(text, "two times of day")
            clock = found_time
            continue
        found_day = _day(token)
        if found_day is None:
            raise _bad(text, f"unknown word {token!r}")
        if day is not None:
            raise _bad(text, "two days")
        day = found_day
    if clock is None:
        raise _bad(text, "give the time of day too, e.g. 'tomorrow 9am'")
    return Spoken(wall=_next_wall(day, clock, tz, now))


def _tokens(text: str) -> list[str]:
    lowered = text.strip().lower().replace(",", " ")
    # `9 am`, `9 a.m.` and `9am` are one token, 9am.
    lowered = re.sub(r"(\d)\s*([ap])\.?m\.?(?=\s|$)", r"\1\2m", lowered)
    return lowered.split()


def _is_ours(token: str) -> bool:
    return token in _WORDS or _time(token) is not None


def _span(text: str, rest: list[str]) -> timedelta:
    """Return the span of `in N units` (also `in 2h`, `in an hour`)."""
    if len(rest) == 1 and (joined := _COUNT_UNIT.fullmatch(rest[0])):
        rest = [joined.group(1), joined.group(2)]
    if len(rest) != 2:
        raise _bad(text, "expected 'in', a number and a unit, e.g. 'in 2 hours'")
    count_text, unit_text = rest
    count = 1 if count_text in ("a", "an") else int(count_text) if count_text.isdigit() else None
    unit = _UNITS.get(unit_text)
    if count is None or unit is None:
        raise _bad(text, "expected 'in', a number and a unit (seconds to weeks), e.g. 'in 2 hours'")
    if count > _MAX_COUNT:
        raise _bad(text, "too far ahead")
    return count * unit


def _time(token: str) -> time | None:
    """Return the time of day a token names (17:00, 9am, 9:30pm, noon), else None."""
    if token in _NAMED_TIMES:
        return _NAMED_TIMES[token]
    if clock := _CLOCK.fullmatch(token):
        hour, minute, second = (int(g or 0) for g in clock.groups())
        return _checked(token, hour, minute, second)
    if twelve := _TWELVE.fullmatch(token):
        hour, minute = int(twelve.group(1)), int(twelve.group(2) or 0)
        if not 1 <= hour <= 12:
            raise BadInputError(f"invalid time {token!r}: am/pm hours run 1 to 12", field="at")
        # 12am is midnight and 12pm noon, as on any 12-hour clock.
        hour = hour % 12 + (12 if twelve.group(3) == "pm" else 0)
        return _checked(token, hour, minute, 0)
    return None


def _checked(token: str, hour: int, minute: int, second: int) -> time:
    try:
        return time(hour, minute, second)
    except ValueError:
        raise BadInputError(f"invalid time of day {token!r}", field="at") from None


def _day(token: str) -> str | date | None:
    """Return `today`, `tomorrow`, a weekday's name or a date a token names, else None."""
    if token in ("today", "tomorrow"):
        return token
    if token in _WEEKDAYS:
        return _DAYS[_WEEKDAYS[token]]
    if _DATE.fullmatch(token):
        try:
            return date.fromisoformat(token)
        except ValueError:
            raise BadInputError(f"invalid date {token!r}", field="at") from None
    return None


def _next_wall(day: str | date | None, clock: time, tz: ZoneInfo, now: datetime) -> datetime:
    """Return the wall time a day and a time name, seen from `now` in tz.

    A time alone is its next occurrence (today's if it is not past, else tomorrow's), a weekday
    the coming one (today's if its time is not past); `today` is today even when past (the
    reminder then goes out at the next tick, with a note), `tomorrow` is tomorrow.
    """
    today = to_wall(now, tz).date()
    if isinstance(day, date):
        return datetime.combine(day, clock)
    if day == "today":
        return datetime.combine(today, clock)
    if day == "tomorrow":
        return datetime.combine(today + timedelta(days=1), clock)
    if day is None:
        first, step = today, timedelta(days=1)
    else:
        ahead = (_DAYS.index(day) - today.weekday()) % 7
        first, step = today + timedelta(days=ahead), timedelta(weeks=1)
    wall = datetime.combine(first, clock)
    # Passed already? By the instant it stands for, so a repeated or skipped hour decides as
    # the reminder will fire.
    return wall if resolve_wall(wall, tz) >= now else wall + step


def _bad(text: str, why: str) -> BadInputError:
    return BadInputError(f"invalid time {text!r}: {why}", field="at")
