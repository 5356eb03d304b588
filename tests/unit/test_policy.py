"""The pure delivery rules: classification, backoff table, dead-letter threshold."""

import pytest

from duequeue.channels.base import Outcome
from duequeue.policy import RetryPolicy, Verdict, classify, decide

SENT = Outcome("sent")
FAILED = Outcome("failed", "HTTP 500")
PERMANENT = Outcome("permanent", "HTTP 404")


@pytest.mark.parametrize(
    ("outcomes", "verdict"),
    [
        ([SENT], Verdict.SUCCESS),
        ([SENT, SENT], Verdict.SUCCESS),
        ([SENT, FAILED], Verdict.PARTIAL),
        ([SENT, PERMANENT], Verdict.PARTIAL),
        ([FAILED], Verdict.RETRY),
        ([FAILED, PERMANENT], Verdict.RETRY),
        ([PERMANENT], Verdict.DEAD),
        ([PERMANENT, PERMANENT], Verdict.DEAD),
    ],
)
def test_it_classifies_an_attempt_by_its_targets(outcomes: list[Outcome], verdict: Verdict) -> None:
    assert classify(outcomes) is verdict


def test_it_backs_off_one_then_five_minutes_and_dead_letters_at_the_third_failure() -> None:
    policy = RetryPolicy()
    first = decide(policy, [("webhook x", FAILED)], error_count=0)
    second = decide(policy, [("webhook x", FAILED)], error_count=1)
    third = decide(policy, [("webhook x", FAILED)], error_count=2)
    assert (first.verdict, first.error_count, first.delay_ms) == (Verdict.RETRY, 1, 60_000)
    assert (second.verdict, second.error_count, second.delay_ms) == (Verdict.RETRY, 2, 300_000)
    assert (third.verdict, third.error_count, third.delay_ms) == (Verdict.DEAD, 3, None)


def test_it_uses_the_whole_backoff_table_when_more_retries_are_allowed() -> None:
    policy = RetryPolicy(max_errors=6, backoff_ms=(60_000, 300_000, 1_800_000))
    delays = [decide(policy, [("t", FAILED)], error_count=n).delay_ms for n in range(5)]
    assert delays == [60_000, 300_000, 1_800_000, 1_800_000, 1_800_000]
    assert decide(policy, [("t", FAILED)], error_count=5).verdict is Verdict.DEAD


def test_it_never_retries_sooner_than_retry_after_asks() -> None:
    slow = Outcome("failed", "HTTP 429", retry_after=600.0)
    d = decide(RetryPolicy(), [("webhook x", slow)], error_count=0)
    assert d.delay_ms == 600_000


def test_it_keeps_the_backoff_when_retry_after_asks_for_less() -> None:
    quick = Outcome("failed", "HTTP 503", retry_after=5.0)
    assert decide(RetryPolicy(), [("webhook x", quick)], error_count=0).delay_ms == 60_000


def test_it_dead_letters_a_permanent_failure_of_every_target_at_once() -> None:
    d = decide(RetryPolicy(), [("webhook x", PERMANENT), ("email y", PERMANENT)], error_count=0)
    assert d.verdict is Verdict.DEAD
    assert d.error == "webhook x: HTTP 404; email y: HTTP 404"


def test_a_partial_success_does_not_count_an_error_and_names_what_failed() -> None:
    d = decide(RetryPolicy(), [("email a@x.io", SENT), ("webhook h", FAILED)], error_count=2)
    assert d.verdict is Verdict.PARTIAL
    assert d.error_count == 0
    assert d.error == "partial: webhook h: HTTP 500"


def test_a_full_success_clears_the_error_count() -> None:
    d = decide(RetryPolicy(), [("email a@x.io", SENT)], error_count=2)
    assert (d.verdict, d.error_count, d.error) == (Verdict.SUCCESS, 0, None)


def test_it_truncates_a_huge_error_summary() -> None:
    huge = Outcome("failed", "x" * 5000)
    d = decide(RetryPolicy(), [("webhook h", huge)], error_count=0)
    assert d.error is not None
    assert len(d.error) == 1000
