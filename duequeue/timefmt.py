"""Conversions between stored unix milliseconds and aware UTC datetimes."""

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


_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_duration(text: str, field: str = "duration") -> timedelta:
    """Parse a positive duration such as 90s, 15m, 2h, 1d or 1w."""
    raw = text.strip()
    number, unit = raw[:-1], raw[-1:].lower()
    if unit not in _UNITS or not (number.isascii() and number.isdigit()) or int(number) <= 0:
        raise BadInputError(f"{field}: {text!r} is not a duration like 90s, 15m, 2h, 1d or 1w")
    return timedelta(seconds=int(number) * _UNITS[unit])
