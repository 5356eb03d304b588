"""The pure delivery rules: each target's backoff and dead-letter threshold, and what a fire
amounts to from its targets."""

import pytest

from duequeue.channels.base import Outcome
from duequeue.rules.retry_policy import (
    MAX_ERROR_TEXT,
    End,
    RetryPolicy,
    Verdict,
    retry_at,
    summary,
    verdict,
)

AT = 1_800_000_000_000
FAILED = Outcome("failed", "HTTP 500")
PERMANENT = Outcome("permanent", "HTTP 404")


@pytest.mark.parametrize(
    ("ends", "expected"),
    [
        (["sent"], "sent"),
        (["sent", "sent"], "sent"),
        (["sent", "waiting"], "partial"),
        (["sent", "dead"], "partial"),
        (["waiting"], "retried"),
        (["waiting", "dead"], "retried"),
        (["dead"], "dead"),
        (["dead", "dead"], "dead"),
    ],
)
def test_it_tells_what_a_fire_amounts_to_from_its_targets(
    ends: list[End], expected: Verdict
) -> None:
    assert verdict(ends) == expected


def test_a_target_backs_off_one_then_five_minutes_and_is_dead_at_its_third_failure() -> None:
    policy = RetryPolicy()
    assert retry_at(policy, FAILED, 1, AT) == AT + 60_000
    assert retry_at(policy, FAILED, 2, AT) == AT + 300_000
    assert retry_at(policy, FAILED, 3, AT) is None


def test_it_uses_the_whole_backoff_table_when_more_retries_are_allowed() -> None:
    policy = RetryPolicy(max_errors=6, backoff_ms=(60_000, 300_000, 1_800_000))
    delays = [retry_at(policy, FAILED, n, 0) for n in range(1, 6)]
    assert delays == [60_000, 300_000, 1_800_000, 1_800_000, 1_800_000]
    assert retry_at(policy, FAILED, 6, 0) is None


def test_it_never_retries_sooner_than_retry_after_asks() -> None:
    slow = Outcome("failed", "HTTP 429", retry_after=600.0)
    assert retry_at(RetryPolicy(), slow, 1, AT) == AT + 600_000


def test_it_keeps_the_backoff_when_retry_after_asks_for_less() -> None:
    quick = Outcome("failed", "HTTP 503", retry_after=5.0)
    assert retry_at(RetryPolicy(), quick, 1, AT) == AT + 60_000


def test_a_permanent_failure_is_never_tried_again() -> None:
    assert retry_at(RetryPolicy(max_errors=10), PERMANENT, 1, AT) is None


def test_a_summary_names_each_failed_target_and_is_capped() -> None:
    assert summary("partial: ", [("webhook x", "HTTP 503"), ("email y", None)]) == (
        "partial: webhook x: HTTP 503; email y: failed"
    )
    huge = summary("", [(f"webhook {i}", "x" * 50) for i in range(100)])
    assert len(huge) == MAX_ERROR_TEXT
    assert huge.endswith("…")
