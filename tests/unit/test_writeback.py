"""The write-back rules on their own: a claimed row and its outcomes in, a WriteBack out."""

from duequeue.channels.base import Outcome
from duequeue.engine import writeback
from duequeue.policy import RetryPolicy, Verdict
from duequeue.store.base import Claimed, Target

MIN = 60_000
T0 = 1_800_000_000_000  # a fire on a whole minute
POLICY = RetryPolicy(3, (MIN, 5 * MIN, 30 * MIN))
HOOK, MAIL = Target(1, "webhook", "https://a.example/h"), Target(2, "email", "ann@example.com")


def row(rule: str | None = None, *, error_count: int = 0, grace: int | None = None) -> Claimed:
    return Claimed(
        id=7,
        subject="s",
        body="b",
        data=None,
        rule_kind="rrule" if rule else None,
        rule=rule,
        tz="UTC",
        dtstart=T0,
        misfire_grace_ms=grace,
        fire_at=T0,
        error_count=error_count,
        targets=(HOOK, MAIL),
    )


def test_a_full_failure_backs_off_and_keeps_the_fire() -> None:
    failed = [("w", Outcome("failed", "HTTP 503")), ("m", Outcome("failed", "421"))]
    verdict, wb = writeback.after_attempt(row(), T0, POLICY, failed, T0)
    assert verdict is Verdict.RETRY
    assert (wb.next_fire_at, wb.pending_fire_at, wb.error_count) == (T0 + MIN, T0, 1)


def test_a_partial_success_advances_and_gives_the_failed_target_its_own_retry() -> None:
    outcomes = [("", Outcome("sent")), ("email ann@example.com", Outcome("failed", "421"))]
    verdict, wb = writeback.after_attempt(row("FREQ=DAILY"), T0, POLICY, outcomes, T0)
    assert verdict is Verdict.PARTIAL
    assert wb.next_fire_at == T0 + 1440 * MIN
    assert [(r.target_id, r.next_try_at) for r in wb.retries] == [(MAIL.id, T0 + MIN)]
    assert not wb.dead_letter


def test_a_one_shot_failing_its_last_retry_is_a_dead_letter() -> None:
    failed = [("w", Outcome("failed", "HTTP 503")), ("m", Outcome("failed", "421"))]
    verdict, wb = writeback.after_attempt(row(error_count=2), T0, POLICY, failed, T0 + 5)
    assert verdict is Verdict.DEAD
    assert (wb.state, wb.dead_letter, wb.dead_at, wb.next_fire_at) == ("dead", True, T0 + 5, None)


def test_a_skip_past_the_grace_goes_back_to_the_on_time_occurrence_behind_it() -> None:
    # Three days late on a daily rule with a minute's grace: today's fire is a minute old.
    now = T0 + 3 * 1440 * MIN + MIN
    wb = writeback.skip(row("FREQ=DAILY", grace=2 * MIN), now)
    assert (wb.next_fire_at, wb.state) == (T0 + 3 * 1440 * MIN, "pending")
    assert wb.skipped == 3


def test_a_rule_that_cannot_be_evaluated_parks_the_row_as_dead() -> None:
    broken = row("FREQ=NEVER")
    try:
        writeback.after_attempt(broken, T0, POLICY, [("", Outcome("sent"))] * 2, T0)
    except writeback.BrokenRuleError as exc:
        wb = writeback.parked(broken, str(exc), T0)
    else:
        raise AssertionError("a rule that cannot be parsed must not advance")
    assert (wb.state, wb.dead_letter, wb.next_fire_at) == ("dead", True, None)


def test_a_one_shot_that_reached_every_target_is_written_back_as_after_attempt_would() -> None:
    sent = [("", Outcome("sent")), ("", Outcome("sent"))]
    for error_count in (0, 2):
        claimed = row(error_count=error_count)
        verdict, wb = writeback.after_attempt(claimed, T0 + MIN, POLICY, sent, T0 + MIN)
        assert verdict is Verdict.SUCCESS
        assert writeback.one_shot_sent(claimed) == wb
