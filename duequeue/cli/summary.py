"""A tick's summary as cron logs it (one line) and as `--json`, and the instants and spans every
renderer prints: light enough for cron's plain `tick` (output.py loads the table code)."""

from datetime import UTC, datetime, timedelta
from typing import Any

from duequeue.api.tick_summary import TickSummary


def iso(instant: datetime | None) -> str | None:
    """Return an instant as ISO 8601 UTC to the millisecond, ending in Z; None stays None."""
    if instant is None:
        return None
    return instant.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def seconds(span: timedelta | None) -> float | None:
    """Return a span as seconds rounded to the millisecond, as the JSON carries spans."""
    return None if span is None else round(span.total_seconds(), 3)


def tick_json(s: TickSummary) -> dict[str, Any]:
    """Return the stable JSON object of a tick's summary (docs/reference.md)."""
    return {
        "claimed": s.claimed,
        "batches": s.batches,
        "target_retries": s.target_retries,
        "sent": s.sent,
        "partial": s.partial,
        "retried": s.retried,
        "dead": s.dead,
        "skipped": s.skipped,
        "released": s.released,
        "deliveries_sent": s.deliveries_sent,
        "deliveries_failed": s.deliveries_failed,
        "max_lateness_s": seconds(s.max_lateness),
        "errors": list(s.errors),
        "stopped_by": s.stopped_by,
        "unrecorded": s.unrecorded,
        "refused": s.refused,
        "lost": s.lost,
    }


def lost_line(s: TickSummary) -> str | None:
    """Return the one line a tick that lost its database says on stderr; None if it did not."""
    if s.lost is None:
        return None
    if not s.unrecorded:
        return (
            "tick: lost the database mid-tick; every send was recorded, and its unfinished "
            "rows come back after lease expiry"
        )
    sends = "send" if s.unrecorded == 1 else "sends"
    return (
        f"tick: lost the database mid-tick; {s.unrecorded} {sends} could not be recorded and "
        "may be sent again by another host after lease expiry"
    )


def tick_line(s: TickSummary) -> str:
    """Return the one-line text form of a tick's summary."""
    late = seconds(s.max_lateness)
    return (
        f"claimed {s.claimed}"
        + (f" ({s.target_retries} target retries)" if s.target_retries else "")
        + (f" in {s.batches} batches" if s.batches > 1 else "")
        + f": sent {s.sent}, partial {s.partial}, "
        f"retried {s.retried}, dead {s.dead}, skipped {s.skipped}, "
        f"released {s.released}; deliveries {s.deliveries_sent} sent, "
        f"{s.deliveries_failed} failed"
        + (f" ({s.unrecorded} unrecorded)" if s.unrecorded else "")
        + f"; max lateness {'-' if late is None else f'{late:.1f}s'}"
        + (f"; refused {s.refused}" if s.refused else "")
        + "".join(f"; error: {e}" for e in s.errors)
        + (f"; lost the database: {s.lost}" if s.lost else "")
        + (f"; stopped by {s.stopped_by}" if s.stopped_by else "")
    )
