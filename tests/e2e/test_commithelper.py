"""The commit helper: a large tick's outcomes committed from a second process, in order, with the
tick taking over whatever the helper did not commit, and nothing lost when either one dies.

The helper writes through its own connection, so these tests watch the database itself: SQLite
triggers refuse a write-back whose outcome is not committed yet, or fail write-backs on cue, and
the tick's own connection shows which writes it made.
"""

import asyncio
import collections
import json
import os
import secrets
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path

import apsw
import pytest

from duequeue.engine.commithelper import CommitHelper, HelperGone
from duequeue.engine.groupcommit import GroupCommit
from duequeue.engine.tick import HelperOptions, TickOptions, TickSummary, tick
from duequeue.errors import StoreError
from duequeue.store.base import Claimed, DeliveryRecord, NewTarget
from duequeue.store.sqlite import SQLiteStore
from tests.procs import LIMIT_S, cli_args, cli_env, reap, run_cli, spawn_cli
from tests.servers import HttpSink, Reply
from tests.store_contract import NOW, advanced, reminder
from tests.unit.test_groupcommit import Counts, commit

ROWS = 300

# Refuses (and so fails the tick's test) a write-back that finishes a one-shot before the ledger
# holds its `sent` outcome: the order the core rule needs, checked inside the database whichever
# process writes.
OUTCOMES_FIRST = """
CREATE TRIGGER outcomes_first BEFORE UPDATE OF done_at ON reminders
WHEN NEW.done_at IS NOT NULL AND OLD.done_at IS NULL AND NOT EXISTS (
    SELECT 1 FROM deliveries d
    WHERE d.reminder_id = OLD.id AND d.fire_at = OLD.fire_at AND d.outcome = 'sent')
BEGIN SELECT RAISE(ABORT, 'write-back before its outcome'); END;
"""

# Fails every write-back that would finish more than `limit` one-shots in all (a release, which
# leaves done_at alone, still goes through); a failed transaction rolls its count back.
FAIL_AFTER = """
CREATE TABLE finished (n INTEGER NOT NULL);
INSERT INTO finished VALUES (0);
CREATE TRIGGER fail_after BEFORE UPDATE OF done_at ON reminders
WHEN NEW.done_at IS NOT NULL AND OLD.done_at IS NULL
BEGIN
    UPDATE finished SET n = n + 1;
    SELECT RAISE(ABORT, 'disk on fire') WHERE (SELECT n FROM finished) > {limit};
END;
"""


@pytest.fixture(autouse=True)
def no_leftover_processes() -> Iterator[None]:
    yield
    reap()


def execute(db: Path, sql: str) -> None:
    conn = apsw.Connection(str(db))
    try:
        conn.execute(sql)
    finally:
        conn.close()


def fill(store: SQLiteStore, url: str, n: int = ROWS) -> list[int]:
    return [store.add(reminder(targets=(NewTarget("webhook", url),)), NOW)[0] for _ in range(n)]


def options(db: Path, min_rows: int = 1) -> TickOptions:
    # Few connections: the stdlib test server's listen backlog is small (see test_tick_batch).
    return TickOptions(
        limit=10_000,
        webhook_concurrency=8,
        channel_timeout=10.0,
        commit_helper=HelperOptions(str(db), 5.0, min_rows),
    )


def sent_per_row(db: Path) -> collections.Counter[int]:
    conn = apsw.Connection(str(db))
    try:
        rows = conn.execute("SELECT reminder_id FROM deliveries WHERE outcome = 'sent'")
        return collections.Counter(rid for (rid,) in rows)
    finally:
        conn.close()


def webhook_ids(http: HttpSink) -> collections.Counter[str]:
    return collections.Counter(r.headers["webhook-id"] for r in http.requests)


# Every helper this module's ticks start inherits this variable (in-process ticks through
# os.environ, subprocess ticks through cli_env), so helpers_running() counts only those: other
# programs on the machine, another test run's helpers among them, are not ours to count.
MARK = "DQ_TEST_HELPER_MARK"


@pytest.fixture(autouse=True)
def mark_our_helpers(monkeypatch: pytest.MonkeyPatch) -> str:
    token = secrets.token_hex(8)
    monkeypatch.setenv(MARK, token)
    return token


def helpers_running() -> list[int]:
    """Return the pids of live commit helpers started by this test."""
    mark = f"{MARK}={os.environ[MARK]}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read()
            if b"duequeue.engine.commithelper" not in cmdline:
                continue
            with open(f"/proc/{entry}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
            with open(f"/proc/{entry}/environ", "rb") as f:
                environ = f.read().split(b"\0")
        except OSError:
            continue
        if mark in environ and state != "Z":
            found.append(int(entry))
    return found


def test_a_large_tick_commits_through_the_helper_each_target_once_outcomes_first(
    db_path: Path, http: HttpSink
) -> None:
    store = SQLiteStore(db_path)
    ids = fill(store, http.url("/r"))
    execute(db_path, OUTCOMES_FIRST)
    before = store._conn.total_changes()

    summary = tick(store, NOW, options(db_path), lambda: NOW)

    assert (summary.claimed, summary.sent, summary.errors) == (ROWS, ROWS, [])
    assert set(webhook_ids(http).values()) == {1} and len(webhook_ids(http)) == ROWS
    assert sent_per_row(db_path) == collections.Counter(ids)
    assert {v.state for v in store.list_view("all", NOW)} == {"done"}
    # The tick's own connection made the claim and nothing else: the helper wrote the outcomes
    # and the write-backs (the trigger saw each write-back come after its outcome).
    assert store._conn.total_changes() - before == ROWS
    assert helpers_running() == []
    tick(store, NOW + 3_600_000, options(db_path), lambda: NOW)
    assert len(http.requests) == ROWS  # and a later tick sends nothing again


def test_a_tick_below_the_threshold_commits_itself(db_path: Path, http: HttpSink) -> None:
    store = SQLiteStore(db_path)
    fill(store, http.url("/r"), 5)
    before = store._conn.total_changes()

    summary = tick(store, NOW, options(db_path, min_rows=6), lambda: NOW)

    assert summary.sent == 5
    assert store._conn.total_changes() - before == 3 * 5  # claim, outcomes, write-backs


def test_a_helper_that_cannot_start_leaves_the_tick_to_commit_itself(
    db_path: Path, http: HttpSink, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = SQLiteStore(db_path)
    fill(store, http.url("/r"), 5)
    monkeypatch.setattr(sys, "executable", str(db_path.parent / "no-such-python"))
    before = store._conn.total_changes()

    summary = tick(store, NOW, options(db_path), lambda: NOW)

    assert (summary.sent, summary.errors) == (5, [])
    assert store._conn.total_changes() - before == 3 * 5


def test_on_one_core_the_tick_commits_itself(
    db_path: Path, http: HttpSink, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = SQLiteStore(db_path)
    fill(store, http.url("/r"), 5)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0})
    before = store._conn.total_changes()

    summary = tick(store, NOW, options(db_path), lambda: NOW)

    assert (summary.sent, summary.errors) == (5, [])
    assert store._conn.total_changes() - before == 3 * 5


def test_a_failing_helper_hands_back_and_nothing_sent_is_forgotten(
    db_path: Path, http: HttpSink
) -> None:
    store = SQLiteStore(db_path)
    ids = fill(store, http.url("/r"))
    execute(db_path, FAIL_AFTER.format(limit=100))

    with pytest.raises(StoreError, match="disk on fire"):
        tick(store, NOW, options(db_path), lambda: NOW)

    # Whatever reached the receiver before the failure is in the ledger: nothing to re-send.
    delivered = collections.Counter(int(i.split("_")[1]) for i in webhook_ids(http))
    # How many sends finish before the failure stops new ones depends on the machine's speed
    # (on a busy one, all of them can): the test holds the tick to what it promises whatever
    # that number is: everything delivered is recorded once, and nothing is sent twice.
    assert 100 < len(delivered) <= ROWS
    assert set(sent_per_row(db_path)) == set(delivered)
    assert set(sent_per_row(db_path).values()) == {1}
    assert helpers_running() == []
    # The unfinished rows were handed back at once: the next tick sends each remaining target
    # once and none of the delivered ones again.
    execute(db_path, "DROP TRIGGER fail_after")
    summary = tick(store, NOW + 1, options(db_path), lambda: NOW + 1)
    assert summary.errors == []
    assert set(webhook_ids(http).values()) == {1} and len(webhook_ids(http)) == ROWS
    assert sent_per_row(db_path) == collections.Counter(ids)
    assert {v.state for v in store.list_view("all", NOW)} == {"done"}


def test_a_helper_killed_mid_tick_is_taken_over_by_the_tick(
    db_path: Path, http: HttpSink, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = SQLiteStore(db_path)
    ids = fill(store, http.url("/r"))
    execute(db_path, OUTCOMES_FIRST)
    started: list[CommitHelper] = []
    start = CommitHelper.start

    def watched(db: str, busy_timeout_s: float) -> CommitHelper | None:
        helper = start(db, busy_timeout_s)
        assert helper is not None
        started.append(helper)
        return helper

    monkeypatch.setattr(CommitHelper, "start", watched)

    def kill_it() -> None:
        http.wait_for_requests(ROWS // 3, timeout=LIMIT_S)
        os.kill(started[0].pid, signal.SIGKILL)

    killer = threading.Thread(target=kill_it)
    killer.start()
    summary = tick(store, NOW, options(db_path), lambda: NOW)
    killer.join()

    assert (summary.sent, summary.errors) == (ROWS, [])
    assert started[0]._proc.returncode == -signal.SIGKILL
    assert set(webhook_ids(http).values()) == {1} and len(webhook_ids(http)) == ROWS
    assert sent_per_row(db_path) == collections.Counter(ids)
    assert {v.state for v in store.list_view("all", NOW)} == {"done"}


# -- group commit with a helper ----------------------------------------------------------------


def helped(store: SQLiteStore, db: Path, counts: Counts) -> GroupCommit:
    """Return a group commit through a new helper on `db`, flushing every two items."""
    return commit(store, counts, max_items=2, window_s=60, helper=CommitHelper.start(str(db), 5.0))


def test_the_helper_commits_batches_in_order_and_confirms_them(db_path: Path) -> None:
    store = SQLiteStore(db_path)
    a, b = fill(store, "http://127.0.0.1:9/h", 2)
    store.claim_due(NOW, 10, 3, 60_000, "t")
    execute(db_path, OUTCOMES_FIRST)
    counts = Counts()

    async def run() -> None:
        gc = helped(store, db_path, counts)
        gc.record(DeliveryRecord(a, a, NOW, "sent", None, 1, NOW))
        gc.write_back(advanced(a, NOW, None))  # a full buffer: handed to the helper
        gc.record(DeliveryRecord(b, b, NOW, "failed", "HTTP 503", 1, NOW))
        gc.release(b)
        assert gc.failed is None
        gc.flush()  # waits for the helper's confirmations, then stops it

    asyncio.run(run())
    assert (counts.written, counts.applied, counts.released) == ([a], 1, [b])
    assert [d.outcome for d in store.deliveries(a)] == ["sent"]
    assert [d.outcome for d in store.deliveries(b)] == ["failed"]
    assert [v.state for v in store.list_view("all", NOW)] == ["done", "pending"]
    assert helpers_running() == []


def test_a_batch_the_helper_could_only_record_is_finished_by_the_tick_without_recording_twice(
    db_path: Path,
) -> None:
    store = SQLiteStore(db_path)
    (rid,) = fill(store, "http://127.0.0.1:9/h", 1)
    store.claim_due(NOW, 10, 3, 60_000, "t")
    execute(db_path, FAIL_AFTER.format(limit=0))
    counts = Counts()

    async def run() -> GroupCommit:
        gc = helped(store, db_path, counts)
        # A `failed` outcome: recording it twice would show as a second ledger row.
        gc.record(DeliveryRecord(rid, rid, NOW, "failed", "HTTP 503", 1, NOW))
        gc.write_back(advanced(rid, NOW, None))
        # The helper fails the write-back; the tick takes it back and its own retry fails too.
        for _ in range(1000):
            if gc.failed is not None:
                break
            await asyncio.sleep(0.01)
        return gc

    gc = asyncio.run(run())
    assert isinstance(gc.failed, StoreError) and "disk on fire" in str(gc.failed)
    assert counts.written == []
    execute(db_path, "DROP TRIGGER fail_after")
    gc.flush()
    assert (counts.written, counts.applied) == ([rid], 1)
    assert [d.outcome for d in store.deliveries(rid)] == ["failed"]  # recorded once
    assert [v.state for v in store.list_view("all", NOW)] == ["done"]
    assert helpers_running() == []


# -- full pipes: the tick never waits on the helper ------------------------------------------

# A failed outcome with a long error: 2,000 of them are 2 MB of batches, far more than the pipe
# (64 KiB on Linux) and the helper's read buffer hold while it does not read.
BULKY = "HTTP 503: " + "x" * 1000


def locked(db: Path) -> apsw.Connection:
    """Return a connection holding the database's write lock: every commit elsewhere waits."""
    conn = apsw.Connection(str(db))
    conn.set_busy_timeout(int(LIMIT_S * 1000))  # the helper may be mid-commit: wait for it
    conn.execute("BEGIN IMMEDIATE")
    return conn


def test_a_helper_stalled_on_a_slow_database_never_blocks_the_tick_handing_it_batches(
    db_path: Path,
) -> None:
    store = SQLiteStore(db_path)
    (rid,) = fill(store, "http://127.0.0.1:9/h", 1)
    n = 2000
    handed, unlocked, drained = threading.Event(), threading.Event(), threading.Event()
    counts = Counts()
    failures: list[BaseException] = []

    async def run() -> None:
        # The helper waits for the lock as long as the test may run: it stalls, it does not fail.
        gc = commit(
            store, counts, max_items=100, window_s=60, helper=CommitHelper.start(str(db_path), 60)
        )
        assert gc._helper is not None
        # All in one synchronous stretch, as a tick starting tens of thousands of rows does: the
        # loop cannot read a reply or drain a pipe until the stretch is over.
        for attempt in range(1, n + 1):
            gc.record(DeliveryRecord(rid, rid, NOW, "failed", BULKY, attempt, NOW))
        assert gc._helper.unsent > 0  # the pipe is full: the rest waits in the tick's buffer
        handed.set()
        await asyncio.get_running_loop().run_in_executor(None, unlocked.wait)
        # The event loop alone drains the buffer and takes the confirmations: no flush needed.
        while gc._handed or gc._helper.unsent:
            await asyncio.sleep(0.01)
        drained.set()
        gc.flush()

    def tick_side() -> None:
        try:
            asyncio.run(run())
        except BaseException as exc:
            failures.append(exc)

    blocker = locked(db_path)
    thread = threading.Thread(target=tick_side, daemon=True)
    thread.start()
    try:
        # Before the fix the tick blocked in a write here, for as long as the helper stalled.
        assert handed.wait(LIMIT_S), "the tick blocked writing to a helper that was not reading"
        assert store.deliveries(rid) == []  # the helper has committed nothing: it is stalled
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
        unlocked.set()
    thread.join(LIMIT_S)
    assert not thread.is_alive(), "the tick never got its confirmations"
    assert failures == [] and drained.is_set()
    assert sorted(d.attempt for d in store.deliveries(rid)) == list(range(1, n + 1))
    assert helpers_running() == []


# -- the CLI ----------------------------------------------------------------------------------

HELPER_FROM_100 = {"DUEQUEUE_COMMIT_HELPER_ROWS": "100"}


def import_due(db: Path, url: str, n: int) -> None:
    lines = "".join(
        json.dumps({"at": "2020-01-01T00:00:00Z", "subject": f"r{i}", "webhooks": [url]}) + "\n"
        for i in range(n)
    )
    r = subprocess.run(
        cli_args("import", "-"),
        input=lines,
        env=cli_env(db),
        capture_output=True,
        text=True,
        timeout=LIMIT_S,
    )
    assert r.returncode == 0, r.stderr


def test_a_killed_tick_leaves_its_helper_to_commit_what_it_got_and_exit(
    db_path: Path, http: HttpSink
) -> None:
    # 600 rows, a helper from 100; 300 answered, the rest held unanswered: the kill lands while
    # the tick is alive and the helper has committed what it was given.
    n = 600
    http.respond("/r", *[Reply(200)] * 300, Reply(hang=True))
    import_due(db_path, http.url("/r"), n)
    proc = spawn_cli(db_path, "tick", env={"DUEQUEUE_TICK_LIMIT": str(n), **HELPER_FROM_100})
    deadline = time.monotonic() + LIMIT_S
    while sum(sent_per_row(db_path).values()) < 300:
        assert time.monotonic() < deadline, "the 300 outcomes were never committed"
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.02)
    assert len(helpers_running()) == 1
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=LIMIT_S)
    while helpers_running():  # it reads to the end of the pipe, commits, and exits
        assert time.monotonic() < deadline, "the helper outlived its tick"
        time.sleep(0.02)
    recorded = sent_per_row(db_path)
    assert sum(recorded.values()) == 300 and set(recorded.values()) == {1}

    # Once the lease has run out a tick finishes the job: the 300 recorded are not sent again.
    http.respond("/r", Reply(200))
    later = run_cli(db_path, "tick", "--json", env={"DUEQUEUE_TICK_LIMIT": str(n)})
    assert later.returncode == 0, later.stderr
    assert json.loads(later.stdout)["claimed"] == 0  # the dead tick's lease still holds
    summary = run_leased_out(db_path, n)
    assert (summary.claimed, summary.sent) == (n - 300, n - 300)
    assert sent_per_row(db_path) == collections.Counter(range(1, n + 1))
    per_row = collections.Counter(int(i.split("_")[1]) for i in webhook_ids(http))
    assert {per_row[rid] for rid in recorded} == {1}  # recorded as sent: never sent again
    # At most one copy more, for a request the receiver held when the tick died (unrecorded).
    assert set(per_row) == set(range(1, n + 1)) and set(per_row.values()) <= {1, 2}


def run_leased_out(db: Path, n: int) -> TickSummary:
    """Tick as the CLI would, at an instant past the lease of any tick started now."""
    from datetime import UTC, datetime

    from duequeue.config import load_settings
    from duequeue.service import run_tick
    from duequeue.timefmt import from_ms, to_ms

    settings = load_settings({"db": str(db), "tick_limit": n}, env={})
    later = from_ms(to_ms(datetime.now(UTC)) + settings.lease_ms + 1000)
    store = SQLiteStore(db)
    try:
        return run_tick(store, settings, later, lambda: to_ms(later), None)
    finally:
        store.close()


def test_ctrl_c_to_a_large_ticks_process_group_stops_the_tick_not_its_helper(
    db_path: Path, http: HttpSink
) -> None:
    from tests.e2e.test_faults import Lines

    n = 600
    http.respond("/r", *[Reply(200)] * 200, Reply(200, hold=True))
    import_due(db_path, http.url("/r"), n)
    # Its own process group, as a shell gives a foreground job: Ctrl-C signals the whole group.
    proc = subprocess.Popen(
        cli_args("tick", "--json"),
        # All 64 workers on this one receiver: no per-host bound below DUEQUEUE_CONCURRENCY.
        env=cli_env(
            db_path,
            {"DUEQUEUE_TICK_LIMIT": str(n), "DUEQUEUE_WEBHOOK_PER_HOST": "64", **HELPER_FROM_100},
        ),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        stderr = Lines(proc)
        http.wait_for_requests(264, timeout=LIMIT_S)  # 200 answered, 64 held in flight
        assert len(helpers_running()) == 1
        os.killpg(proc.pid, signal.SIGINT)
        stderr.wait_for("duequeue: SIGINT: stopping")
        http.release()
        out, _ = proc.communicate(timeout=LIMIT_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()

    assert proc.returncode == -signal.SIGINT
    summary = json.loads(out)
    received = len(http.requests)
    assert (summary["stopped_by"], summary["sent"]) == ("SIGINT", received)
    assert summary["released"] == n - received
    assert sum(sent_per_row(db_path).values()) == received  # every answered send recorded
    assert set(sent_per_row(db_path).values()) == {1}
    # The helper never saw the signal (its own session, and it ignores it): no traceback, and
    # it left with its tick.
    lines = list(stderr.lines.queue)
    assert not any("Traceback" in line or "KeyboardInterrupt" in line for line in lines), lines
    assert helpers_running() == []


def test_sigterm_stops_a_tick_whose_helper_is_stalled_with_both_pipes_full(
    db_path: Path, http: HttpSink
) -> None:
    from tests.e2e.test_faults import Lines

    # 4,000 outcomes arrive while the helper is stalled on the lock: some 140 KB of batches, more
    # than its pipe and read buffer hold, so a tick that waited on that pipe would stop sending
    # (and, stuck in the write, never see SIGTERM: the hang).
    before, during, n = 300, 4000, 5000
    # The rest are held unanswered until the stop: the tick cannot finish before the signal.
    http.respond("/r", *[Reply(200)] * (before + during), Reply(200, hold=True))
    import_due(db_path, http.url("/r"), n)
    proc = subprocess.Popen(
        cli_args("tick", "--json"),
        env=cli_env(
            db_path,
            # The helper waits out the lock instead of failing over to the tick.
            {"DUEQUEUE_TICK_LIMIT": str(n), "DUEQUEUE_BUSY_TIMEOUT": "60", **HELPER_FROM_100},
        ),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    blocker = None
    try:
        stderr = Lines(proc)
        http.wait_for_requests(before, timeout=LIMIT_S)
        blocker = locked(db_path)
        assert len(helpers_running()) == 1
        http.wait_for_requests(before + during, timeout=LIMIT_S)
        proc.send_signal(signal.SIGTERM)
        stderr.wait_for("duequeue: SIGTERM: stopping")  # the loop is free to hear it
        http.release()
        blocker.execute("ROLLBACK")
        blocker.close()
        blocker = None
        out, _ = proc.communicate(timeout=LIMIT_S)
    finally:
        if blocker is not None:
            blocker.execute("ROLLBACK")
            blocker.close()
        if proc.poll() is None:
            proc.kill()
            proc.communicate()

    assert proc.returncode == -signal.SIGTERM
    summary = json.loads(out)
    received = len(http.requests)
    assert received < n  # stopped early: the held ones in flight finished, no new one began
    assert (summary["stopped_by"], summary["sent"]) == ("SIGTERM", received)
    assert summary["released"] == n - received
    assert sum(sent_per_row(db_path).values()) == received  # every answered send recorded once
    assert set(sent_per_row(db_path).values()) == {1}
    assert helpers_running() == []


class CountingStore(SQLiteStore):
    """A real SQLite store that counts the outcomes the tick's own process commits."""

    recorded = 0

    def record(self, records: Sequence[DeliveryRecord]) -> None:
        super().record(records)
        self.recorded += len(records)


def test_a_draining_tick_hands_its_commits_to_a_helper_once_it_has_claimed_enough(
    db_path: Path, http: HttpSink
) -> None:
    store = CountingStore(db_path)
    fill(store, http.url("/r"))
    # Claims of 50: the helper starts once 100 rows are claimed, and the batches after that go
    # to it, in order, behind the one the database thread was committing.
    drain = replace(options(db_path, min_rows=100), limit=50)
    summary = tick(store, NOW, drain, lambda: NOW)
    assert (summary.claimed, summary.batches, summary.sent) == (ROWS, ROWS // 50, ROWS)
    assert store.recorded < ROWS  # the helper committed the rest ...
    assert sent_per_row(db_path) == collections.Counter(range(1, ROWS + 1))  # ... each once
    assert set(webhook_ids(http).values()) == {1}
    assert {v.state for v in store.list_view("all", NOW)} == {"done"}
    assert helpers_running() == []


def test_a_draining_tick_claims_through_its_helper_once_it_runs(
    db_path: Path, http: HttpSink, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = SQLiteStore(db_path)
    ids = fill(store, http.url("/r"))
    execute(db_path, OUTCOMES_FIRST)
    asked: list[int] = []
    claim = CommitHelper.claim

    def counted(helper: CommitHelper, *args: int | str) -> None:
        asked.append(helper.pid)
        claim(helper, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(CommitHelper, "claim", counted)
    # Claims of 50; the helper starts at 100 rows and claims from when it takes over.
    drain = replace(options(db_path, min_rows=100), limit=50)

    summary = tick(store, NOW, drain, lambda: NOW)

    assert (summary.claimed, summary.batches, summary.sent, summary.errors) == (
        ROWS,
        ROWS // 50,
        ROWS,
        [],
    )
    # The first two claims (100 rows) come before the helper starts, and the tick claims on
    # until the helper takes over; the helper makes the rest, the last empty one included.
    assert len(set(asked)) == 1 and 1 <= len(asked) <= ROWS // 50 - 1
    assert sent_per_row(db_path) == collections.Counter(ids)
    assert set(webhook_ids(http).values()) == {1} and len(webhook_ids(http)) == ROWS
    assert {v.state for v in store.list_view("all", NOW)} == {"done"}
    assert helpers_running() == []


def test_a_claim_in_flight_when_the_helper_dies_fails_over_and_leases_nothing(
    db_path: Path,
) -> None:
    store = SQLiteStore(db_path)
    ids = fill(store, "http://127.0.0.1:9/h", 5)

    async def run() -> None:
        gc = helped(store, db_path, Counts())
        assert gc._helper is not None
        pid = gc._helper.pid
        blocker = locked(db_path)  # the helper's claim waits for the lock ...
        try:
            pending = gc.claim(NOW, 10, 3, 60_000, "t")
            assert pending is not None
            os.kill(pid, signal.SIGKILL)  # ... and dies there, before committing anything
            with pytest.raises(HelperGone):
                await asyncio.wait_for(pending, LIMIT_S)
        finally:
            blocker.execute("ROLLBACK")
            blocker.close()
        assert gc.claim(NOW, 10, 3, 60_000, "t") is None  # no helper: the tick claims itself
        gc.flush()

    asyncio.run(run())
    # Nothing was leased: every row is there for the next claim at once.
    assert sorted(c.id for c in store.claim_due(NOW, 10, 3, 60_000, "u")) == ids
    assert helpers_running() == []


def test_a_claim_the_helper_could_not_make_fails_with_its_error(db_path: Path) -> None:
    store = SQLiteStore(db_path)
    fill(store, "http://127.0.0.1:9/h", 5)

    async def run() -> None:
        gc = commit(
            store, Counts(), max_items=2, window_s=60, helper=CommitHelper.start(str(db_path), 0.05)
        )
        blocker = locked(db_path)
        try:
            pending = gc.claim(NOW, 10, 3, 60_000, "t")
            assert pending is not None
            with pytest.raises(StoreError, match=r"locked|busy"):
                await asyncio.wait_for(pending, LIMIT_S)
        finally:
            blocker.execute("ROLLBACK")
            blocker.close()
        gc.flush()

    asyncio.run(run())
    assert len(store.claim_due(NOW, 10, 3, 60_000, "u")) == 5  # nothing was leased
    assert helpers_running() == []


def test_a_claim_answered_after_the_tick_stopped_waiting_is_released(db_path: Path) -> None:
    store = SQLiteStore(db_path)
    ids = fill(store, "http://127.0.0.1:9/h", 5)
    counts = Counts()
    late: list[Claimed] = []

    async def run() -> None:
        gc = GroupCommit(
            store,
            "t",
            NOW,
            on_written=counts.on_written,
            on_released=counts.on_released,
            helper=CommitHelper.start(str(db_path), 5.0),
            on_late_claim=late.extend,
        )
        pending = gc.claim(NOW, 10, 3, 60_000, "t")
        assert pending is not None
        pending.cancel()  # as a second stop signal cancels the tick waiting for it
        gc.flush()  # takes the helper's answer, then releases those rows

    asyncio.run(run())
    assert sorted(c.id for c in late) == ids == sorted(counts.released)
    assert sorted(c.id for c in store.claim_due(NOW, 10, 3, 60_000, "u")) == ids
    assert helpers_running() == []


def test_a_stop_signal_does_not_wait_for_a_claim_stalled_in_the_helper(
    db_path: Path, http: HttpSink, monkeypatch: pytest.MonkeyPatch
) -> None:
    from duequeue.engine import tick as engine

    store = SQLiteStore(db_path)
    fill(store, http.url("/r"))
    held: list[apsw.Connection] = []  # the lock, while it is held
    stalling = threading.Event()
    returned: list[int] = []
    ask_helper, claim = GroupCommit.claim, engine._Run._claim
    unlocking = threading.Lock()

    def unlock() -> None:
        with unlocking:
            if held:
                conn = held.pop()
                conn.execute("ROLLBACK")
                conn.close()

    def stalled(gc: GroupCommit, *args: int | str) -> object:
        if not stalling.is_set():
            # The helper's first claim waits for this lock, and SIGTERM comes while it waits. A
            # tick that kept waiting gets the claim's rows once the safety timer unlocks.
            stalling.set()
            held.append(locked(db_path))
            safety.start()
            asyncio.get_running_loop().call_soon(os.kill, os.getpid(), signal.SIGTERM)
        return ask_helper(gc, *args)  # type: ignore[arg-type]

    async def watched(run: engine._Run) -> list[Claimed]:
        rows = await claim(run)
        if stalling.is_set() and not returned:
            returned.append(len(rows))  # the tick stopped waiting, the lock still held ...
            unlock()  # ... so the helper claims now, and its rows, no longer wanted, are released
        return rows

    safety = threading.Timer(LIMIT_S / 3, unlock)
    monkeypatch.setattr(GroupCommit, "claim", stalled)
    monkeypatch.setattr(engine._Run, "_claim", watched)
    drain = TickOptions(
        limit=50,
        webhook_concurrency=8,
        busy_timeout_s=LIMIT_S,
        commit_helper=HelperOptions(str(db_path), LIMIT_S, 50),
    )

    try:
        summary = tick(store, NOW, drain, lambda: NOW)
    finally:
        safety.cancel()

    assert returned == [0] and summary.stopped_by == "SIGTERM" and summary.errors == []
    # The tick's own claim (the helper starts at 50 rows), then the helper's, answered late.
    assert (summary.claimed, summary.batches) == (100, 2)
    # Every claimed row is accounted for, the late ones among them (released), and none is left
    # leased: the next claim gets every row that was not sent.
    assert summary.claimed == summary.sent + summary.released
    assert len(store.claim_due(NOW, ROWS, 3, 60_000, "u")) == ROWS - summary.sent
    assert set(sent_per_row(db_path).values()) <= {1}
    assert helpers_running() == []
