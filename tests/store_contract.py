"""The store contract, written once and run against every store (see test_store_contract.py).

A test class inherits StoreContract and OperatorContract and gets `store` (an open Store) and
`open_store` (opens another on the same database) from tests/stores.py, once per store.
"""

import threading
from collections.abc import Callable, Iterator

import pytest

from duequeue.errors import ChangeRefusedError, KeyConflictError, NotFoundError
from duequeue.store.records import (
    SENT_DONE,
    Change,
    Claim,
    Committed,
    DeadFire,
    DeliveryRecord,
    Edit,
    Fire,
    NewReminder,
    NewSchedule,
    NewTarget,
    PruneCounts,
    Resolution,
    RowClaim,
    RowState,
    TargetClaim,
    Waiting,
)
from duequeue.store.rows import ADD_CHUNK
from duequeue.store.sql import Row, Run
from duequeue.store.store import Store

NOW = 1_800_000_000_000
MIN = 60_000
LEASE = 5 * MIN


def reminder(
    fire_at: int = NOW,
    *,
    key: str | None = None,
    targets: tuple[NewTarget, ...] = (NewTarget("webhook", "http://127.0.0.1:9/h"),),
    rule: str | None = None,
    subject: str = "s",
) -> NewReminder:
    return NewReminder(
        subject=subject,
        body="b",
        data='{"k":1}',
        tz="UTC",
        dtstart=fire_at,
        fire_at=fire_at,
        targets=targets,
        rule_kind="rrule" if rule else None,
        rule=rule,
        key=key,
    )


def advanced(rid: int, fire_at: int, nxt: int | None) -> Resolution:
    """The resolution of a row's fire that reached every target: on to `nxt`, or done."""
    state = RowState(nxt, nxt, 0, None, "pending" if nxt else "done", fired=True)
    return Resolution(RowClaim(rid), rid, fire_at, "sent", state)


def dead_row(rid: int, fire_at: int, errors: int, error: str, nxt: int | None = None) -> Resolution:
    """The resolution of a row's fire no target will ever get: a dead letter; a one-shot parks."""
    state = RowState(nxt, nxt, 0 if nxt else errors, error, "pending" if nxt else "dead")
    return Resolution(
        RowClaim(rid), rid, fire_at, "dead", state, dead=DeadFire(errors, error, None)
    )


def claim(store: Store, now: int, owner: str, limit: int = 10) -> list[Fire]:
    return store.claim(now, limit, 3, LEASE, owner)


def ids(fires: list[Fire]) -> list[int]:
    return [f.reminder_id for f in fires]


def record(store: Store, *records: DeliveryRecord) -> None:
    store.commit("recorder", NOW, records, [], [])


def resolve(store: Store, owner: str, now: int, *resolutions: Resolution) -> Committed:
    return store.commit(owner, now, [], resolutions, [])


def applied(store: Store, owner: str, now: int, *resolutions: Resolution) -> int:
    return len(resolve(store, owner, now, *resolutions).applied)


def release(store: Store, owner: str, claims: list[Claim], now: int) -> None:
    store.commit(owner, now, [], [], claims)


def sent(fire: Fire) -> set[int]:
    return {tid for tid, ledger in fire.ledger.items() if ledger.sent}


def refused(fire: Fire) -> set[int]:
    return {tid for tid, ledger in fire.ledger.items() if ledger.refused}


def attempts(fire: Fire) -> dict[int, int]:
    return {tid: ledger.attempts for tid, ledger in fire.ledger.items()}


class StoreContract:
    """Behaviour every Store must have."""

    def test_it_adds_a_reminder_with_its_targets(self, store: Store) -> None:
        two = (NewTarget("email", "a@example.com"), NewTarget("webhook", "http://127.0.0.1/x"))
        rid, created = store.add(reminder(targets=two), NOW)
        view = store.get(rid)
        assert created
        assert view is not None
        assert [(t.channel, t.address) for t in view.targets] == [
            ("email", "a@example.com"),
            ("webhook", "http://127.0.0.1/x"),
        ]
        assert (view.state, view.next_fire_at, view.error_count) == ("pending", NOW, 0)

    def test_it_adds_a_key_once_and_returns_the_existing_id(self, store: Store) -> None:
        first = store.add(reminder(key="rent"), NOW)
        again = store.add(reminder(key="rent"), NOW + MIN)
        assert first == (first[0], True)
        assert again == (first[0], False)
        assert len(store.list_view("all", NOW)) == 1

    def test_it_refuses_a_live_key_with_other_content_and_writes_nothing(
        self, store: Store
    ) -> None:
        rid, _ = store.add(reminder(key="rent"), NOW)
        for other in (
            reminder(NOW + MIN, key="rent"),
            reminder(key="rent", subject="rent v2"),
            reminder(key="rent", targets=(NewTarget("email", "b@example.com"),)),
        ):
            with pytest.raises(KeyConflictError) as caught:
                store.add(other, NOW)
            assert caught.value.existing == rid
        assert "time" in str(caught.value) or "targets" in str(caught.value)
        assert len(store.list_view("all", NOW)) == 1

    def test_a_cancelled_or_done_reminder_frees_its_key(self, store: Store) -> None:
        first, _ = store.add(reminder(key="rent"), NOW)
        store.cancel([first], NOW)
        second, created = store.add(reminder(key="rent", subject="rent v2"), NOW)
        assert created and second != first
        (fire,) = claim(store, NOW, "t")
        records = [
            DeliveryRecord(second, t.id, NOW, "sent", None, 1, NOW + 1) for t in fire.targets
        ]
        store.commit("t", NOW + 1, records, [advanced(second, NOW, None)], [])
        assert store.get(second).state == "done"  # type: ignore[union-attr]
        third, created = store.add(reminder(key="rent"), NOW + 2)
        assert created and third not in (first, second)
        assert store.add(reminder(key="rent"), NOW + 3) == (third, False)

    def test_it_claims_due_rows_oldest_first_up_to_the_limit(self, store: Store) -> None:
        rids = [store.add(reminder(NOW - i * MIN), NOW)[0] for i in range(5)]
        assert ids(claim(store, NOW, "a", limit=3)) == [rids[4], rids[3], rids[2]]

    def test_it_does_not_claim_rows_that_are_not_due(self, store: Store) -> None:
        store.add(reminder(NOW + 1), NOW)
        assert claim(store, NOW, "a") == []

    def test_two_claimers_never_take_the_same_row(self, store: Store) -> None:
        for i in range(10):
            store.add(reminder(NOW - i), NOW)
        a = claim(store, NOW, "a", limit=6)
        b = claim(store, NOW, "b", limit=6)
        assert len(a) == 6
        assert len(b) == 4
        assert not set(ids(a)) & set(ids(b))

    def _partial_with_a_retry(self, store: Store) -> tuple[int, int, int]:
        """Add a one-shot with two targets; commit a partial success whose webhook retries at
        NOW + MIN. Return (reminder id, email target id, webhook target id)."""
        two = (NewTarget("email", "a@example.com"), NewTarget("webhook", "http://127.0.0.1/x"))
        rid, _ = store.add(reminder(targets=two), NOW)
        (fire,) = claim(store, NOW, "a")
        email, hook = fire.targets
        partial = Resolution(
            fire.claim,
            rid,
            NOW,
            "partial",
            RowState(None, None, 0, "partial: HTTP 500", "done", fired=True),
            waiting=(Waiting(hook.id, 1, NOW + MIN, "HTTP 500"),),
        )
        done = store.commit(
            "a",
            NOW,
            [
                DeliveryRecord(rid, email.id, NOW, "sent", None, 1, NOW),
                DeliveryRecord(rid, hook.id, NOW, "failed", "HTTP 500", 1, NOW, NOW + MIN),
            ],
            [partial],
            [],
        )
        assert done.applied == (partial,)
        return rid, email.id, hook.id

    def test_a_target_retry_is_claimed_once_when_due_with_its_one_target(
        self, store: Store
    ) -> None:
        rid, _email, hook = self._partial_with_a_retry(store)
        assert claim(store, NOW + MIN - 1, "b") == []
        (got,) = claim(store, NOW + MIN, "b")
        assert (got.claim, got.reminder_id, got.fire_at, got.error_count) == (
            TargetClaim(hook, NOW),
            rid,
            NOW,
            1,
        )
        assert [t.id for t in got.targets] == [hook]
        assert got.ledger[hook].failures == 1
        assert got.ledger[hook].retry_at == NOW + MIN
        assert claim(store, NOW + MIN, "c") == []  # leased to b
        release(store, "b", [got.claim], NOW + MIN)
        (again,) = claim(store, NOW + MIN, "c")
        assert again.claim == got.claim
        (pending,) = store.pending_retries(rid)
        assert (pending.target_id, pending.next_try_at) == (hook, NOW + MIN)

    def test_a_sent_target_retry_is_gone_and_a_dead_one_is_a_dead_letter(
        self, store: Store
    ) -> None:
        rid, _email, _hook = self._partial_with_a_retry(store)
        (got,) = claim(store, NOW + MIN, "b")
        dead = Resolution(
            got.claim, rid, NOW, "dead", dead=DeadFire(3, "webhook x: HTTP 500", None)
        )
        assert resolve(store, "c", NOW + MIN, dead).refused == (dead,)  # not c's lease
        assert resolve(store, "b", NOW + MIN, dead).applied == (dead,)
        assert store.pending_retries(rid) == []
        (letter,) = store.dead_letters(rid)
        assert (letter.fire_at, letter.error_count, letter.last_error) == (
            NOW,
            3,
            "webhook x: HTTP 500",
        )
        assert store.stats(NOW + MIN).retrying_targets == 0

    def test_a_target_retry_that_waits_again_keeps_its_row_with_its_new_state(
        self, store: Store
    ) -> None:
        rid, _email, hook = self._partial_with_a_retry(store)
        (got,) = claim(store, NOW + MIN, "b")
        again = Resolution(
            got.claim, rid, NOW, "retried", waiting=(Waiting(hook, 2, NOW + 6 * MIN, "HTTP 503"),)
        )
        assert applied(store, "b", NOW + MIN, again) == 1
        (pending,) = store.pending_retries(rid)
        assert (pending.error_count, pending.next_try_at, pending.last_error) == (
            2,
            NOW + 6 * MIN,
            "HTTP 503",
        )
        assert claim(store, NOW + 6 * MIN - 1, "c") == []  # not leased: not due yet
        assert [f.claim for f in claim(store, NOW + 6 * MIN, "c")] == [got.claim]

    def test_a_target_retry_whose_send_was_recorded_is_claimed_as_sent(self, store: Store) -> None:
        rid, _email, hook = self._partial_with_a_retry(store)
        (_got,) = claim(store, NOW + MIN, "b")
        record(store, DeliveryRecord(rid, hook, NOW, "sent", None, 2, NOW + MIN))
        # b crashed before its resolution: the next claim knows the target has the fire.
        (again,) = claim(store, NOW + MIN + LEASE + 1, "c")
        assert sent(again) == {hook}

    def test_a_row_whose_lease_ran_out_is_claimable_again(self, store: Store) -> None:
        rid, _ = store.add(reminder(), NOW)
        assert ids(claim(store, NOW, "crashed")) == [rid]
        assert claim(store, NOW + LEASE - 1, "b") == []
        assert ids(claim(store, NOW + LEASE + 1, "b")) == [rid]

    def test_it_does_not_claim_rows_at_the_error_limit(self, store: Store) -> None:
        rid, _ = store.add(reminder(), NOW)
        claim(store, NOW, "a")
        failing = Resolution(
            RowClaim(rid), rid, NOW, "retried", RowState(NOW, NOW, 3, "boom", "pending")
        )
        assert applied(store, "a", NOW, failing) == 1
        assert claim(store, NOW + 1, "b") == []

    def test_the_ledger_tells_a_later_claim_what_each_target_stands_at(self, store: Store) -> None:
        two = (NewTarget("email", "a@example.com"), NewTarget("webhook", "http://127.0.0.1/x"))
        rid, _ = store.add(reminder(targets=two), NOW)
        (fire,) = claim(store, NOW, "a")
        email, hook = fire.targets
        record(
            store,
            DeliveryRecord(rid, email.id, NOW, "sent", None, 1, NOW + 5),
            DeliveryRecord(rid, hook.id, NOW, "failed", "HTTP 500", 1, NOW + 6, NOW + MIN),
        )
        (again,) = claim(store, NOW + LEASE + 1, "b")
        assert sent(again) == {email.id}
        assert refused(again) == set()
        assert attempts(again) == {email.id: 1, hook.id: 1}
        h = again.ledger[hook.id]
        assert (h.failures, h.retry_at, h.last_error) == (1, NOW + MIN, "HTTP 500")

    def test_a_batch_claim_gives_each_row_the_ledger_of_its_own_fire(self, store: Store) -> None:
        rids = [store.add(reminder(NOW - i), NOW)[0] for i in range(3)]
        fires = {f.reminder_id: f for f in claim(store, NOW, "a")}
        first, second, third = (fires[i] for i in rids)
        (t1,), (t2,), (t3,) = first.targets, second.targets, third.targets
        record(
            store,
            DeliveryRecord(first.reminder_id, t1.id, first.fire_at, "sent", None, 1, NOW),
            DeliveryRecord(second.reminder_id, t2.id, second.fire_at, "failed", "500", 1, NOW),
            DeliveryRecord(second.reminder_id, t2.id, second.fire_at, "permanent", "410", 2, NOW),
            # another fire of the third row: not the one being claimed, so not counted
            DeliveryRecord(third.reminder_id, t3.id, third.fire_at - MIN, "sent", None, 1, NOW),
        )
        again = {f.reminder_id: f for f in claim(store, NOW + LEASE + 1, "b")}
        assert (sent(again[first.reminder_id]), attempts(again[first.reminder_id])) == (
            {t1.id},
            {t1.id: 1},
        )
        assert sent(again[second.reminder_id]) == set()
        assert refused(again[second.reminder_id]) == {t2.id}
        assert again[second.reminder_id].ledger[t2.id].failures == 2
        assert (sent(again[third.reminder_id]), attempts(again[third.reminder_id])) == (set(), {})

    def test_a_target_is_recorded_as_sent_at_most_once_per_fire(self, store: Store) -> None:
        rid, _ = store.add(reminder(), NOW)
        (fire,) = claim(store, NOW, "a")
        tid = fire.targets[0].id
        record(store, DeliveryRecord(rid, tid, NOW, "sent", None, 1, NOW))
        record(store, DeliveryRecord(rid, tid, NOW, "sent", None, 2, NOW))
        record(store, DeliveryRecord(rid, tid, NOW + MIN, "sent", None, 1, NOW))
        assert [(d.fire_at, d.attempt) for d in store.deliveries(rid)] == [(NOW, 1), (NOW + MIN, 1)]

    def test_the_same_attempt_recorded_again_is_kept_once(self, store: Store) -> None:
        # A commit repeated after a lost connection, or taken over from a failed helper.
        rid, _ = store.add(reminder(), NOW)
        (fire,) = claim(store, NOW, "a")
        tid = fire.targets[0].id
        failed = DeliveryRecord(rid, tid, NOW, "failed", "HTTP 500", 1, NOW, NOW + MIN)
        record(store, failed)
        record(store, failed)
        assert [(d.outcome, d.attempt) for d in store.deliveries(rid)] == [("failed", 1)]

    def test_one_batch_of_many_records_lands_each_once(self, store: Store) -> None:
        # One commit's batch of many records: a record twice in it and a second sent land once
        # (a multi-row INSERT tried for SQLite had to deduplicate them first; BENCHMARKS.md).
        rid, _ = store.add(reminder(), NOW)
        (fire,) = claim(store, NOW, "a")
        tid = fire.targets[0].id
        failed = [
            DeliveryRecord(rid, tid, NOW, "failed", "HTTP 500", n, NOW, NOW + MIN)
            for n in range(1, 150)
        ]
        sent = DeliveryRecord(rid, tid, NOW, "sent", None, 150, NOW)
        again = DeliveryRecord(rid, tid, NOW, "sent", None, 151, NOW)
        record(store, *failed, failed[0], failed[70], sent, again, failed[-1])
        assert [(d.outcome, d.attempt) for d in store.deliveries(rid)] == [
            *(("failed", n) for n in range(1, 150)),
            ("sent", 150),
        ]

    def test_resolutions_and_releases_need_the_lease_but_records_always_land(
        self, store: Store
    ) -> None:
        rid, _ = store.add(reminder(), NOW)
        (fire,) = claim(store, NOW, "a")
        tid = fire.targets[0].id
        late = DeliveryRecord(rid, tid, NOW, "sent", None, 1, NOW)
        done = store.commit("intruder", NOW, [late], [advanced(rid, NOW, None)], [fire.claim])
        assert (done.applied, len(done.refused)) == ((), 1)
        assert [d.outcome for d in store.deliveries(rid)] == ["sent"]  # a fact, whoever says it
        assert claim(store, NOW, "b") == []  # still a's
        assert applied(store, "a", NOW, advanced(rid, NOW, None)) == 1
        assert applied(store, "a", NOW, advanced(rid, NOW, None)) == 0  # lease is gone
        view = store.get(rid)
        assert view is not None
        assert (view.state, view.next_fire_at, view.last_fired_at) == ("done", None, NOW)

    def test_a_410_gone_switches_its_target_off_with_the_record_even_when_released(
        self, store: Store
    ) -> None:
        # Issue 30 item 9: the claim is handed back, not resolved; the 410 still holds.
        rid, _ = store.add(reminder(), NOW)
        (fire,) = claim(store, NOW, "a")
        tid = fire.targets[0].id
        gone = DeliveryRecord(rid, tid, NOW, "permanent", "HTTP 410", 1, NOW + 5, gone=True)
        store.commit("a", NOW, [gone], [], [fire.claim])
        view = store.get(rid)
        assert view is not None
        assert [t.disabled_at for t in view.targets] == [NOW + 5]
        (again,) = claim(store, NOW, "b")  # released: claimable at once, its target switched off
        assert [t.disabled_at for t in again.targets] == [NOW + 5]

    def test_a_stolen_lease_loses_the_resolution(self, store: Store) -> None:
        rid, _ = store.add(reminder(), NOW)
        claim(store, NOW, "slow")
        claim(store, NOW + LEASE + 1, "fresh")
        assert applied(store, "slow", NOW, advanced(rid, NOW, None)) == 0
        assert applied(store, "fresh", NOW, advanced(rid, NOW, None)) == 1

    def test_a_sent_one_shot_is_written_back_as_the_general_write_back_writes_it(
        self, store: Store
    ) -> None:
        # SENT_DONE has a statement of its own (resolve_done): the same row, every column.
        rids = [store.add(reminder(key=f"k{i}"), NOW)[0] for i in range(2)]
        assert len(claim(store, NOW, "a")) == 2
        shortcut = Resolution(RowClaim(rids[0]), rids[0], NOW, "sent", SENT_DONE)
        general = advanced(rids[1], NOW, None)
        assert general.row == SENT_DONE and general.row is not SENT_DONE
        assert applied(store, "a", NOW + 7, shortcut, general) == 2
        # ... and the lease is still asked for.
        assert applied(store, "b", NOW + 8, shortcut) == 0

        def written(run: Run) -> list[Row]:
            # Every column either statement may write, and the states they are read by.
            return run(
                """SELECT fire_at, next_fire_at, error_count, last_error, last_fired_at,
                       skipped_fires, done_at, dead_at, after_wall, fire_release, lease_owner,
                       lease_until, updated_at, cancelled_at, paused_at
                   FROM reminders ORDER BY id""",
                {},
            )

        one, two = store._read(written, "read the rows")
        assert one == two
        assert one[6] == NOW + 7 and one[4] == NOW and one[10] is None

    def test_a_dead_one_shot_is_parked_and_listed_as_dead(self, store: Store) -> None:
        rid, _ = store.add(reminder(), NOW)
        claim(store, NOW, "a")
        assert applied(store, "a", NOW + 1, dead_row(rid, NOW, 3, "HTTP 500")) == 1
        (view,) = store.list_view("dead", NOW)
        assert (view.id, view.state, view.dead_fire_at, view.error_count) == (rid, "dead", NOW, 3)
        assert view.next_fire_at is None
        assert claim(store, NOW + LEASE * 10, "b") == []

    def test_a_dead_fire_of_a_recurring_row_is_listed_while_the_row_goes_on(
        self, store: Store
    ) -> None:
        rid, _ = store.add(reminder(rule="FREQ=DAILY"), NOW)
        claim(store, NOW, "a")
        day = 24 * 60 * MIN
        resolve(store, "a", NOW + 1, dead_row(rid, NOW, 3, "HTTP 500", NOW + day))
        (view,) = store.list_view("dead", NOW)
        assert (view.dead_fire_at, view.state, view.next_fire_at) == (NOW, "pending", NOW + day)
        assert [v.id for v in store.list_view("pending", NOW)] == [rid]

    def test_released_claims_are_claimable_at_once(self, store: Store) -> None:
        rid, _ = store.add(reminder(), NOW)
        (fire,) = claim(store, NOW, "a")
        release(store, "b", [fire.claim], NOW)  # not b's to release
        assert claim(store, NOW, "c") == []
        release(store, "a", [fire.claim], NOW)
        assert ids(claim(store, NOW, "b")) == [rid]

    def test_views_split_due_pending_and_all(self, store: Store) -> None:
        due, _ = store.add(reminder(NOW - MIN), NOW)
        later, _ = store.add(reminder(NOW + MIN), NOW)
        done, _ = store.add(reminder(NOW - 2 * MIN), NOW)
        claim(store, NOW, "a", limit=1)
        resolve(store, "a", NOW, advanced(done, NOW - 2 * MIN, None))
        assert [v.id for v in store.list_view("due", NOW)] == [due]
        assert [v.id for v in store.list_view("pending", NOW)] == [due, later]
        assert [v.id for v in store.list_view("all", NOW)] == [due, later, done]
        assert store.list_view("dead", NOW) == []

    def test_concurrent_adds_of_one_key_land_once(
        self, store: Store, open_store: Callable[[], Store]
    ) -> None:
        results: list[tuple[int, bool]] = []
        errors: list[BaseException] = []

        def add() -> None:
            other = open_store()
            try:
                results.append(other.add(reminder(key="same"), NOW))
            except BaseException as exc:  # surfaced below
                errors.append(exc)
            finally:
                other.close()

        threads = [threading.Thread(target=add) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
        assert sorted(created for _, created in results) == [False] * 7 + [True]
        assert len({rid for rid, _ in results}) == 1

    def test_concurrent_adds_of_one_key_with_other_content_land_once_and_refuse_the_rest(
        self, store: Store, open_store: Callable[[], Store]
    ) -> None:
        results: list[tuple[int, bool]] = []
        refused: list[KeyConflictError] = []
        errors: list[BaseException] = []

        def add(n: int) -> None:
            other = open_store()
            try:
                results.append(other.add(reminder(key="same", subject=f"s{n}"), NOW))
            except KeyConflictError as exc:
                refused.append(exc)
            except BaseException as exc:  # surfaced below
                errors.append(exc)
            finally:
                other.close()

        threads = [threading.Thread(target=add, args=(n,)) for n in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
        assert [created for _, created in results] == [True]
        assert {exc.existing for exc in refused} == {results[0][0]} and len(refused) == 7
        assert len(store.list_view("all", NOW)) == 1

    def test_concurrent_claimers_on_separate_connections_split_the_rows(
        self, store: Store, open_store: Callable[[], Store]
    ) -> None:
        for i in range(200):
            store.add(reminder(NOW - i), NOW)
        taken: list[list[int]] = []
        lock = threading.Lock()

        def claimer(owner: str) -> None:
            other = open_store()
            try:
                mine: list[int] = []
                while batch := claim(other, NOW, owner, limit=7):
                    mine.extend(ids(batch))
                with lock:
                    taken.append(mine)
            finally:
                other.close()

        threads = [threading.Thread(target=claimer, args=(f"o{i}",)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        every = [rid for mine in taken for rid in mine]
        assert len(every) == 200
        assert len(set(every)) == 200


DAY = 24 * 60 * MIN


def dead_one_shot(store: Store, fire_at: int = NOW, **kw: object) -> int:
    """Add a one-shot, fail its only attempt for good, and dead-letter it at fire_at + 1."""
    rid, _ = store.add(reminder(fire_at, **kw), fire_at)  # type: ignore[arg-type]
    (fire,) = claim(store, fire_at, "t")
    records = [
        DeliveryRecord(rid, t.id, fire_at, "permanent", "HTTP 410", 1, fire_at + 1)
        for t in fire.targets
    ]
    dead = dead_row(rid, fire_at, 1, "HTTP 410")
    assert len(store.commit("t", fire_at + 1, records, [dead], []).applied) == 1
    return rid


class OperatorContract:
    """The operator's store methods: bulk add, cancel, retry, filters, stats, prune, health."""

    def test_add_many_adds_all_and_skips_existing_keys_once(self, store: Store) -> None:
        store.add(reminder(key="old"), NOW)
        two = (NewTarget("email", "a@example.com"), NewTarget("webhook", "http://127.0.0.1/x"))
        batch = [
            reminder(key="old"),
            reminder(NOW + MIN, key="new", targets=two),
            reminder(NOW + 2 * MIN),
            reminder(NOW + MIN, key="new", targets=two),  # a repeat inside the batch
        ]
        assert store.add_many(batch, NOW) == (2, 2)
        rows = store.list_view("all", NOW)
        assert [(v.key, v.next_fire_at) for v in rows] == [
            ("old", NOW),
            ("new", NOW + MIN),
            (None, NOW + 2 * MIN),
        ]
        assert [(t.channel, t.address) for t in rows[1].targets] == [
            ("email", "a@example.com"),
            ("webhook", "http://127.0.0.1/x"),
        ]
        assert store.add_many(batch, NOW) == (1, 3)  # the keyless one has nothing to match
        assert store.add_many([], NOW) == (0, 0)

    def test_add_many_refuses_a_live_key_with_other_content_after_checking_every_chunk(
        self, store: Store
    ) -> None:
        rid, _ = store.add(reminder(key="old"), NOW)

        def stream() -> Iterator[NewReminder]:
            yield reminder(NOW + MIN, key="old")  # another time: a conflict
            yield reminder(NOW, key="fresh")
            for i in range(ADD_CHUNK):
                yield reminder(NOW + i)
            yield reminder(NOW, key="fresh", targets=(NewTarget("email", "b@example.com"),))
            yield reminder(NOW, key="old")  # the same: not a conflict

        with pytest.raises(KeyConflictError) as conflict:
            store.add_many(stream(), NOW)
        assert conflict.value.existing == rid
        assert [(pos, key, differ) for pos, key, _, differ in conflict.value.conflicts] == [
            (1, "old", "time"),
            (ADD_CHUNK + 3, "fresh", "targets"),
        ]
        assert [v.key for v in store.list_view("all", NOW)] == ["old"]  # nothing written

    def test_add_many_streams_chunks_in_one_transaction_and_keys_match_across_chunks(
        self, store: Store
    ) -> None:
        n = 2 * ADD_CHUNK + 5

        def stream() -> Iterator[NewReminder]:  # a generator: read once, length unknown
            for i in range(n):
                yield reminder(NOW + i, key=f"k{i}")
            yield reminder(NOW, key="k0")  # a duplicate of the first, two chunks later

        assert store.add_many(stream(), NOW) == (n, 1)
        assert store.stats(NOW).pending == n

    def test_add_many_writes_nothing_when_the_stream_fails_after_a_chunk(
        self, store: Store
    ) -> None:
        def stream() -> Iterator[NewReminder]:
            for i in range(ADD_CHUNK + 5):  # the first chunk is inserted before this fails
                yield reminder(NOW + i)
            raise ValueError("line 10006: bad")

        with pytest.raises(ValueError, match="line 10006"):
            store.add_many(stream(), NOW)
        assert store.list_view("all", NOW) == []

    def test_list_view_filters_by_subject_and_target_like_patterns(self, store: Store) -> None:
        hook = (NewTarget("webhook", "http://hooks.example.com/rent"),)
        mail = (NewTarget("email", "Ann@Example.com"),)
        rent, _ = store.add(reminder(subject="Pay RENT", targets=hook), NOW)
        dentist, _ = store.add(reminder(subject="dentist", targets=mail), NOW)
        ids = lambda **kw: [v.id for v in store.list_view("all", NOW, **kw)]  # noqa: E731
        assert ids(subject_like="%rent%") == [rent]
        assert ids(subject_like="dent_st") == [dentist]
        assert ids(subject_like="rent") == []  # a pattern, not a substring
        assert ids(target_like="%ann@example.com") == [dentist]
        assert ids(target_like="%/rent") == [rent]
        assert ids(subject_like="%rent%", target_like="%ann%") == []
        assert [v.id for v in store.list_view("pending", NOW, target_like="%hooks%")] == [rent]

    def test_cancel_parks_a_row_for_good_and_only_all_lists_it(self, store: Store) -> None:
        rid, _ = store.add(reminder(NOW - MIN), NOW)
        keep, _ = store.add(reminder(NOW - MIN), NOW)
        assert store.cancel([rid], NOW) == [Change(rid)]
        assert ids(claim(store, NOW + DAY, "a")) == [keep]
        view = store.get(rid)
        assert view is not None
        assert (view.state, view.next_fire_at) == ("cancelled", None)
        assert [v.id for v in store.list_view("due", NOW)] == [keep]
        assert [v.id for v in store.list_view("pending", NOW)] == [keep]
        assert [v.id for v in store.list_view("all", NOW)] == [rid, keep]
        assert store.cancel([rid], NOW) == [Change(rid, skipped="already cancelled")]

    def test_cancel_skips_a_finished_row(self, store: Store) -> None:
        rid, _ = store.add(reminder(), NOW)
        claim(store, NOW, "a")
        resolve(store, "a", NOW, advanced(rid, NOW, None))
        (change,) = store.cancel([rid], NOW)
        assert change.skipped is not None
        view = store.get(rid)
        assert view is not None
        assert view.state == "done"

    def test_cancel_of_an_unknown_id_writes_nothing(self, store: Store) -> None:
        rid, _ = store.add(reminder(), NOW)
        with pytest.raises(NotFoundError, match="999"):
            store.cancel([rid, 999], NOW)
        view = store.get(rid)
        assert view is not None
        assert view.state == "pending"

    def test_cancel_wins_over_a_tick_holding_the_row(self, store: Store) -> None:
        rid, _ = store.add(reminder(rule="FREQ=DAILY"), NOW)
        claim(store, NOW, "tick")
        assert store.cancel([rid], NOW + 1) == [Change(rid)]
        assert applied(store, "tick", NOW + 2, advanced(rid, NOW, NOW + DAY)) == 0
        view = store.get(rid)
        assert view is not None
        assert (view.state, view.next_fire_at) == ("cancelled", None)
        assert claim(store, NOW + 2 * DAY, "b") == []

    def test_retry_rearms_a_dead_one_shot_due_now_and_forgets_old_refusals(
        self, store: Store
    ) -> None:
        two = (NewTarget("email", "a@example.com"), NewTarget("webhook", "http://127.0.0.1/x"))
        rid, _ = store.add(reminder(targets=two), NOW)
        (fire,) = claim(store, NOW, "t")
        email, hook = fire.targets
        record(
            store,
            DeliveryRecord(rid, email.id, NOW, "sent", None, 1, NOW + 1),
            DeliveryRecord(rid, hook.id, NOW, "permanent", "HTTP 404", 1, NOW + 1),
        )
        resolve(store, "t", NOW + 2, dead_row(rid, NOW, 1, "HTTP 404"))
        later = NOW + DAY
        assert store.retry_dead([rid], later) == [Change(rid, fire_at=NOW)]

        assert store.list_view("dead", later) == []
        view = store.get(rid)
        assert view is not None
        assert (view.state, view.fire_at, view.next_fire_at, view.error_count) == (
            "pending",
            NOW,
            later,
            0,
        )
        (again,) = claim(store, later, "u")
        assert (again.fire_at, again.rearmed) == (NOW, True)
        assert sent(again) == {email.id}  # never sent twice
        assert refused(again) == set()  # the 404 came before the retry
        assert again.ledger[hook.id].failures == 0
        (letter,) = store.dead_letters(rid)
        assert (letter.fire_at, letter.retried_at, letter.last_error) == (NOW, later, "HTTP 404")

    def test_a_retried_fire_that_dies_again_is_listed_again(self, store: Store) -> None:
        rid = dead_one_shot(store)
        store.retry_dead([rid], NOW + MIN)
        claim(store, NOW + MIN, "t")
        assert applied(store, "t", NOW + 2 * MIN, dead_row(rid, NOW, 3, "HTTP 500")) == 1
        (view,) = store.list_view("dead", NOW + 2 * MIN)
        assert (view.id, view.dead_fire_at, view.last_error) == (rid, NOW, "HTTP 500")
        (letter,) = store.dead_letters(rid)
        assert letter.retried_at is None
        later = claim(store, NOW + 3 * MIN, "u")
        assert later == []  # parked again until the next retry

    def test_retry_of_a_recurring_row_rearms_its_oldest_dead_fire_once(self, store: Store) -> None:
        rid, _ = store.add(reminder(rule="FREQ=DAILY"), NOW)
        for day in (0, 1):  # two daily fires die; the row moves on each time
            fire = NOW + day * DAY
            claim(store, fire, "t")
            assert (
                applied(store, "t", fire + 1, dead_row(rid, fire, 3, "HTTP 500", fire + DAY)) == 1
            )
        now = NOW + DAY + 2 * MIN  # the pending fire is tomorrow's
        assert store.retry_dead(None, now) == [Change(rid, fire_at=NOW)]
        (fire,) = claim(store, now, "t")
        assert (fire.fire_at, fire.rearmed) == (NOW, True)
        release(store, "t", [fire.claim], now)
        # The re-armed fire is pending: a second retry must not drop it for the next dead one.
        (busy,) = store.retry_dead([rid], now)
        assert (busy.fire_at, busy.skipped is not None) == (None, True)
        assert [v.dead_fire_at for v in store.list_view("dead", now)] == [NOW + DAY]

    def test_retry_skips_rows_without_a_dead_fire_and_cancelled_ones(self, store: Store) -> None:
        fine, _ = store.add(reminder(NOW + DAY), NOW)
        gone = dead_one_shot(store)
        store.cancel([gone], NOW + MIN)
        changes = store.retry_dead([fine, gone], NOW + MIN)
        assert [(c.reminder_id, c.fire_at) for c in changes] == [(fine, None), (gone, None)]
        assert all(c.skipped for c in changes)
        assert store.retry_dead(None, NOW + MIN) == []  # cancelled rows are not "all dead"
        with pytest.raises(NotFoundError):
            store.retry_dead([fine, 999], NOW)

    def test_retry_skips_a_row_a_tick_holds(self, store: Store) -> None:
        rid = dead_one_shot(store)
        store.retry_dead([rid], NOW + MIN)
        claim(store, NOW + MIN, "t")
        (change,) = store.retry_dead([rid], NOW + MIN)
        assert change.skipped is not None

    def test_pending_channels_are_those_of_rows_that_may_still_fire(self, store: Store) -> None:
        assert store.pending_channels() == set()
        mail = (NewTarget("email", "a@example.com"),)
        cancelled, _ = store.add(reminder(targets=mail), NOW)
        store.cancel([cancelled], NOW)
        done, _ = store.add(reminder(targets=mail), NOW)
        claim(store, NOW, "a")
        resolve(store, "a", NOW, advanced(done, NOW, None))
        assert store.pending_channels() == set()  # neither will ever send an email
        store.add(reminder(NOW + MIN), NOW)
        assert store.pending_channels() == {"webhook"}
        store.add(reminder(NOW + MIN, targets=mail), NOW)
        assert store.pending_channels() == {"email", "webhook"}

    def test_stats_count_states_due_rows_and_recent_deliveries(self, store: Store) -> None:
        due, _ = store.add(reminder(NOW - 5 * MIN), NOW)
        store.add(reminder(NOW - MIN), NOW)
        store.add(reminder(NOW + MIN), NOW)
        gone, _ = store.add(reminder(NOW + MIN), NOW)
        store.cancel([gone], NOW)
        dead = dead_one_shot(store, NOW - 2 * DAY)
        (fire,) = claim(store, NOW, "t", limit=1)
        tid = fire.targets[0].id
        record(
            store,
            DeliveryRecord(due, tid, NOW - 5 * MIN, "failed", "HTTP 500", 1, NOW - 2 * MIN),
            DeliveryRecord(due, tid, NOW - 5 * MIN, "sent", None, 2, NOW - 2 * HOUR),
        )
        s = store.stats(NOW)
        assert (s.pending, s.done, s.dead, s.cancelled) == (3, 0, 1, 1)
        assert (s.due, s.retrying, s.leased, s.dead_letters) == (2, 0, 1, 1)
        assert s.oldest_due_at == NOW - 5 * MIN
        assert (s.sent_last_hour, s.failed_last_hour) == (0, 1)
        assert (s.sent_last_day, s.failed_last_day) == (1, 1)  # the 410 is two days old
        assert store.dead_letters(dead)[0].fire_at == NOW - 2 * DAY

    def test_prune_drops_old_finished_rows_and_ledger_but_nothing_still_deliverable(
        self, store: Store
    ) -> None:
        old = NOW - 40 * DAY
        done, _ = store.add(reminder(old), old)
        claim(store, old, "t")
        (t,) = store.get(done).targets  # type: ignore[union-attr]
        done_fire = DeliveryRecord(done, t.id, old, "sent", None, 1, old)
        store.commit("t", old, [done_fire], [advanced(done, old, None)], [])
        gone, _ = store.add(reminder(NOW + DAY), old)
        store.cancel([gone], old)
        dead = dead_one_shot(store, old)  # undelivered: kept with its ledger
        daily, _ = store.add(reminder(old, rule="FREQ=DAILY"), old)
        (fire,) = claim(store, old, "t")
        daily_fire = DeliveryRecord(daily, fire.targets[0].id, old, "sent", None, 1, old)
        store.commit("t", old, [daily_fire], [advanced(daily, old, NOW + DAY)], [])
        fresh, _ = store.add(reminder(NOW - DAY), NOW - DAY)
        store.cancel([fresh], NOW - DAY)  # cancelled, but not long ago

        before = NOW - 30 * DAY
        expected = PruneCounts(deliveries=2, done=1, cancelled=1, dead_letters=0)
        assert store.prune(before, dry_run=True) == expected
        assert len(store.list_view("all", NOW)) == 5
        assert store.prune(before) == expected
        assert [v.id for v in store.list_view("all", NOW)] == [dead, daily, fresh]
        assert [d.outcome for d in store.deliveries(dead)] == ["permanent"]
        assert store.deliveries(daily) == []  # an old fire of a row that moved on
        assert store.prune(before) == PruneCounts(0, 0, 0, 0)

    def test_prune_keeps_the_ledger_of_a_pending_fire(self, store: Store) -> None:
        old = NOW - 40 * DAY
        two = (NewTarget("email", "a@example.com"), NewTarget("webhook", "http://127.0.0.1/x"))
        rid, _ = store.add(reminder(old, targets=two), old)
        (fire,) = claim(store, old, "t")
        first = DeliveryRecord(rid, fire.targets[0].id, old, "sent", None, 1, old)
        store.commit("t", old, [first], [], [fire.claim])
        assert store.prune(NOW - 30 * DAY).deliveries == 0
        (again,) = claim(store, NOW, "u")
        assert sent(again) == {fire.targets[0].id}

    def test_health_is_all_ok_on_a_fresh_store(self, store: Store) -> None:
        checks = store.health()
        assert checks
        assert all(c.ok and c.fix is None for c in checks), checks


HOUR = 60 * MIN


def seen(store: Store, rid: int) -> tuple[int | None, int | None, int]:
    view = store.get(rid)
    assert view is not None
    return (view.fire_at, view.next_fire_at, view.error_count)


def moved(store: Store, rid: int, fire_at: int, note: str = "rescheduled") -> Edit:
    return Edit(seen(store, rid), note, schedule=NewSchedule("UTC", fire_at, fire_at))


class ChangeContract:
    """reschedule and edit: never while a tick holds the reminder; history records them."""

    def test_a_change_moves_the_fire_and_is_recorded(self, store: Store) -> None:
        rid, _ = store.add(reminder(NOW + MIN), NOW)
        store.change(rid, moved(store, rid, NOW + 2 * MIN), NOW)
        view = store.get(rid)
        assert view is not None
        assert (view.fire_at, view.next_fire_at, view.dtstart) == (NOW + 2 * MIN,) * 3
        store.change(
            rid, Edit(seen(store, rid), "edited: subject", content={"subject": "new"}), NOW + 1
        )
        assert store.get(rid).subject == "new"  # type: ignore[union-attr]
        assert store.changes(rid) == [(NOW, "rescheduled"), (NOW + 1, "edited: subject")]

    def test_a_change_is_refused_while_a_tick_holds_the_row_and_fences_it_after_its_lease(
        self, store: Store
    ) -> None:
        rid, _ = store.add(reminder(NOW), NOW)
        (_fire,) = claim(store, NOW, "tick")  # leased until NOW + 60 s
        with pytest.raises(ChangeRefusedError, match="a tick is delivering reminder"):
            store.change(rid, moved(store, rid, NOW + DAY), NOW + 1)
        assert store.changes(rid) == []
        assert store.get(rid).next_fire_at == NOW  # type: ignore[union-attr]
        # Past its lease the row is free again, and the change fences the late tick off: its
        # write-back needs the lease the change cleared.
        late = NOW + 10 * MIN
        store.change(rid, moved(store, rid, NOW + DAY), late)
        assert applied(store, "tick", late, advanced(rid, NOW, None)) == 0
        view = store.get(rid)
        assert view is not None and (view.state, view.next_fire_at) == ("pending", NOW + DAY)

    def test_a_change_is_refused_when_a_tick_moved_the_fire_since_it_was_read(
        self, store: Store
    ) -> None:
        rid, _ = store.add(reminder(NOW, rule="FREQ=DAILY"), NOW)
        stale = moved(store, rid, NOW + 2 * DAY)
        (_fire,) = claim(store, NOW, "tick")
        assert applied(store, "tick", NOW, advanced(rid, NOW, NOW + DAY)) == 1
        with pytest.raises(ChangeRefusedError, match=r"moved reminder .* on while"):
            store.change(rid, stale, NOW + 1)
        assert store.get(rid).next_fire_at == NOW + DAY  # type: ignore[union-attr]

    def test_a_change_of_a_cancelled_or_done_reminder_is_refused(self, store: Store) -> None:
        gone, _ = store.add(reminder(NOW + MIN), NOW)
        store.cancel([gone], NOW)
        with pytest.raises(ChangeRefusedError, match="is cancelled"):
            store.change(gone, moved(store, gone, NOW + DAY), NOW)
        with pytest.raises(NotFoundError):
            store.change(999, Edit((None, None, 0), "x", content={"subject": "s"}), NOW)

    def _recurring_partial(self, store: Store) -> tuple[int, int, int]:
        """A daily reminder whose webhook failed on its first fire and retries at NOW + MIN
        on its own, while the row moved to its next fire. Return (rid, email id, hook id)."""
        two = (NewTarget("email", "a@example.com"), NewTarget("webhook", "http://127.0.0.1/x"))
        rid, _ = store.add(reminder(rule="FREQ=DAILY", targets=two), NOW)
        (fire,) = claim(store, NOW, "a")
        email, hook = fire.targets
        partial = Resolution(
            fire.claim,
            rid,
            NOW,
            "partial",
            RowState(NOW + DAY, NOW + DAY, 0, "partial: HTTP 500", "pending", fired=True),
            waiting=(Waiting(hook.id, 1, NOW + MIN, "HTTP 500"),),
        )
        records = [
            DeliveryRecord(rid, email.id, NOW, "sent", None, 1, NOW),
            DeliveryRecord(rid, hook.id, NOW, "failed", "HTTP 500", 1, NOW, NOW + MIN),
        ]
        assert store.commit("a", NOW, records, [partial], []).applied == (partial,)
        return rid, email.id, hook.id

    def test_a_change_is_refused_while_a_tick_holds_one_of_its_target_retries(
        self, store: Store
    ) -> None:
        rid, _email, hook = self._recurring_partial(store)
        (retry,) = claim(store, NOW + MIN, "b")
        assert retry.claim == TargetClaim(hook, NOW)
        edit = Edit(
            seen(store, rid), "edited: targets", targets=(NewTarget("email", "a@example.com"),)
        )
        with pytest.raises(ChangeRefusedError, match="a tick is delivering"):
            store.change(rid, edit, NOW + MIN + 1)
        assert [t.id for t in store.get(rid).targets] == [_email, hook]  # type: ignore[union-attr]
        release(store, "b", [retry.claim], NOW + MIN + 2)
        store.change(rid, edit, NOW + MIN + 3)
        assert store.pending_retries(rid) == []
        assert claim(store, NOW + 2 * MIN, "c") == []  # the removed target's retry is gone

    def test_changed_targets_keep_the_ledger_of_kept_ones_and_start_new_ones_fresh(
        self, store: Store
    ) -> None:
        rid, email, hook = self._recurring_partial(store)
        new = NewTarget("webhook", "http://127.0.0.1/new")
        edit = Edit(
            seen(store, rid),
            "edited: targets",
            targets=(NewTarget("email", "a@example.com"), new),
        )
        store.change(rid, edit, NOW + 1)
        view = store.get(rid)
        assert view is not None
        kept, added = view.targets
        assert kept.id == email and added.address == new.address and added.id not in (email, hook)
        assert {d.target_id for d in store.deliveries(rid)} == {email}  # hook's rows went with it
        assert store.pending_retries(rid) == []
        (fire,) = claim(store, NOW + DAY, "d")  # the next fire goes to both, each fresh
        assert [t.id for t in fire.targets] == [email, added.id]
        assert fire.ledger == {}
