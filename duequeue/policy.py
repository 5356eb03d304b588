"""Pure delivery rules: classify a fire's outcomes, pick the backoff, decide dead letters."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from duequeue.channels.base import Outcome

MAX_ERROR_TEXT = 1000


class Verdict(StrEnum):
    """What one attempt at one fire amounts to, across all of the row's targets."""

    SUCCESS = "success"  # every target has the fire
    PARTIAL = "partial"  # some targets have it: advance, never re-send to them
    RETRY = "retry"  # none has it and a transient failure may clear: back off
    DEAD = "dead"  # none has it and retrying cannot help or the retries are spent


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How often and how patiently a failing fire is retried.

    `max_errors` failed attempts dead-letter a fire. After failure number k (k < max_errors) the
    next attempt waits `backoff_ms[k - 1]`; the last step repeats when max_errors outgrows it.
    """

    max_errors: int = 3
    backoff_ms: tuple[int, ...] = (60_000, 300_000, 1_800_000)

    def delay_after(self, failures: int) -> int:
        """Return the wait in ms before the attempt that follows `failures` failed ones."""
        return self.backoff_ms[min(failures, len(self.backoff_ms)) - 1]


@dataclass(frozen=True, slots=True)
class Decision:
    """The write-back for one row: verdict, new error count, retry delay and error text."""

    verdict: Verdict
    error_count: int
    delay_ms: int | None
    error: str | None


_SUCCESS = Decision(Verdict.SUCCESS, 0, None, None)


def classify(outcomes: Sequence[Outcome]) -> Verdict:
    """Classify one attempt by its targets' outcomes, ignoring how many attempts came before."""
    sent = sum(1 for o in outcomes if o.status == "sent")
    if sent == len(outcomes):
        return Verdict.SUCCESS
    if sent:
        return Verdict.PARTIAL
    if all(o.status == "permanent" for o in outcomes):
        # Every target refused for good (4xx, SMTP 5xx): a retry would be refused the same way.
        return Verdict.DEAD
    return Verdict.RETRY


def decide(
    policy: RetryPolicy, outcomes: Sequence[tuple[str, Outcome]], error_count: int
) -> Decision:
    """Decide the write-back for a row from its (target label, outcome) pairs."""
    verdict = classify([o for _, o in outcomes])
    if verdict is Verdict.SUCCESS:
        return _SUCCESS
    failed = [(label, o) for label, o in outcomes if o.status != "sent"]
    if verdict is Verdict.PARTIAL:
        # The failure does not count against the row: the targets that have the fire must never
        # get it twice, so the row advances exactly as on success and only says what failed.
        return Decision(verdict, 0, None, _summary("partial: ", failed))
    failures = error_count + 1
    if verdict is Verdict.DEAD or failures >= policy.max_errors:
        return Decision(Verdict.DEAD, failures, None, _summary("", failed))
    delay = _delay(policy, failures, [o for _, o in failed])
    return Decision(Verdict.RETRY, failures, delay, _summary("", failed))


def retry_target(policy: RetryPolicy, outcome: Outcome, failures: int) -> int | None:
    """Return the wait in ms before a failed target of a partial success tries its fire again
    on its own, `failures` failed attempts in; None when it is a dead letter instead.

    The row has moved on (the targets that got the fire must never get it twice), so the
    failed target keeps the same retry budget and backoff a whole fire would have had.
    """
    if outcome.status == "permanent" or failures >= policy.max_errors:
        return None
    return _delay(policy, failures, [outcome])


def _delay(policy: RetryPolicy, failures: int, failed: Sequence[Outcome]) -> int:
    asked = max((o.retry_after or 0.0 for o in failed), default=0.0)
    # Retry-After is a floor: never come back sooner than the server asked.
    return max(policy.delay_after(failures), round(asked * 1000))


def _summary(prefix: str, failed: Sequence[tuple[str, Outcome]]) -> str:
    parts = [f"{label}: {o.error or o.status}" for label, o in failed]
    text = prefix + "; ".join(parts)
    return text if len(text) <= MAX_ERROR_TEXT else text[: MAX_ERROR_TEXT - 1] + "…"
