"""Wall-clock times in IANA zones: DST gaps, repeated hours and other offset changes.

A wall time is a naive datetime read on a zone's clocks. The one DST rule used everywhere in
duequeue lives in `resolve_wall`: a wall time skipped by a gap means the first valid instant
after the gap, and a repeated wall time means its first occurrence (fold=0).
"""

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

_SECOND = timedelta(seconds=1)
_TICK = timedelta(microseconds=1)
# No zone in the tz database changes its offset twice within three days, so probing once a
# day cannot step over a change and its reversal.
_PROBE = timedelta(days=1)


def utc_offset(tz: ZoneInfo, instant: datetime) -> timedelta:
    """Return the UTC offset in force in tz at an aware instant."""
    offset = instant.astimezone(tz).utcoffset()
    if offset is None:  # pragma: no cover - a ZoneInfo always has an offset
        raise ValueError(f"zone {tz.key!r} has no UTC offset")
    return offset


def to_wall(instant: datetime, tz: ZoneInfo) -> datetime:
    """Return the naive wall time that tz's clocks show at an aware instant."""
    return instant.astimezone(tz).replace(tzinfo=None, fold=0)


def resolve_wall(wall: datetime, tz: ZoneInfo) -> datetime:
    """Return the aware UTC instant a wall time in tz stands for.

    A repeated wall time is its first occurrence; one skipped by a gap is the first valid
    instant after the gap (02:30 on a New York spring-forward day is 03:00 EDT).
    """
    naive = wall.replace(tzinfo=None)
    first = naive.replace(tzinfo=tz, fold=0).astimezone(UTC)
    if to_wall(first, tz) == naive:
        return first
    # Inside a gap fold=1 reads the wall time with the later offset, which lands before the
    # change, and fold=0 with the earlier one, which lands after it: the change lies between.
    before = naive.replace(tzinfo=tz, fold=1).astimezone(UTC)
    change = next_transition(tz, before, first)
    return first if change is None else change


def resolve_reached(wall: datetime, tz: ZoneInfo, before: datetime) -> datetime:
    """Return the aware UTC instant a wall time stands for when it was read off an instant
    earlier than `before`: a repeated wall time whose second occurrence is also earlier is that
    second one (the later instant already reached), else as resolve_wall.

    A recurring row keeps the wall time its pending fire was found after, without its offset;
    read back as the first copy of a repeated hour it would hand out again fires the row had
    passed (docs/time.md: when zone rules change).
    """
    first = resolve_wall(wall, tz)
    naive = wall.replace(tzinfo=None)
    second = naive.replace(tzinfo=tz, fold=1).astimezone(UTC)
    if first < second < before.astimezone(UTC) and to_wall(second, tz) == naive:
        return second
    return first


def gap_ending_at(instant: datetime, tz: ZoneInfo) -> datetime | None:
    """Return the wall time a gap ending exactly at an aware instant starts at, else None.

    Every wall time from that one up to the instant's own resolves to the instant.
    """
    start = instant.astimezone(UTC)
    jump = utc_offset(tz, start) - utc_offset(tz, start - _TICK)
    if jump <= timedelta(0):
        return None
    return to_wall(start, tz) - jump


def next_transition(tz: ZoneInfo, start: datetime, end: datetime) -> datetime | None:
    """Return the first instant in (start, end] whose UTC offset in tz differs from start's."""
    offset = utc_offset(tz, start)
    low = start
    while low < end:
        high = min(low + _PROBE, end)
        if utc_offset(tz, high) != offset:
            return _bisect_transition(tz, low, high, offset)
        low = high
    return None


def _bisect_transition(tz: ZoneInfo, low: datetime, high: datetime, offset: timedelta) -> datetime:
    """Narrow (low, high] down to the instant where tz leaves offset."""
    while high - low > _SECOND:
        middle = low + (high - low) / 2
        if utc_offset(tz, middle) == offset:
            low = middle
        else:
            high = middle
    # The tz database changes offsets on whole seconds.
    whole = low.replace(microsecond=0) + _SECOND
    if whole <= high and utc_offset(tz, whole) != offset:
        return whole.astimezone(UTC)
    return high.astimezone(UTC)  # pragma: no cover - only for a change off a whole second
