"""Conversions between stored unix milliseconds and aware UTC datetimes."""

import re
from datetime import UTC, datetime, timedelta

from duequeue.errors import BadInputError

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MS = timedelta(milliseconds=1)


def to_ms(instant: datetime) -> int:
    """Return an aware datetime as integer unix milliseconds."""
    if instant.tzinfo is None:
        raise ValueError("naive datetime: duequeue only handles aware instants")
    # Integer arithmetic: float timestamps lose sub-millisecond exactness far from 1970.
    return (instant - _EPOCH) // _MS


def from_ms(ms: int) -> datetime:
    """Return unix milliseconds as an aware UTC datetime."""
    return _EPOCH + ms * _MS


def iso(ms: int | None) -> str | None:
    """Return unix milliseconds as an ISO 8601 UTC string ending in Z, or None."""
    if ms is None:
        return None
    text = from_ms(ms).isoformat(timespec="milliseconds")
    return text.replace("+00:00", "Z")


_DURATION = re.compile(r"([0-9]+)([smhdw])")
_UNITS = {
    "s": timedelta(seconds=1),
    "m": timedelta(minutes=1),
    "h": timedelta(hours=1),
    "d": timedelta(days=1),
    "w": timedelta(weeks=1),
}


def parse_duration(text: str, field: str = "duration") -> timedelta:
    """Return a duration written as a positive whole number and a unit: 90s, 15m, 2h, 1d, 1w."""
    duration = positive_duration(text)
    if duration is None:
        raise BadInputError(
            f"invalid duration {text!r}: expected a positive whole number and a unit "
            "s, m, h, d or w, such as 15m",
            field=field,
        )
    return duration


def positive_duration(text: str, *, zero: bool = False) -> timedelta | None:
    """Return the duration `text` writes (as parse_duration reads it), or None if it is none.

    With `zero`, 0s / 0m / ... are durations too (`--at +0m` is now).
    """
    match = _DURATION.fullmatch(text.strip())
    if match is None or (int(match[1]) == 0 and not zero):
        return None
    try:
        return int(match[1]) * _UNITS[match[2]]
    except OverflowError:
        return None
