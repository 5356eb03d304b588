"""The committer: records reach the ledger before the resolution or release that follows them,
in batches, off the event loop; a store that fails keeps everything for the last try."""

import asyncio
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from duequeue.engine.commit import Committer, ThreadRunner
from duequeue.errors import StoreError
from duequeue.store.records import (
    Claim,
    Committed,
    DeliveryRecord,
    Resolution,
    RowClaim,
)
from duequeue.store.sqlite import SQLiteBackend
from duequeue.store.store import Store
from tests.store_contract import LEASE, NOW, advanced, reminder


class LoggingStore(Store):
    """A real SQLite store that logs each commit's parts and can fail resolutions."""

    def __init__(self, path: Path) -> None:
        super().__init__(SQLiteBackend(path))
        self.log: list[tuple[list[int], list[int], list[int]]] = []
        self.fail_resolutions = False

    def commit(
        self,
        owner: str,
        now: int,
        records: Sequence[DeliveryRecord],
        resolutions: Sequence[Resolution],
        releases: Sequence[Claim],
    ) -> Committed:
        if self.fail_resolutions and resolutions:
            raise StoreError("disk on fire")
        done = super().commit(owner, now, records, resolutions, releases)
        rows = [c.reminder_id for c in releases if isinstance(c, RowClaim)]
        self.log.append(
            ([r.reminder_id for r in records], [r.reminder_id for r in resolutions], rows)
        )
        return done


@pytest.fixture
def store(db_path: Path) -> LoggingStore:
    return LoggingStore(db_path)


def claimed(store: LoggingStore, n: int) -> list[int]:
    for _ in range(n):
        store.add(reminder(), NOW)
    return [f.reminder_id for f in store.claim(NOW, n, 3, LEASE, "t")]


def sent(rid: int) -> DeliveryRecord:
    return DeliveryRecord(rid, rid, NOW, "sent", None, 1, NOW)


def committer(store: Store, *, max_items: int = 256, window_s: float = 0.005) -> Committer:
    until = time.monotonic() + 30
    return Committer(ThreadRunner(store), "t", NOW, until, max_items=max_items, window_s=window_s)


def ledger(store: Store, rid: int) -> list[str]:
    return [d.outcome for d in store.deliveries(rid)]


def test_a_batch_commits_records_before_the_resolutions_and_releases_queued_after_them(
    store: LoggingStore,
) -> None:
    a, b = claimed(store, 2)

    async def run() -> Committer:
        c = committer(store, window_s=60)
        c.record(sent(a))
        c.resolve(advanced(a, NOW, None))
        c.release(RowClaim(b))
        await c.close()
        return c

    c = asyncio.run(run())
    assert store.log == [([a], [a], [b])]  # one transaction: records, then the rest
    assert (c.tally.applied["sent"], c.tally.released) == (1, 1)
    assert ledger(store, a) == ["sent"]


def test_it_hands_a_batch_over_once_max_items_are_queued(store: LoggingStore) -> None:
    ids = claimed(store, 4)

    async def run() -> list[tuple[list[int], list[int], list[int]]]:
        c = committer(store, max_items=4, window_s=60)
        for rid in ids:
            c.record(sent(rid))  # the fourth fills the batch: no timer needed
        while not store.log:
            await asyncio.sleep(0.001)
        seen = list(store.log)
        await c.close()
        return seen

    assert asyncio.run(run()) == [(ids, [], [])]


def test_it_hands_a_batch_over_a_few_milliseconds_after_the_first_item(
    store: LoggingStore,
) -> None:
    (rid,) = claimed(store, 1)

    async def run() -> list[tuple[list[int], list[int], list[int]]]:
        c = committer(store, window_s=0.001)
        c.record(sent(rid))
        while not store.log:
            await asyncio.sleep(0.001)
        seen = list(store.log)
        await c.close()
        return seen

    assert asyncio.run(run()) == [([rid], [], [])]


def test_a_failing_store_keeps_everything_and_the_last_try_records_first_then_hands_back(
    store: LoggingStore,
) -> None:
    a, _b = claimed(store, 2)
    store.fail_resolutions = True

    async def run() -> Committer:
        c = committer(store, window_s=60)
        c.record(sent(a))
        c.resolve(advanced(a, NOW, None))
        with pytest.raises(StoreError, match="disk on fire"):
            await c.close()
        assert c.failed is not None
        return c

    c = asyncio.run(run())
    assert ledger(store, a) == []  # the batch failed as a whole
    with pytest.raises(StoreError, match="disk on fire"):
        c.finish(store)
    # The records went first, on their own; the claim whose resolution failed was handed back,
    # so the next tick finds the target sent and sends it nothing again.
    assert ledger(store, a) == ["sent"]
    assert [f.reminder_id for f in store.claim(NOW, 10, 3, LEASE, "next")] == [a]


def test_a_store_that_cannot_record_hands_nothing_back(store: LoggingStore) -> None:
    (a,) = claimed(store, 1)
    c = committer(store, window_s=60)

    async def fail() -> None:
        c.record(sent(a))
        c.release(RowClaim(a))
        store.fail_resolutions = True
        c.resolve(advanced(a, NOW, None))
        with pytest.raises(StoreError):
            await c.close()

    asyncio.run(fail())
    # Now the ledger itself refuses writes (a failure inside the database).
    store.backend.conn.execute(
        """CREATE TRIGGER full BEFORE INSERT ON deliveries
           BEGIN SELECT RAISE(ABORT, 'ledger refused'); END"""
    )
    with pytest.raises(StoreError, match="ledger refused"):
        c.finish(store)
    assert ledger(store, a) == []
    assert store.claim(NOW, 10, 3, LEASE, "next") == []  # still leased: no early re-send
