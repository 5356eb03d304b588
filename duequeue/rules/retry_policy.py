"""Pure delivery rules: when a failed target is tried again or dead, and what a fire amounts to.

Each target of a fire keeps its own retries: a failure that may clear is tried again after the
backoff (never sooner than a Retry-After asks) until the target has failed `max_errors` times
for that fire; a permanent failure is never tried again. A fire is then:

- **sent**: every target has it;
- **partial**: some targets have it: the reminder moves on (they must never get it twice), and
  each target still failing keeps its own retry of that fire;
- **retried**: no target has it yet and some still may: the fire waits for the earliest retry;
- **dead**: no target has it and none ever will: a dead letter an operator can retry.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from duequeue.channels.base import Outcome

MAX_ERROR_TEXT = 1000

Verdict = Literal["sent", "partial", "retried", "dead"]
# How one target of a fire stands after a tick: it has the fire, waits for its next retry, will
# never get it, or was not tried (the tick ran out of time or was stopped).
End = Literal["sent", "waiting", "dead", "untried"]


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How often and how patiently a failing target is retried.

    `max_errors` failed attempts dead-letter a target's fire. After failure number k
    (k < max_errors) the next attempt waits `backoff_ms[k - 1]`; the last step repeats when
    max_errors outgrows it.
    """

    max_errors: int = 3
    backoff_ms: tuple[int, ...] = (60_000, 300_000, 1_800_000)

    def delay_after(self, failures: int) -> int:
        """Return the wait in ms before the attempt that follows `failures` failed ones."""
        return self.backoff_ms[min(failures, len(self.backoff_ms)) - 1]


def retry_at(policy: RetryPolicy, outcome: Outcome, failures: int, at: int) -> int | None:
    """Return when a target whose attempt ended at `at` with `outcome`, its `failures`-th
    failure of the fire, may be tried again; None when it never will (a dead letter)."""
    if outcome.status == "permanent" or failures >= policy.max_errors:
        return None
    # Retry-After is a floor: never come back sooner than the server asked.
    asked = round((outcome.retry_after or 0.0) * 1000)
    return at + max(policy.delay_after(failures), asked)


def verdict(ends: Sequence[End]) -> Verdict:
    """Return what a fire amounts to from how each of its targets stands (none untried)."""
    sent = ends.count("sent")
    if sent == len(ends):
        return "sent"
    if sent:
        return "partial"
    return "retried" if "waiting" in ends else "dead"


def summary(prefix: str, failed: Sequence[tuple[str, str | None]]) -> str:
    """Return an error text naming each failed target (`label`) and its error, capped."""
    text = prefix + "; ".join(f"{label}: {error or 'failed'}" for label, error in failed)
    return text if len(text) <= MAX_ERROR_TEXT else text[: MAX_ERROR_TEXT - 1] + "…"
