"""Group commit: outcomes reach the ledger before the write-back or release that follows them."""

import asyncio
import pickle
from collections.abc import Sequence
from pathlib import Path

import pytest

from duequeue.engine.commithelper import CommitHelper
from duequeue.engine.groupcommit import GroupCommit
from duequeue.store.base import DeliveryRecord, WriteBack
from duequeue.store.sqlite import SQLiteStore
from tests.store_contract import LEASE, NOW, advanced, reminder


class LoggingStore(SQLiteStore):
    """A real SQLite store that logs the order of its writes and can fail a write-back."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.log: list[tuple[str, list[int]]] = []
        self.fail_write_back = False

    def record(self, records: Sequence[DeliveryRecord]) -> None:
        super().record(records)
        self.log.append(("record", [r.reminder_id for r in records]))

    def write_back(self, owner: str, now: int, items: Sequence[WriteBack]) -> int:
        if self.fail_write_back:
            raise RuntimeError("disk on fire")
        applied = super().write_back(owner, now, items)
        self.log.append(("write_back", [w.reminder_id for w in items]))
        return applied

    def release(self, owner: str, ids: Sequence[int], now: int) -> int:
        n = super().release(owner, ids, now)
        self.log.append(("release", list(ids)))
        return n


@pytest.fixture
def store(db_path: Path) -> LoggingStore:
    return LoggingStore(db_path)


def claimed_ids(store: LoggingStore, n: int) -> list[int]:
    for _ in range(n):
        store.add(reminder(), NOW)
    return [c.id for c in store.claim_due(NOW, n, 3, LEASE, "t")]


def sent(rid: int) -> DeliveryRecord:
    return DeliveryRecord(rid, rid, NOW, "sent", None, 1, NOW)


class Counts:
    def __init__(self) -> None:
        self.written: list[int] = []
        self.applied = 0
        self.released: list[int] = []

    def on_written(self, items: Sequence[WriteBack], applied: int) -> None:
        self.written += [w.reminder_id for w in items]
        self.applied += applied

    def on_released(self, ids: Sequence[int]) -> None:
        self.released += list(ids)


def commit(
    store: SQLiteStore,
    counts: Counts,
    *,
    max_items: int,
    window_s: float,
    helper: CommitHelper | None = None,
) -> GroupCommit:
    return GroupCommit(
        store,
        "t",
        NOW,
        on_written=counts.on_written,
        on_released=counts.on_released,
        max_items=max_items,
        window_s=window_s,
        helper=helper,
        helper_max_items=max_items,
        helper_window_s=window_s,
    )


def test_a_flush_commits_outcomes_before_write_backs_and_releases(store: LoggingStore) -> None:
    a, b = claimed_ids(store, 2)
    counts = Counts()

    async def run() -> None:
        gc = commit(store, counts, max_items=100, window_s=60)
        gc.record(sent(a))
        gc.write_back(advanced(a, NOW, None))
        gc.record(sent(b))
        gc.release(b)
        assert store.log == []  # nothing committed yet: under the size and time bounds
        gc.flush()

    asyncio.run(run())
    assert store.log == [("record", [a, b]), ("write_back", [a]), ("release", [b])]
    assert (counts.written, counts.applied, counts.released) == ([a], 1, [b])


def test_it_flushes_when_the_buffer_is_full(store: LoggingStore) -> None:
    ids = claimed_ids(store, 3)
    counts = Counts()

    async def run() -> None:
        gc = commit(store, counts, max_items=4, window_s=60)
        for rid in ids:
            gc.record(sent(rid))
        await asyncio.sleep(0)
        assert store.log == []
        gc.write_back(advanced(ids[0], NOW, None))  # the fourth item: handed to the db thread
        while not counts.written:  # the thread's result comes back to the loop
            await asyncio.sleep(0.01)
        assert store.log == [("record", ids), ("write_back", [ids[0]])]

    asyncio.run(run())


def test_it_flushes_a_few_milliseconds_after_the_first_item(store: LoggingStore) -> None:
    (rid,) = claimed_ids(store, 1)
    counts = Counts()

    async def run() -> None:
        gc = commit(store, counts, max_items=100, window_s=0.01)
        gc.record(sent(rid))
        assert store.log == []
        await asyncio.sleep(0.2)
        assert store.log == [("record", [rid])]

    asyncio.run(run())
    assert [d.outcome for d in store.deliveries(rid)] == ["sent"]


def test_a_failed_write_back_stays_queued_and_its_outcomes_stay_recorded(
    store: LoggingStore,
) -> None:
    (rid,) = claimed_ids(store, 1)
    counts = Counts()
    store.fail_write_back = True

    async def run() -> GroupCommit:
        gc = commit(store, counts, max_items=100, window_s=60)
        gc.record(sent(rid))
        gc.write_back(advanced(rid, NOW, None))
        with pytest.raises(RuntimeError):
            gc.flush()
        return gc

    gc = asyncio.run(run())
    assert [d.outcome for d in store.deliveries(rid)] == ["sent"]
    store.fail_write_back = False
    gc.flush()
    assert store.log == [("record", [rid]), ("write_back", [rid])]  # recorded once only
    assert counts.written == [rid]


def test_a_failed_automatic_flush_is_reported_and_the_final_flush_raises(
    store: LoggingStore,
) -> None:
    a, b = claimed_ids(store, 2)
    store.fail_write_back = True

    async def run() -> GroupCommit:
        gc = commit(store, Counts(), max_items=100, window_s=0.01)
        gc.write_back(advanced(a, NOW, None))
        await asyncio.sleep(0.2)
        assert isinstance(gc.failed, RuntimeError)
        gc.record(sent(b))  # an outcome still arriving is kept, not raised into its sender
        return gc

    gc = asyncio.run(run())
    with pytest.raises(RuntimeError, match="disk on fire"):
        gc.flush()
    assert [d.outcome for d in store.deliveries(b)] == ["sent"]  # outcomes go first


def test_a_claimed_row_crosses_the_helper_pipe_unchanged() -> None:
    from duequeue.engine.commithelper import decode_claimed, encode_claimed
    from duequeue.store.base import NO_ATTEMPTS, Claimed, Target

    plain = Claimed(
        1,
        "s",
        "b",
        None,
        None,
        None,
        "UTC",
        NOW,
        None,
        NOW,
        0,
        (Target(7, "webhook", "https://example.com/h"),),
        attempts=NO_ATTEMPTS,
    )
    tried = Claimed(
        2,
        "s",
        "b",
        '{"k": 1}',
        "rrule",
        "FREQ=DAILY",
        "Europe/Paris",
        NOW,
        60_000,
        NOW,
        2,
        (
            Target(8, "webhook", "https://example.com/h", None, "whsec_a whsec_b"),
            Target(9, "email", "a@example.com", NOW - 1),
        ),
        sent=frozenset({8}),
        permanent=frozenset({9}),
        attempts={8: 1, 9: 2},
        rearmed=True,
        retry_id=4,
    )
    for row in (plain, tried):
        back = decode_claimed(pickle.loads(pickle.dumps(encode_claimed(row))))
        assert back == row and back.targets[0].secret == row.targets[0].secret
    assert decode_claimed(encode_claimed(plain)).attempts is NO_ATTEMPTS
