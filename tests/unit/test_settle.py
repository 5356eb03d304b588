"""Settling a fire on its own: a claimed fire and how each target stands in, a Resolution out."""

from dataclasses import replace

import pytest

from duequeue.channels.base import Outcome
from duequeue.engine import settle
from duequeue.engine.settle import SENT, UNTRIED, Standing
from duequeue.rules.retry_policy import RetryPolicy
from duequeue.store.records import (
    FRESH,
    Fire,
    RowClaim,
    Target,
    TargetClaim,
    TargetLedger,
)

MIN = 60_000
DAY = 1440 * MIN
T0 = 1_800_000_000_000  # a fire on a whole minute
POLICY = RetryPolicy(3, (MIN, 5 * MIN, 30 * MIN))
HOOK, MAIL = Target(1, "webhook", "https://a.example/h"), Target(2, "email", "ann@example.com")


def label(target: Target) -> str:
    return f"{target.channel} {target.address}"


def fire(
    rule: str | None = None, *, grace: int | None = None, targets: tuple[Target, ...] = (HOOK, MAIL)
) -> Fire:
    return Fire(
        claim=RowClaim(7),
        reminder_id=7,
        subject="s",
        body="b",
        data=None,
        rule_kind="rrule" if rule else None,
        rule=rule,
        tz="UTC",
        dtstart=T0,
        misfire_grace_ms=grace,
        fire_at=T0,
        error_count=0,
        targets=targets,
    )


def waiting(failures: int, error: str, at: int) -> Standing:
    return Standing("waiting", failures, error, at)


def dead(failures: int, error: str) -> Standing:
    return Standing("dead", failures, error)


# -- one target -------------------------------------------------------------------------------


def test_a_fresh_target_is_tried_and_a_sent_one_never_again() -> None:
    assert settle.before(HOOK, FRESH, T0, POLICY) is None
    assert settle.before(HOOK, TargetLedger(sent=True, attempts=1), T0, POLICY) is SENT


def test_a_target_waits_out_the_backoff_its_last_failure_recorded_whatever_ended_that_tick() -> (
    None
):
    tried = TargetLedger(failures=1, retry_at=T0 + MIN, last_error="HTTP 503", attempts=1)
    assert settle.before(HOOK, tried, T0 + MIN - 1, POLICY) == waiting(1, "HTTP 503", T0 + MIN)
    assert settle.before(HOOK, tried, T0 + MIN, POLICY) is None


def test_a_target_out_of_retries_or_refused_is_dead_with_its_own_count_and_error() -> None:
    spent = TargetLedger(failures=3, last_error="HTTP 503", attempts=3)
    refused = TargetLedger(failures=1, refused=True, last_error="HTTP 404", attempts=1)
    assert settle.before(HOOK, spent, T0, POLICY) == dead(3, "HTTP 503")
    assert settle.before(HOOK, refused, T0, POLICY) == dead(1, "HTTP 404")


def test_a_disabled_target_is_dead() -> None:
    gone = replace(HOOK, disabled_at=T0)
    assert settle.before(gone, TargetLedger(failures=1, attempts=1), T0, POLICY).end == "dead"  # type: ignore[union-attr]


def test_after_an_attempt_a_target_counts_its_own_failures() -> None:
    before = TargetLedger(failures=1, attempts=1)
    assert settle.after(Outcome("sent"), before, T0, POLICY) is SENT
    assert settle.after(Outcome("failed", "HTTP 503"), before, T0, POLICY) == waiting(
        2, "HTTP 503", T0 + 5 * MIN
    )
    twice = TargetLedger(failures=2, attempts=2)
    assert settle.after(Outcome("failed", "HTTP 503"), twice, T0, POLICY) == dead(3, "HTTP 503")
    gone = settle.after(Outcome("permanent", "HTTP 410", gone=True), FRESH, T0, POLICY)
    assert (gone.end, gone.failures, gone.gone) == ("dead", 1, True)


# -- a fire -----------------------------------------------------------------------------------


def test_no_target_yet_and_some_still_may_the_row_holds_its_fire_until_the_earliest_retry() -> None:
    r = settle.settle(
        fire(),
        [waiting(1, "HTTP 503", T0 + MIN), waiting(1, "421", T0 + 2 * MIN)],
        T0,
        T0,
        label,
    )
    assert r is not None and r.row is not None
    assert r.verdict == "retried"
    assert (r.row.pending_fire_at, r.row.next_fire_at, r.row.error_count) == (T0, T0 + MIN, 1)
    assert (r.waiting, r.dead) == ((), None)


def test_a_partial_success_moves_on_and_leaves_the_failed_target_its_own_retry() -> None:
    r = settle.settle(fire("FREQ=DAILY"), [SENT, waiting(1, "421", T0 + MIN)], T0, T0, label)
    assert r is not None and r.row is not None
    assert r.verdict == "partial"
    assert (r.row.next_fire_at, r.row.fired, r.row.error_count) == (T0 + DAY, True, 0)
    assert r.row.last_error == "partial: email ann@example.com: 421"
    assert [(w.target_id, w.failures, w.next_try_at) for w in r.waiting] == [(MAIL.id, 1, T0 + MIN)]
    assert r.dead is None


def test_a_refused_target_beside_a_sent_one_is_a_dead_letter_naming_its_own_refusal() -> None:
    r = settle.settle(fire(), [SENT, dead(1, "550 no such user")], T0, T0 + 5, label)
    assert r is not None and r.dead is not None
    assert r.verdict == "partial"
    assert (r.dead.error_count, r.dead.dead_at) == (1, T0 + 5)
    assert r.dead.last_error == "email ann@example.com: 550 no such user"


def test_a_one_shot_no_target_will_ever_get_is_parked_as_dead() -> None:
    r = settle.settle(fire(), [dead(3, "HTTP 503"), dead(1, "550")], T0, T0 + 5, label)
    assert r is not None and r.row is not None and r.dead is not None
    assert r.verdict == "dead"
    assert (r.row.state, r.row.next_fire_at, r.row.dead_at, r.row.error_count) == (
        "dead",
        None,
        T0 + 5,
        3,
    )
    assert r.dead.error_count == 3


def test_a_recurring_rows_dead_fire_is_a_dead_letter_and_the_row_goes_on_clean() -> None:
    r = settle.settle(fire("FREQ=DAILY"), [dead(3, "HTTP 503"), dead(3, "421")], T0, T0, label)
    assert r is not None and r.row is not None
    assert (r.verdict, r.row.state, r.row.next_fire_at) == ("dead", "pending", T0 + DAY)
    assert (r.row.error_count, r.row.fired) == (0, False)
    assert r.dead is not None


def test_a_target_not_tried_releases_the_claim() -> None:
    assert settle.settle(fire(), [SENT, UNTRIED], T0, T0, label) is None


def test_a_target_retry_waits_again_or_settles_on_its_own_claim() -> None:
    retry = replace(fire(targets=(MAIL,)), claim=TargetClaim(MAIL.id, T0))
    again = settle.settle(retry, [waiting(2, "421", T0 + 5 * MIN)], T0, T0, label)
    assert again is not None and again.row is None
    assert (again.verdict, [w.next_try_at for w in again.waiting]) == ("retried", [T0 + 5 * MIN])
    done = settle.settle(retry, [SENT], T0, T0, label)
    assert done is not None and (done.verdict, done.waiting, done.dead) == ("sent", (), None)
    died = settle.settle(retry, [dead(3, "421")], T0, T0, label)
    assert died is not None and died.dead is not None
    assert (died.verdict, died.dead.error_count) == ("dead", 3)


def test_a_410_switches_its_target_off() -> None:
    r = settle.settle(fire(), [SENT, Standing("dead", 1, "gone", None, gone=True)], T0, T0, label)
    assert r is not None and r.disable == (MAIL.id,)


def test_a_one_shot_that_reached_every_target_is_resolved_as_settle_would() -> None:
    f = fire()
    assert settle.one_shot_sent(f) == settle.settle(f, [SENT, SENT], T0 + MIN, T0 + MIN, label)


# -- skips and broken rules -------------------------------------------------------------------


def test_a_skip_past_the_grace_goes_back_to_the_on_time_occurrence_behind_it() -> None:
    # Three days late on a daily rule with a minute's grace: today's fire is a minute old.
    now = T0 + 3 * DAY + MIN
    r = settle.skip(fire("FREQ=DAILY", grace=2 * MIN), now)
    assert r.row is not None
    assert (r.row.next_fire_at, r.row.state, r.row.skipped) == (T0 + 3 * DAY, "pending", 3)


def test_a_rule_that_cannot_be_evaluated_parks_the_row_as_dead() -> None:
    broken = fire("FREQ=NEVER")
    with pytest.raises(settle.BrokenRuleError):
        settle.advance(broken, T0)
    r = settle.settle(broken, [SENT, SENT], T0, T0, label)
    assert r is not None and r.row is not None
    assert (r.verdict, r.row.state, r.row.next_fire_at) == ("dead", "dead", None)
    assert r.dead is not None
