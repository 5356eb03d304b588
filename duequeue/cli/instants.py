"""Instants and spans as every renderer prints them: ISO 8601 UTC to the millisecond, and
seconds to the millisecond in the JSON."""

from datetime import UTC, datetime, timedelta


def iso(instant: datetime | None) -> str | None:
    """Return an instant as ISO 8601 UTC to the millisecond, ending in Z; None stays None."""
    if instant is None:
        return None
    return instant.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def seconds(span: timedelta | None) -> float | None:
    """Return a span as seconds rounded to the millisecond, as the JSON carries spans."""
    return None if span is None else round(span.total_seconds(), 3)
