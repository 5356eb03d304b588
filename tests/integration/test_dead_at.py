"""A dead letter's `dead_at` is when the attempt that killed the fire ended, never earlier.

The tick claims at `now`, but its deliveries end later (by the clock the ledger's `at` uses): a
dead letter stamped with the claim's `now` would seem to die before its last attempt.
"""

from collections.abc import Callable

from duequeue.engine.tick import TickOptions, tick
from duequeue.rules.retry_policy import RetryPolicy
from duequeue.store.records import NewTarget
from duequeue.store.store import Store
from tests.servers import HttpSink, Reply
from tests.store_contract import NOW, reminder

ATTEMPT_ENDS = NOW + 7_000  # the receiver took 7 s: the clock has moved on since the claim


def _tick(store: Store, max_retries: int = 3) -> None:
    options = TickOptions(policy=RetryPolicy(max_retries, (60_000,)), channel_timeout=5.0)
    tick(store, NOW, options, lambda: ATTEMPT_ENDS)


def test_a_one_shot_refused_for_good_dies_when_its_attempt_ended(
    open_store: Callable[[], Store], http: HttpSink
) -> None:
    http.respond("/gone", Reply(410))
    store = open_store()
    try:
        rid, _ = store.add(reminder(targets=(NewTarget("webhook", http.url("/gone")),)), NOW)
        _tick(store)
        (attempt,) = store.deliveries(rid)
        (letter,) = store.dead_letters(rid)
        view = store.get(rid)
    finally:
        store.close()
    assert attempt.outcome == "permanent"
    assert attempt.at == ATTEMPT_ENDS
    assert letter.dead_at == ATTEMPT_ENDS
    assert view is not None and view.state == "dead" and view.dead_at == ATTEMPT_ENDS


def test_a_recurring_fire_that_runs_out_of_retries_dies_after_its_last_attempt(
    open_store: Callable[[], Store], http: HttpSink
) -> None:
    http.respond("/down", Reply(503))
    store = open_store()
    try:
        target = NewTarget("webhook", http.url("/down"))
        rid, _ = store.add(reminder(targets=(target,), rule="FREQ=DAILY"), NOW)
        _tick(store, max_retries=1)  # the first failure is the last one allowed
        (attempt,) = store.deliveries(rid)
        (letter,) = store.dead_letters(rid)
    finally:
        store.close()
    assert attempt.outcome == "failed"
    assert letter.fire_at == NOW
    assert letter.dead_at >= attempt.at == ATTEMPT_ENDS
