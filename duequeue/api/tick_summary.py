"""`TickSummary`, the public result of a tick, in a module of its own.

Cron's plain `tick` builds one every minute; results.py, where the other public types are (and
which shows this one too), costs a fifth of that run's start-up to load: its twenty dataclasses
(75M of an empty tick's 360M instructions, measured with valgrind).
"""

from dataclasses import dataclass
from datetime import datetime, timedelta


@dataclass(frozen=True, slots=True)
class TickSummary:
    """What one tick did; rows are counted by how their fire ended."""

    at: datetime  # when the tick started: the `now` it judged what is due by
    claimed: int  # rows, and per-target retries (counted again in target_retries)
    batches: int  # claims that took rows
    target_retries: int  # failed targets of an earlier partial success, tried on their own
    sent: int  # rows whose fire reached every target
    partial: int  # rows whose fire reached some targets; advanced, failures noted
    retried: int  # rows backing off after a full failure
    dead: int  # fires dead-lettered
    skipped: int  # fires passed over: missed-tick backlog or later than the misfire grace
    released: int  # rows left unfinished at the time budget, for the next tick
    deliveries_sent: int
    deliveries_failed: int
    max_lateness: timedelta | None  # how late the latest fire was; None when none was claimed
    errors: tuple[str, ...] = ()  # rows the tick could not handle (released for the next)
    stopped_by: str | None = None  # "SIGTERM" or "SIGINT" when a signal cut the tick short
    # Sends whose outcome the ledger could not take: the database was lost mid-tick (`lost`).
    unrecorded: int = 0
    refused: int = 0  # write-backs refused: the lease had ended and another tick held the row
    lost: str | None = None  # the database error that stopped the tick's commits
