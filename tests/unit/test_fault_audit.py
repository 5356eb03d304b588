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


def history(
    *attempts: Any, dead: bool = False, retrying: str | None = None, dead_count: int | None = None
) -> Any:
    """A `history --json` of reminder 1: attempts numbered per target as the ledger numbers
    them; a dead letter counting its unsent targets' failures unless `dead_count` says."""
    tries: dict[str, int] = {}
    failures: dict[str, int] = {}
    for a in attempts:
        address = a["target"]["address"]
        tries[address] = a.setdefault("attempt", tries.get(address, 0) + 1)
        failures[address] = failures.get(address, 0) + (a["outcome"] != "sent")
    sent = {a["target"]["address"] for a in attempts if a["outcome"] == "sent"}
    count = max([n for address, n in failures.items() if address not in sent], default=0)
    letter = {
        "fire_at": FIRE,
        "retried_at": None,
        "error_count": count if dead_count is None else dead_count,
        "last_error": "the refusal",
    }
    return {
        "reminder": {"id": 1, "state": "done", "error_count": 0, "fire_at": None},
        "attempts": list(attempts),
        "dead_letters": [letter] if dead else [],
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


def test_it_finds_issue_22s_retry_defects() -> None:
    over = history(*(attempt(HOOK, "failed") for _ in range(4)), dead=True)
    assert len(audit([over], [], []).over_tried) == 1
    twice = history(attempt(HOOK, "failed"), {**attempt(HOOK, "failed"), "attempt": 1}, dead=True)
    assert len(audit([twice], [], []).renumbered) == 1
    refused = (attempt(HOOK, "failed"), attempt(HOOK, "permanent"))
    fire_count = history(*refused, dead=True, dead_count=3)
    assert len(audit([fire_count], [], []).miscounted) == 1
    own = history(*refused, dead=True)
    t = audit([own], [], [])
    assert (t.over_tried, t.renumbered, t.miscounted) == ([], [], [])
