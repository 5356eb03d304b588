"""The fault-cycle audit itself: it finds a lost pair, a double send and a receiver repeat."""

from typing import Any

from benchmarks.fault_audit import Received, audit, ms

FIRE = "2027-03-01T09:00:00.000Z"
HOOK = "http://127.0.0.1:1/h"
MAIL = "ann@example.com"


def attempt(address: str, outcome: str, at: str = FIRE, error: str | None = None) -> Any:
    channel = "email" if "@" in address else "webhook"
    target = {"channel": channel, "address": address}
    return {"at": at, "fire_at": FIRE, "target": target, "outcome": outcome, "error": error}


def history(*attempts: Any, dead: bool = False, retrying: str | None = None) -> Any:
    return {
        "reminder": {"id": 1, "state": "done", "error_count": 0, "fire_at": None},
        "attempts": list(attempts),
        "dead_letters": [{"fire_at": FIRE, "retried_at": None}] if dead else [],
        "target_retries": [{"fire_at": FIRE, "target": {"channel": "webhook", "address": retrying}}]
        if retrying
        else [],
    }


def hook(ok: bool) -> Received:
    return Received((1, ms(FIRE), "webhook", HOOK), ok)


def test_it_calls_a_failed_pair_with_no_dead_letter_and_no_retry_lost() -> None:
    h = history(attempt(MAIL, "sent"), attempt(HOOK, "failed"))
    t = audit([h], [hook(False)], [Received((MAIL, "<m>"), True)])
    assert t.lost == [(1, ms(FIRE), "webhook", HOOK)]
    assert t.transient_beside_success == 1
    assert t.problems == [f"LOST {(1, ms(FIRE), 'webhook', HOOK)}"]


def test_it_accounts_a_failed_pair_as_retrying_or_dead() -> None:
    retrying = history(attempt(MAIL, "sent"), attempt(HOOK, "failed"), retrying=HOOK)
    t = audit([retrying], [hook(False)], [])
    assert (t.retrying, t.lost) == (1, [])
    dead = history(attempt(MAIL, "sent"), attempt(HOOK, "failed"), dead=True)
    t = audit([dead], [hook(False)], [])
    assert (t.dead, t.sent, t.lost) == (1, 1, [])  # the webhook dead, the email sent


def test_it_finds_a_pair_sent_twice_and_a_receiver_answered_twice() -> None:
    twice = history(attempt(HOOK, "sent"), attempt(HOOK, "sent", at="2027-03-01T09:01:00.000Z"))
    t = audit([twice], [hook(True), hook(True)], [])
    assert t.sent_twice and t.receiver_repeats


def test_a_repeat_after_a_recorded_timeout_is_not_a_receiver_repeat() -> None:
    h = history(
        attempt(HOOK, "failed", error="timeout after 1s"),
        attempt(HOOK, "sent", at="2027-03-01T09:01:00.000Z"),
    )
    t = audit([h], [hook(True), hook(True)], [])
    assert t.problems == []


def test_it_finds_requests_the_ledger_never_recorded_and_sends_never_received() -> None:
    t = audit([history(attempt(HOOK, "failed"), dead=True)], [hook(False), hook(False)], [])
    assert t.unrecorded
    t = audit([history(attempt(MAIL, "sent"))], [], [])
    assert t.unconfirmed
    t = audit([history(attempt(MAIL, "failed"), dead=True)], [], [Received((MAIL, "<m>"), True)])
    assert t.unrecorded
