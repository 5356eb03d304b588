"""The store contract, written once and run against every store (see test_store_sqlite.py).

A backend's test class inherits StoreContract and provides a `store` fixture.
"""

import threading
from collections.abc import Callable

from duequeue.store.base import DeliveryRecord, NewReminder, NewTarget, Store, WriteBack

NOW = 1_800_000_000_000
MIN = 60_000
LEASE = 5 * MIN


def reminder(
    fire_at: int = NOW,
    *,
    key: str | None = None,
    targets: tuple[NewTarget, ...] = (NewTarget("webhook", "http://127.0.0.1:9/h"),),
    rule: str | None = None,
) -> NewReminder:
    return NewReminder(
        subject="s",
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


def advanced(rid: int, fire_at: int, nxt: int | None) -> WriteBack:
    return WriteBack(
        reminder_id=rid,
        fire_at=fire_at,
        pending_fire_at=nxt,
        next_fire_at=nxt,
        error_count=0,
        last_error=None,
        state="pending" if nxt else "done",
        fired=True,
    )


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
        again = store.add(reminder(NOW + MIN, key="rent"), NOW)
        assert first == (first[0], True)
        assert again == (first[0], False)
        assert len(store.list_view("all", NOW)) == 1

    def test_it_claims_due_rows_oldest_first_up_to_the_limit(self, store: Store) -> None:
        ids = [store.add(reminder(NOW - i * MIN), NOW)[0] for i in range(5)]
        claimed = store.claim_due(NOW, 3, 3, LEASE, "a")
        assert [c.id for c in claimed] == [ids[4], ids[3], ids[2]]

    def test_it_does_not_claim_rows_that_are_not_due(self, store: Store) -> None:
        store.add(reminder(NOW + 1), NOW)
        assert store.claim_due(NOW, 10, 3, LEASE, "a") == []

    def test_two_claimers_never_take_the_same_row(self, store: Store) -> None:
        for i in range(10):
            store.add(reminder(NOW - i), NOW)
        a = store.claim_due(NOW, 6, 3, LEASE, "a")
        b = store.claim_due(NOW, 6, 3, LEASE, "b")
        assert len(a) == 6
        assert len(b) == 4
        assert not {c.id for c in a} & {c.id for c in b}

    def test_a_row_whose_lease_ran_out_is_claimable_again(self, store: Store) -> None:
        rid, _ = store.add(reminder(), NOW)
        assert [c.id for c in store.claim_due(NOW, 10, 3, LEASE, "crashed")] == [rid]
        assert store.claim_due(NOW + LEASE - 1, 10, 3, LEASE, "b") == []
        assert [c.id for c in store.claim_due(NOW + LEASE + 1, 10, 3, LEASE, "b")] == [rid]

    def test_it_does_not_claim_rows_at_the_error_limit(self, store: Store) -> None:
        rid, _ = store.add(reminder(), NOW)
        store.claim_due(NOW, 10, 3, LEASE, "a")
        failing = WriteBack(rid, NOW, NOW, NOW, 3, "boom", "pending")
        assert store.write_back("a", NOW, [failing]) == 1
        assert store.claim_due(NOW + 1, 10, 3, LEASE, "b") == []

    def test_the_ledger_tells_a_later_claim_what_was_already_sent(self, store: Store) -> None:
        two = (NewTarget("email", "a@example.com"), NewTarget("webhook", "http://127.0.0.1/x"))
        rid, _ = store.add(reminder(targets=two), NOW)
        (claim,) = store.claim_due(NOW, 10, 3, LEASE, "a")
        email, hook = claim.targets
        store.record(
            [
                DeliveryRecord(rid, email.id, NOW, "sent", None, 1, NOW + 5),
                DeliveryRecord(rid, hook.id, NOW, "failed", "HTTP 500", 1, NOW + 6),
            ]
        )
        (again,) = store.claim_due(NOW + LEASE + 1, 10, 3, LEASE, "b")
        assert again.sent == frozenset({email.id})
        assert again.permanent == frozenset()
        assert again.attempts == {email.id: 1, hook.id: 1}

    def test_a_batch_claim_gives_each_row_the_ledger_of_its_own_fire(self, store: Store) -> None:
        ids = [store.add(reminder(NOW - i), NOW)[0] for i in range(3)]
        claims = {c.id: c for c in store.claim_due(NOW, 10, 3, LEASE, "a")}
        first, second, third = (claims[i] for i in ids)
        (t1,), (t2,), (t3,) = first.targets, second.targets, third.targets
        store.record(
            [
                DeliveryRecord(first.id, t1.id, first.fire_at, "sent", None, 1, NOW),
                DeliveryRecord(second.id, t2.id, second.fire_at, "failed", "HTTP 500", 1, NOW),
                DeliveryRecord(second.id, t2.id, second.fire_at, "permanent", "HTTP 410", 2, NOW),
                # another fire of the third row: not the one being claimed, so not counted
                DeliveryRecord(third.id, t3.id, third.fire_at - MIN, "sent", None, 1, NOW),
            ]
        )
        again = {c.id: c for c in store.claim_due(NOW + LEASE + 1, 10, 3, LEASE, "b")}
        assert (again[first.id].sent, again[first.id].attempts) == (frozenset({t1.id}), {t1.id: 1})
        assert again[second.id].sent == frozenset()
        assert again[second.id].permanent == frozenset({t2.id})
        assert again[second.id].attempts == {t2.id: 2}
        assert (again[third.id].sent, again[third.id].attempts) == (frozenset(), {})

    def test_a_target_is_recorded_as_sent_at_most_once_per_fire(self, store: Store) -> None:
        rid, _ = store.add(reminder(), NOW)
        (claim,) = store.claim_due(NOW, 10, 3, LEASE, "a")
        tid = claim.targets[0].id
        store.record([DeliveryRecord(rid, tid, NOW, "sent", None, 1, NOW)])
        store.record([DeliveryRecord(rid, tid, NOW, "sent", None, 2, NOW)])
        store.record([DeliveryRecord(rid, tid, NOW + MIN, "sent", None, 1, NOW)])
        assert [(d.fire_at, d.attempt) for d in store.deliveries(rid)] == [(NOW, 1), (NOW + MIN, 1)]

    def test_write_back_needs_the_lease(self, store: Store) -> None:
        rid, _ = store.add(reminder(), NOW)
        store.claim_due(NOW, 10, 3, LEASE, "a")
        assert store.write_back("intruder", NOW, [advanced(rid, NOW, None)]) == 0
        assert store.write_back("a", NOW, [advanced(rid, NOW, None)]) == 1
        assert store.write_back("a", NOW, [advanced(rid, NOW, None)]) == 0  # lease is gone
        view = store.get(rid)
        assert view is not None
        assert (view.state, view.next_fire_at, view.last_fired_at) == ("done", None, NOW)

    def test_a_stolen_lease_loses_the_write_back(self, store: Store) -> None:
        rid, _ = store.add(reminder(), NOW)
        store.claim_due(NOW, 10, 3, LEASE, "slow")
        store.claim_due(NOW + LEASE + 1, 10, 3, LEASE, "fresh")
        assert store.write_back("slow", NOW, [advanced(rid, NOW, None)]) == 0
        assert store.write_back("fresh", NOW, [advanced(rid, NOW, None)]) == 1

    def test_a_dead_one_shot_is_parked_and_listed_as_dead(self, store: Store) -> None:
        rid, _ = store.add(reminder(), NOW)
        store.claim_due(NOW, 10, 3, LEASE, "a")
        dead = WriteBack(rid, NOW, None, None, 3, "HTTP 500", "dead", dead_letter=True)
        store.write_back("a", NOW + 1, [dead])
        (view,) = store.list_view("dead", NOW)
        assert (view.id, view.state, view.dead_fire_at, view.error_count) == (rid, "dead", NOW, 3)
        assert view.next_fire_at is None
        assert store.claim_due(NOW + LEASE * 10, 10, 3, LEASE, "b") == []

    def test_a_dead_fire_of_a_recurring_row_is_listed_while_the_row_goes_on(
        self, store: Store
    ) -> None:
        rid, _ = store.add(reminder(rule="FREQ=DAILY"), NOW)
        store.claim_due(NOW, 10, 3, LEASE, "a")
        day = 24 * 60 * MIN
        dead = WriteBack(rid, NOW, NOW + day, NOW + day, 0, "HTTP 500", "pending", True)
        store.write_back("a", NOW + 1, [dead])
        (view,) = store.list_view("dead", NOW)
        assert (view.dead_fire_at, view.state, view.next_fire_at) == (NOW, "pending", NOW + day)
        assert [v.id for v in store.list_view("pending", NOW)] == [rid]

    def test_released_rows_are_claimable_at_once(self, store: Store) -> None:
        rid, _ = store.add(reminder(), NOW)
        store.claim_due(NOW, 10, 3, LEASE, "a")
        store.release("a", [rid], NOW)
        assert [c.id for c in store.claim_due(NOW, 10, 3, LEASE, "b")] == [rid]

    def test_views_split_due_pending_and_all(self, store: Store) -> None:
        due, _ = store.add(reminder(NOW - MIN), NOW)
        later, _ = store.add(reminder(NOW + MIN), NOW)
        done, _ = store.add(reminder(NOW - 2 * MIN), NOW)
        store.claim_due(NOW, 1, 3, LEASE, "a")
        store.write_back("a", NOW, [advanced(done, NOW - 2 * MIN, None)])
        assert [v.id for v in store.list_view("due", NOW)] == [due]
        assert [v.id for v in store.list_view("pending", NOW)] == [due, later]
        assert [v.id for v in store.list_view("all", NOW)] == [due, later, done]
        assert store.list_view("dead", NOW) == []

    def test_concurrent_adds_of_one_key_land_once(
        self, store: Store, open_another: Callable[[], Store]
    ) -> None:
        results: list[tuple[int, bool]] = []
        errors: list[BaseException] = []

        def add() -> None:
            other = open_another()
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

    def test_concurrent_claimers_on_separate_connections_split_the_rows(
        self, store: Store, open_another: Callable[[], Store]
    ) -> None:
        for i in range(200):
            store.add(reminder(NOW - i), NOW)
        taken: list[list[int]] = []
        lock = threading.Lock()

        def claim(owner: str) -> None:
            other = open_another()
            try:
                mine: list[int] = []
                while batch := other.claim_due(NOW, 7, 3, LEASE, owner):
                    mine.extend(c.id for c in batch)
                with lock:
                    taken.append(mine)
            finally:
                other.close()

        threads = [threading.Thread(target=claim, args=(f"o{i}",)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        every = [rid for mine in taken for rid in mine]
        assert len(every) == 200
        assert len(set(every)) == 200
