"""`TickSummary`: what one tick did, and the two forms cron's logs and scripts read it in.

One type from the engine that counts a tick to every front end: the engine makes it, the API
returns it as it is (`duequeue.TickSummary`), and `line()` and `as_json()` are the tick line and
`tick --json` of docs/reference.md, wherever they are printed (`tick`, `worker`'s log). Cron's
plain tick builds one every minute, so this module stays small: the other public types
(api/results.py, twenty dataclasses) cost a fifth of that run to define.
"""

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any


@dataclass(frozen=True, slots=True)
class TickSummary:
    """What one tick did; rows are counted by how their fire ended."""

    at: datetime  # when the tick started: the `now` it judged what is due by
    claimed: int = 0  # rows, and per-target retries (counted again in target_retries)
    batches: int = 0  # claims that took rows: at most --limit rows and --limit retries each
    target_retries: int = 0  # failed targets of an earlier partial success, tried on their own
    sent: int = 0  # fires that reached every target
    partial: int = 0  # rows whose fire reached some targets; advanced, failures noted
    retried: int = 0  # fires that reached no target yet and wait for a target's retry
    dead: int = 0  # fires dead-lettered
    skipped: int = 0  # fires passed over: missed-tick backlog or later than the misfire grace
    released: int = 0  # claims left unfinished at the time budget, for the next tick
    deliveries_sent: int = 0
    deliveries_failed: int = 0
    max_lateness: timedelta | None = None  # how late the latest fire was; None: none claimed
    errors: tuple[str, ...] = ()  # rows the tick could not handle (released for the next)
    stopped_by: str | None = None  # "SIGTERM" or "SIGINT" when a signal cut the tick short
    # Sends whose outcome the ledger could not take (the database was lost mid-tick, `lost`):
    # their rows stay leased until the lease ends, and those targets may get the fire again.
    unrecorded: int = 0
    refused: int = 0  # write-backs refused: the lease had ended and another tick held the row
    lost: str | None = None  # the database error that stopped the tick's commits
    # Since when the whole queue is paused (`duequeue pause`): the tick claimed nothing.
    paused_since: datetime | None = None
    # The dead letters this tick wrote, (reminder id, fire ms, last error): what DUEQUEUE_ALERT
    # tells a person about (operations/alert.py). Not in the line or the JSON: `dead` counts them.
    dead_letters: tuple[tuple[int, int, str | None], ...] = ()
    # Why the alert about them did not go out (None: sent, or nothing to send); the tick's
    # work stands either way.
    alert_error: str | None = None

    def line(self) -> str:
        """Return the tick line cron logs (after `tick: `), as docs/reference.md shows it."""
        late = self._lateness_s()
        return (
            f"claimed {self.claimed}"
            + (f" ({self.target_retries} target retries)" if self.target_retries else "")
            + (f" in {self.batches} batches" if self.batches > 1 else "")
            + f": sent {self.sent}, partial {self.partial}, "
            f"retried {self.retried}, dead {self.dead}, skipped {self.skipped}, "
            f"released {self.released}; deliveries {self.deliveries_sent} sent, "
            f"{self.deliveries_failed} failed"
            + (f" ({self.unrecorded} unrecorded)" if self.unrecorded else "")
            + f"; max lateness {'-' if late is None else f'{late:.1f}s'}"
            + (f"; refused {self.refused}" if self.refused else "")
            + "".join(f"; error: {e}" for e in self.errors)
            + (f"; lost the database: {self.lost}" if self.lost else "")
            + (f"; stopped by {self.stopped_by}" if self.stopped_by else "")
            + (f"; queue paused since {_iso(self.paused_since)}" if self.paused_since else "")
            + (f"; alert failed: {self.alert_error}" if self.alert_error else "")
        )

    def as_json(self) -> dict[str, Any]:
        """Return the stable JSON object of `tick --json` (docs/reference.md), keys in order."""
        return {
            "claimed": self.claimed,
            "batches": self.batches,
            "target_retries": self.target_retries,
            "sent": self.sent,
            "partial": self.partial,
            "retried": self.retried,
            "dead": self.dead,
            "skipped": self.skipped,
            "released": self.released,
            "deliveries_sent": self.deliveries_sent,
            "deliveries_failed": self.deliveries_failed,
            "max_lateness_s": self._lateness_s(),
            "errors": list(self.errors),
            "stopped_by": self.stopped_by,
            "unrecorded": self.unrecorded,
            "refused": self.refused,
            "lost": self.lost,
            "alert_error": self.alert_error,
            "paused_since": _iso(self.paused_since),
        }

    def _lateness_s(self) -> float | None:
        """Return the lateness in seconds to the millisecond, as the JSON carries spans."""
        late = self.max_lateness
        return None if late is None else round(late.total_seconds(), 3)


def _iso(at: datetime | None) -> str | None:
    """Return an instant as the JSON carries it: ISO 8601 UTC to the millisecond, Z."""
    return None if at is None else at.isoformat(timespec="milliseconds").replace("+00:00", "Z")
