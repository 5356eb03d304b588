"""A database that makes the tick wait never turns a delivery into a duplicate.

The tick's store calls run on its own database thread (engine/commit.py): a lock held by
another writer must not stall the event loop, where it would run out the timeouts of sends that
were answered in time; an outcome the ledger cannot take yet is kept and tried again; and a row
whose send is not recorded is never handed back before its lease ends.
"""

import threading
import time
from collections.abc import Iterator, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import apsw
import pytest

from duequeue.engine.tick import TickOptions, tick
from duequeue.errors import StoreBusyError, StoreError
from duequeue.store.records import (
    Claim,
    Committed,
    DeliveryRecord,
    NewReminder,
    NewTarget,
    Resolution,
)
from duequeue.store.sqlite import SQLiteBackend
from duequeue.store.sqlite import connect as open_sqlite
from duequeue.store.store import Store
from tests.procs import LIMIT_S
from tests.servers import HttpSink

HOLD_S = 4.0  # how long the other writer keeps the database locked
B_AFTER_S = 0.5  # receiver B answers this long after the lock is taken ...
TIMEOUT_S = 2.0  # ... well within the channel timeout


def real_now() -> int:
    return time.time_ns() // 1_000_000


class Receivers:
    """Two webhook receivers on one small http.server. /a takes the database's write lock the
    moment it is called, answers 200 at once and holds the lock HOLD_S; /b answers 200 B_AFTER_S
    after the lock was taken."""

    def __init__(self, db: Path, until: threading.Event | None = None) -> None:
        self.locked = threading.Event()
        self.unlocked = threading.Event()
        self.paths: list[str] = []
        receivers = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length", 0)))
                receivers.paths.append(self.path)
                if self.path == "/a":
                    lock = apsw.Connection(str(db))
                    lock.execute("BEGIN IMMEDIATE")
                    receivers.locked.set()
                    self._answer()
                    if until is not None:
                        until.wait(LIMIT_S)
                    else:
                        # The condition under test, not a wait for a race: another writer
                        # holding the lock for longer than the receiver B takes to answer.
                        time.sleep(HOLD_S)
                    lock.execute("ROLLBACK")
                    lock.close()
                    receivers.unlocked.set()
                else:
                    assert receivers.locked.wait(LIMIT_S)
                    time.sleep(B_AFTER_S)
                    self._answer()

            def _answer(self) -> None:
                self.send_response(200)
                self.send_header("content-length", "0")
                self.end_headers()
                self.wfile.flush()

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}{path}"

    def __enter__(self) -> "Receivers":
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def store(db_path: Path) -> Iterator[Store]:
    s = open_sqlite(db_path, busy_timeout_s=10)
    yield s
    s.close()


def add(store: Store, *urls: str, at: int) -> int:
    targets = tuple(NewTarget("webhook", u) for u in urls)
    return store.add(NewReminder("s", "b", None, "UTC", at, at, targets), at)[0]


def ledger(store: Store, rid: int) -> list[tuple[int, str, str | None]]:
    return [(d.target_id, d.outcome, d.error) for d in store.deliveries(rid)]


def test_a_locked_database_does_not_stall_the_deliveries_in_flight(
    db_path: Path, store: Store
) -> None:
    now = real_now()
    with Receivers(db_path) as r:
        rid = add(store, r.url("/a"), r.url("/b"), at=now - 1000)
        # /a's outcome reaches the group commit first, which then waits on the lock /a took;
        # /b answers meanwhile, long before its timeout. Had the event loop waited on that
        # lock, /b's answer would sit unread until its timeout fired: a "timeout" recorded for
        # a receiver that answered, and a second send by a later tick.
        summary = tick(store, now, TickOptions(channel_timeout=TIMEOUT_S), real_now)
        assert r.unlocked.is_set()  # the commit did have to wait
    assert summary.deliveries_sent == 2, summary.line()
    assert summary.deliveries_failed == 0
    assert sorted(o for _, o, _ in ledger(store, rid)) == ["sent", "sent"]
    assert [v.state for v in store.list_view("all", now)] == ["done"]


def test_an_outcome_the_locked_database_could_not_take_is_kept_and_committed_later(
    db_path: Path,
) -> None:
    # A busy timeout far shorter than the lock: the first commits fail, and are tried again.
    store = open_sqlite(db_path, busy_timeout_s=0.1)
    try:
        now = real_now()
        with Receivers(db_path) as r:
            rid = add(store, r.url("/a"), at=now - 1000)
            summary = tick(store, now, TickOptions(busy_timeout_s=0.1), real_now)
        assert summary.sent == 1, summary.line()
        assert [o for _, o, _ in ledger(store, rid)] == ["sent"]
        assert [v.state for v in store.list_view("all", now)] == ["done"]
        again = tick(store, now + 60_000, TickOptions(), real_now)
        assert (again.claimed, r.paths) == (0, ["/a"])  # sent once
    finally:
        store.close()


class LedgerLocked(Store):
    """A real SQLite store whose commits with ledger rows fail as a locked database's do, while
    its other writes (a release, say) go through: the moment another writer lets go of the
    lock."""

    locked = True

    def commit(
        self,
        owner: str,
        now: int,
        records: Sequence[DeliveryRecord],
        resolutions: Sequence[Resolution],
        releases: Sequence[Claim],
    ) -> Committed:
        if self.locked and records:
            raise StoreBusyError(f"database {self.backend.where} is locked")
        return super().commit(owner, now, records, resolutions, releases)


def test_a_row_whose_send_was_not_recorded_stays_leased_until_its_lease_ends(
    db_path: Path, http: HttpSink
) -> None:
    store = LedgerLocked(SQLiteBackend(db_path))
    lease = 30_000  # shorter than busy timeout + the safety margin: no time to try again
    options = TickOptions(lease_ms=lease, busy_timeout_s=25.0)
    try:
        now = real_now()
        rid = add(store, http.url("/r"), at=now - 1000)
        with pytest.raises(StoreError, match="is locked") as lost:
            tick(store, now, options, real_now)
        assert lost.value.summary.unrecorded == 1  # counted, for the front end's one line
        assert ledger(store, rid) == []  # the send could not be recorded ...
        store.locked = False
        # ... so the row was not handed back: a tick before the lease ends sends nothing again.
        assert tick(store, now + 1000, options, real_now).claimed == 0
        assert len(http.requests) == 1
        # After the lease the row is due again: the one window the ledger cannot close, left to
        # the receiver's deduplication by webhook-id (docs/guarantees.md).
        assert tick(store, now + lease + 1, options, real_now).sent == 1
        assert len({r.headers["webhook-id"] for r in http.requests}) == 1
    finally:
        store.close()


def test_a_draining_tick_claims_on_through_a_lock_held_elsewhere(
    db_path: Path, store: Store, http: HttpSink
) -> None:
    now = real_now()
    rows = 200
    ids = [add(store, http.url(f"/{i}"), at=now - 1000) for i in range(rows)]
    held = threading.Event()

    def hold_the_lock() -> None:
        # From the first delivery on, another writer holds the database for a second: the
        # tick's next claims find it locked (its claim connection does not wait; the database
        # thread does, up to the busy timeout), and so do its commits.
        http.wait_for_requests(1, timeout=LIMIT_S)
        lock = apsw.Connection(str(db_path))
        lock.setbusytimeout(5000)  # as any other duequeue command waits for the tick's writes
        lock.execute("BEGIN IMMEDIATE")
        held.set()
        time.sleep(1.0)
        lock.execute("ROLLBACK")
        lock.close()

    holder = threading.Thread(target=hold_the_lock)
    holder.start()
    try:
        summary = tick(store, now, TickOptions(limit=20), real_now)
    finally:
        holder.join()
    assert held.is_set()
    assert (summary.claimed, summary.batches, summary.sent) == (rows, rows // 20, rows)
    assert all([o for _, o, _ in ledger(store, rid)] == ["sent"] for rid in ids)
    assert len({r.headers["webhook-id"] for r in http.requests}) == len(http.requests) == rows
