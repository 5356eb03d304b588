"""RRULE and cron recurrence in an IANA zone, with Debian cron's DST rules for both.

Every rule is one of two kinds.

Named wall-clock rules fire at times read on the zone's clocks: an RRULE with FREQ of DAILY or
longer, or with any BYxxx part (BYHOUR names an hour, BYDAY a day, both on the local calendar),
and a cron expression whose hour field does not start with '*'. They are generated on naive wall
time and each wall time is resolved by `resolve_wall`: one skipped by a gap fires once at the first
instant after the gap, a repeated one fires once at its first occurrence. Wall times that resolve to
the same instant fire once. A rule's fires are the instants its wall times resolve to, at or after
its start; so a start at the very end of a gap also fires the rule's wall times inside that gap,
once, at the start itself. That is how a start named inside a gap (02:30) keeps its place: it is
stored as the gap's end (03:00) with the rule's time written out (`pin_start`).

Elapsed-time rules fire every N hours, minutes or seconds of real time: an RRULE with FREQ of
HOURLY, MINUTELY or SECONDLY and no BYxxx part is generated on a fixed-offset timeline anchored at
DTSTART (UTC shifted by DTSTART's offset), so it keeps its real-time cadence through both copies of
a repeated hour and through a gap. A cron expression whose hour field starts with '*' ('*', '*/2')
fires at every real instant whose wall time matches its fields, so both copies of a repeated hour
fire; a matching wall time that a gap skips fires at the instant the offset before the change gives
it (what the clock would have shown had it not changed), once. cronsim 2.8
mimics Debian for its fixed-time case, but it treats a '*' minute with a fixed hour as a wildcard
job and can skip a match after a 30-minute gap (Australia/Lord_Howe), so it is only used to match
fields on naive time; the zone handling is here.
"""

import re
from collections.abc import Iterator
from datetime import UTC, datetime, time, timedelta
from functools import lru_cache
from zoneinfo import ZoneInfo

from cronsim import CronSim, CronSimError
from dateutil.rrule import rrule, rrulestr

from duequeue.schedule.wallclock import (
    gap_ending_at,
    next_transition,
    resolve_wall,
    to_wall,
    utc_offset,
)


class RuleError(ValueError):
    """A recurrence rule's text is invalid; the message says why in one line."""


_TICK = timedelta(microseconds=1)
_ELAPSED_FREQS = frozenset({"HOURLY", "MINUTELY", "SECONDLY"})
# (smallest, largest, negatives allowed) for numeric BYxxx lists; dateutil silently accepts some
# out-of-range values (BYMONTHDAY=0) and then never or always matches.
_LIMITS: dict[str, tuple[int, int, bool]] = {
    "BYSECOND": (0, 59, False),
    "BYMINUTE": (0, 59, False),
    "BYHOUR": (0, 23, False),
    "BYMONTHDAY": (1, 31, True),
    "BYYEARDAY": (1, 366, True),
    "BYWEEKNO": (1, 53, True),
    "BYMONTH": (1, 12, False),
    "BYSETPOS": (1, 366, True),
}
_MONTH_DAYS = (31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
_DIGITS = re.compile(r"[0-9]+")
_UNTIL = re.compile(r"([0-9]{8})(?:T([0-9]{6})(Z?))?")
_FREQ_ORDER = ("YEARLY", "MONTHLY", "WEEKLY", "DAILY", "HOURLY", "MINUTELY", "SECONDLY")
_WEEKDAYS = ("MO", "TU", "WE", "TH", "FR", "SA", "SU")
_DAY = timedelta(days=1)
_UNIT = {
    "DAILY": _DAY,
    "HOURLY": timedelta(hours=1),
    "MINUTELY": timedelta(minutes=1),
    "SECONDLY": timedelta(seconds=1),
}


def normalize_rrule(text: str) -> str:
    """Return RRULE text in the form it is stored: one line, upper case, no 'RRULE:' prefix."""
    return ";".join(f"{name}={value}" for name, value in _rrule_parts(text).items())


def _rrule_parts(text: str) -> dict[str, str]:
    """Split and check RRULE text, returning its parts by name in their given order."""
    body = text.strip().upper()
    if "DTSTART" in body:
        raise RuleError("DTSTART is not allowed in the rule; the start comes from --at")
    if "\n" in body or "\r" in body:
        raise RuleError("give a single RRULE line")
    body = body.removeprefix("RRULE:")
    parts: dict[str, str] = {}
    for part in body.split(";"):
        name, sep, value = (piece.strip() for piece in part.partition("="))
        if not (name or sep or value):
            continue
        if not (name and sep and value):
            raise RuleError(f"expected NAME=VALUE, got {part.strip()!r} in {text!r}")
        if name in parts:
            raise RuleError(f"{name} given twice in {text!r}")
        parts[name] = value
    freq = parts.get("FREQ")
    if freq not in _FREQ_ORDER:
        raise RuleError(f"FREQ must be one of {', '.join(_FREQ_ORDER)} in {text!r}")
    if parts.get("WKST", "MO") not in _WEEKDAYS:
        raise RuleError(f"WKST must be one of {', '.join(_WEEKDAYS)} in {text!r}")
    for name in ("INTERVAL", "COUNT"):
        if name in parts and not (_DIGITS.fullmatch(parts[name]) and int(parts[name]) > 0):
            raise RuleError(f"{name} must be a positive whole number in {text!r}")
    if "COUNT" in parts and "UNTIL" in parts:
        raise RuleError(f"COUNT and UNTIL cannot be used together in {text!r}")
    for name, (low, high, negatives) in _LIMITS.items():
        for number in _numbers(parts, name):
            if not (low <= abs(number) <= high and (negatives or number >= 0)):
                raise RuleError(f"{name} value {number} is out of range in {text!r}")
    return parts


def _numbers(parts: dict[str, str], name: str) -> list[int]:
    """Return the integers of a numeric BYxxx list, or [] when the part is absent."""
    if name not in parts:
        return []
    try:
        return [int(item) for item in parts[name].split(",")]
    except ValueError:
        raise RuleError(f"{name} must be a list of whole numbers, got {parts[name]!r}") from None


def _check_month_days(parts: dict[str, str], start: datetime) -> None:
    """Reject a day of month that no allowed month has; dateutil would search up to year 9999."""
    days = _numbers(parts, "BYMONTHDAY")
    implicit = not any(key in parts for key in ("BYDAY", "BYYEARDAY", "BYWEEKNO", "BYEASTER"))
    if not days and implicit and parts["FREQ"] in ("MONTHLY", "YEARLY"):
        days = [start.day]  # dateutil takes the day from DTSTART
    months = _numbers(parts, "BYMONTH") or range(1, 13)
    if days and not any(abs(day) <= _MONTH_DAYS[month - 1] for month in months for day in days):
        raise RuleError("the rule names a day of the month that its months never have")


def _parse_until(value: str, tz: ZoneInfo) -> datetime:
    """Return UNTIL as an aware UTC instant; naive means wall time in tz, a date its last second."""
    match = _UNTIL.fullmatch(value)
    try:
        if match is None:
            raise ValueError(value)
        if match[2] is None:
            wall = datetime.strptime(match[1] + "235959", "%Y%m%d%H%M%S")
        else:
            wall = datetime.strptime(match[1] + match[2], "%Y%m%d%H%M%S")
    except ValueError:
        raise RuleError(
            f"invalid UNTIL {value!r}: expected YYYYMMDD or YYYYMMDDTHHMMSS with optional Z"
        ) from None
    if match[3]:
        return wall.replace(tzinfo=UTC)
    return resolve_wall(wall, tz)


class RRuleSeries:
    """One RRULE bound to a zone and a start, able to start its walk near any instant.

    dateutil walks a rule from DTSTART on every query, which for an every-15-minutes rule a year
    old is 35,000 steps. So a query restarts the rule at the start of the last period in phase
    with DTSTART (the same year, month, week, day, hour... counted in INTERVALs) before it, with
    the values dateutil would fill in from DTSTART (BYHOUR, BYDAY...) written out so the restart
    does not change them. Under COUNT the position must be known too, which it is only when every
    period holds exactly one occurrence; other COUNT rules walk from DTSTART, bounded by COUNT.
    """

    def __init__(self, text: str, tz: ZoneInfo, dtstart: datetime) -> None:
        parts = _rrule_parts(text)
        self._tz = tz
        self._dtstart = dtstart.astimezone(UTC).replace(microsecond=0)
        has_by = any(name.startswith("BY") for name in parts)
        self._freq = parts["FREQ"]
        elapsed = self._freq in _ELAPSED_FREQS and not has_by
        self._offset = utc_offset(tz, self._dtstart) if elapsed else None
        self._start = self._to_naive(self._dtstart)
        _check_month_days(parts, self._start)
        until = parts.pop("UNTIL", None)
        # UNTIL is applied to resolved instants: dateutil refuses a UTC UNTIL with a naive start.
        self._until = None if until is None else _parse_until(until, tz)
        self._count = int(parts["COUNT"]) if "COUNT" in parts else None
        self._interval = int(parts.get("INTERVAL", "1"))
        self._single = not has_by and self._freq not in ("MONTHLY", "YEARLY")
        self._wkst = _WEEKDAYS.index(parts.setdefault("WKST", "MO"))
        explicit = _explicit(parts, self._start)
        self._rule = _parse(explicit, self._start, text)
        # The rule's wall times inside a gap that ends exactly at DTSTART resolve to DTSTART
        # itself, so they fire there, once: this is how a start named inside a gap fires.
        self._head = 0
        gap_start = None if elapsed else gap_ending_at(self._dtstart, tz)
        if gap_start is not None:
            self._head = _count_walls(explicit, gap_start, self._start, text)
        if self._head and self._count is not None:
            self._count -= self._head
            explicit["COUNT"] = str(max(self._count, 1))
            self._rule = _parse(explicit, self._start, text)

    def fires_after(self, after: datetime) -> Iterator[datetime]:
        """Yield the fires strictly after an aware instant, in increasing order, as UTC."""
        # A wall time at or before after's own resolves at or before after, so start there.
        lower = None if after < self._dtstart else self._to_naive(after)
        last = after
        if self._head and lower is None:
            if self._until is not None and self._dtstart > self._until:
                return
            yield self._dtstart
            last = self._dtstart
        if self._count is not None and self._count <= 0:
            return
        rule = self._rule if lower is None else self._restart(lower)
        if rule is None:
            return
        for wall in rule:
            if lower is not None and wall <= lower:
                continue
            fire = self._dtstart if wall == self._start else self._to_instant(wall)
            # Skip wall times already fired at their first occurrence (after lies in the repeated
            # hour) and gap times collapsing onto one instant.
            if fire <= last or fire < self._dtstart:
                continue
            if self._until is not None and fire > self._until:
                return
            yield fire
            last = fire

    def _restart(self, lower: datetime) -> rrule | None:
        """Return the rule restarted at the last period in phase before lower; None if ended."""
        if self._count is not None and not self._single:
            return self._rule
        anchor, periods = self._period_before(lower)
        if periods <= 0:
            return self._rule
        if self._count is None:
            return self._rule.replace(dtstart=anchor)
        if periods >= self._count:
            return None
        return self._rule.replace(dtstart=anchor, count=self._count - periods)

    def _period_before(self, lower: datetime) -> tuple[datetime, int]:
        """Return the start of the last in-phase period at or before lower, and its number."""
        start, step = self._start, self._interval
        if self._freq == "YEARLY":
            periods = (lower.year - start.year) // step
            return datetime(start.year + periods * step, 1, 1), periods
        if self._freq == "MONTHLY":
            first = start.year * 12 + start.month - 1
            periods = (lower.year * 12 + lower.month - 1 - first) // step
            year, month = divmod(first + periods * step, 12)
            return datetime(year, month + 1, 1), periods
        if self._freq == "WEEKLY":
            week = (
                datetime.combine(start.date(), time()) - (start.weekday() - self._wkst) % 7 * _DAY
            )
            periods = (lower - week) // (_DAY * 7 * step)
            return week + periods * step * 7 * _DAY, periods
        unit = _UNIT[self._freq]
        origin = datetime.min + (start - datetime.min) // unit * unit
        periods = (lower - origin) // (unit * step)
        return origin + periods * step * unit, periods

    def _to_naive(self, instant: datetime) -> datetime:
        if self._offset is None:
            return to_wall(instant, self._tz)
        return (instant.astimezone(UTC) + self._offset).replace(tzinfo=None)

    def _to_instant(self, naive: datetime) -> datetime:
        if self._offset is None:
            return resolve_wall(naive, self._tz)
        return (naive - self._offset).replace(tzinfo=UTC)


def _parse(parts: dict[str, str], start: datetime, text: str) -> rrule:
    """Return dateutil's rule for explicit parts and a naive DTSTART."""
    body = ";".join(f"{name}={value}" for name, value in parts.items())
    try:
        parsed = rrulestr(body, dtstart=start)
    except (ValueError, TypeError, KeyError, IndexError, OverflowError) as exc:
        raise RuleError(f"invalid rule {text!r} ({exc})") from exc
    if not isinstance(parsed, rrule):  # pragma: no cover - one line never makes a set
        raise RuleError(f"invalid rule {text!r}")
    return parsed


def _count_walls(parts: dict[str, str], low: datetime, high: datetime, text: str) -> int:
    """Return how many wall times the rule, walked from low, has in [low, high)."""
    uncounted = {name: value for name, value in parts.items() if name != "COUNT"}
    walls = 0
    for wall in _parse(uncounted, low, text):
        if wall >= high:
            break
        walls += 1
    return walls


def pin_start(text: str, wall: datetime, shown: datetime) -> str:
    """Return RRULE text with the parts it takes from a DTSTART wall time written out.

    A start named inside a gap (wall, 02:30) is stored as the instant the gap ends, whose wall
    time (shown, 03:00) would give the rule other values; written into the rule, the named
    wall time is kept. Text that the two would not change is returned as it is.
    """
    parts = _rrule_parts(text)
    if parts["FREQ"] in _ELAPSED_FREQS and not any(name.startswith("BY") for name in parts):
        return normalize_rrule(text)  # counts real time from the start; no wall time to keep
    pinned = _explicit(parts, wall)
    if pinned == _explicit(parts, shown):
        return normalize_rrule(text)
    return ";".join(f"{name}={value}" for name, value in pinned.items())


def _explicit(parts: dict[str, str], start: datetime) -> dict[str, str]:
    """Return parts with the values dateutil would take from DTSTART written out."""
    freq = _FREQ_ORDER.index(parts["FREQ"])
    filled = dict(parts)
    if not any(
        name in parts for name in ("BYWEEKNO", "BYYEARDAY", "BYMONTHDAY", "BYDAY", "BYEASTER")
    ):
        if parts["FREQ"] == "YEARLY":
            filled.setdefault("BYMONTH", str(start.month))
            filled["BYMONTHDAY"] = str(start.day)
        elif parts["FREQ"] == "MONTHLY":
            filled["BYMONTHDAY"] = str(start.day)
        elif parts["FREQ"] == "WEEKLY":
            filled["BYDAY"] = _WEEKDAYS[start.weekday()]
    for name, level, value in (
        ("BYHOUR", 4, start.hour),
        ("BYMINUTE", 5, start.minute),
        ("BYSECOND", 6, start.second),
    ):
        if freq < level:
            filled.setdefault(name, str(value))
    return filled


@lru_cache(maxsize=4096)
def rrule_series(text: str, tz: ZoneInfo, dtstart: datetime) -> RRuleSeries:
    """Return the parsed series of one rule, shared by every lookup of the same rule."""
    return RRuleSeries(text, tz, dtstart)


# Debian cron's nicknames, stored as what they stand for. @hourly has a '*' hour, so it follows
# real elapsed time like '0 * * * *'; the others name a wall-clock time.
_NICKNAMES = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}


def normalize_cron(text: str) -> str:
    """Check a 5-field cron expression or nickname; return the fields with single spaces."""
    nickname = text.strip().lower()
    if nickname.startswith("@"):
        if nickname == "@reboot":
            raise RuleError(f"{text.strip()!r} names no time; give one such as @daily or 0 9 * * *")
        if nickname not in _NICKNAMES:
            raise RuleError(
                f"unknown nickname {text.strip()!r}: expected one of {', '.join(_NICKNAMES)}"
            )
        return _NICKNAMES[nickname]
    fields = text.split()
    if len(fields) != 5:
        raise RuleError(
            "expected 5 fields (minute hour day-of-month month day-of-week), "
            f"got {len(fields)} in {text!r}"
        )
    expression = " ".join(fields)
    try:
        first = next(CronSim(expression, datetime(2000, 1, 1)), None)
    except (CronSimError, ValueError, IndexError) as exc:
        raise RuleError(f"{str(exc).lower() or 'bad field'} in {text!r}") from exc
    if first is None:
        raise RuleError(f"{text!r} never matches")
    return expression


def cron_fires_after(expression: str, tz: ZoneInfo, after: datetime) -> Iterator[datetime]:
    """Yield a cron expression's fires in tz strictly after an aware instant, as UTC."""
    if expression.split()[1].startswith("*"):
        return _elapsed_cron(expression, tz, after)
    return _named_cron(expression, tz, after)


def _named_cron(expression: str, tz: ZoneInfo, after: datetime) -> Iterator[datetime]:
    last = after
    # A match at or before after's wall time resolves at or before after.
    for wall in CronSim(expression, to_wall(after, tz)):
        fire = resolve_wall(wall, tz)
        if fire > last:
            yield fire
            last = fire


def _elapsed_cron(expression: str, tz: ZoneInfo, after: datetime) -> Iterator[datetime]:
    # Between two offset changes wall time is UTC plus a constant, so match the fields on that
    # naive timeline; a candidate past the next change is retried from the change itself. A
    # change that skips wall time leaves a window as long as the gap after it, in which the
    # skipped wall times fire at the instants the old offset gives them (00:00 -04 on a
    # Santiago spring-forward night is 01:00 -03): so `0 */3 * * *` loses nothing in a gap.
    after = after.astimezone(UTC)
    start, inclusive = after, False
    recent = next_transition(tz, after - _DAY, after)
    if recent is not None:
        old, new = utc_offset(tz, recent - _TICK), utc_offset(tz, recent)
        if new > old and after < recent + (new - old):
            yield from _gap_window(expression, recent, old, new, after)
            start, inclusive = recent + (new - old), True
    while True:
        offset = utc_offset(tz, start)
        naive = (start + offset).replace(tzinfo=None)
        wall = next(CronSim(expression, naive - _TICK if inclusive else naive), None)
        if wall is None:
            return
        candidate = (wall - offset).replace(tzinfo=UTC)
        change = next_transition(tz, start, candidate)
        if change is None:
            yield candidate
            start, inclusive = candidate, False
            continue
        new = utc_offset(tz, change)
        if new > offset:
            yield from _gap_window(expression, change, offset, new, start)
            start, inclusive = change + (new - offset), True
        else:
            start, inclusive = change, True


def _gap_window(
    expression: str, change: datetime, old: timedelta, new: timedelta, after: datetime
) -> Iterator[datetime]:
    """Yield the fires after `after` in [change, change + gap) of a change from old to new.

    They come from two timelines: the wall times the gap skipped, read with the old offset,
    and the wall times after the gap, read with the new one. An instant both give fires once.
    """
    end = change + (new - old)
    fires: set[datetime] = set()
    for offset in (old, new):
        for wall in CronSim(expression, (change + offset).replace(tzinfo=None) - _TICK):
            instant = (wall - offset).replace(tzinfo=UTC)
            if instant >= end:
                break
            fires.add(instant)
    yield from sorted(fire for fire in fires if fire > after)
