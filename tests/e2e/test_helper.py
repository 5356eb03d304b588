"""The commit helper: a large tick's commits and claims run in a second process, in order, the tick
taking over whatever the helper did not answer, and nothing lost when either one dies.

The helper writes through its own connection, so these tests watch the database itself: SQLite
triggers refuse a resolution whose record is not committed yet, or fail resolutions on cue, and
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

from duequeue.engine import helper as helper_module
from duequeue.engine.commit import Batch, ClaimArgs, ThreadRunner
from duequeue.engine.helper import HelperRunner
from duequeue.engine.summary import TickSummary
from duequeue.engine.tick import HelperOptions, TickOptions, catch_up, tick
from duequeue.errors import StoreError
from duequeue.store.records import (
    SENT_DONE,
    Claim,
    Committed,
    DeliveryRecord,
    NewTarget,
    Resolution,
    RowClaim,
    RowState,
)
from duequeue.store.sqlite import SQLiteBackend
from duequeue.store.sqlite import connect as open_sqlite
from duequeue.store.store import Store
from tests.procs import LIMIT_S, cli_args, cli_env, reap, run_cli, spawn_cli
from tests.servers import HttpSink, Reply
from tests.store_contract import NOW, reminder

ROWS = 300

# Refuses (and so fails the tick's test) a resolution that finishes a one-shot before the ledger
# holds its `sent` record: the order the core rule needs, checked inside the database whichever
# process writes.
RECORDS_FIRST = """
CREATE TRIGGER records_first BEFORE UPDATE OF done_at ON reminders
WHEN NEW.done_at IS NOT NULL AND OLD.done_at IS NULL AND NOT EXISTS (
    SELECT 1 FROM deliveries d
    WHERE d.reminder_id = OLD.id AND d.fire_at = OLD.fire_at AND d.outcome = 'sent')
BEGIN SELECT RAISE(ABORT, 'resolution before its record'); END;
"""

# Fails every commit that would finish more than `limit` one-shots in all (a release, which
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


def fill(store: Store, url: str, n: int = ROWS) -> list[int]:
    ids = [store.add(reminder(targets=(NewTarget("webhook", url),)), NOW)[0] for _ in range(n)]
    # The rows name no tz release: the first tick records it (docs/time.md), which these
    # tests do not count among a tick's writes.
    catch_up(store, NOW)
    return ids


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
    conn.set_busy_timeout(5000)
    try:
        rows = conn.execute("SELECT reminder_id FROM deliveries WHERE outcome = 'sent'")
        return collections.Counter(rid for (rid,) in rows)
    finally:
        conn.close()


def webhook_ids(http: HttpSink) -> collections.Counter[str]:
    return collections.Counter(r.headers["webhook-id"] for r in http.requests)


def changes(store: Store) -> int:
    """Return the rows the store's own connection has written so far."""
    return int(store.backend.conn.total_changes())


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
            if b"duequeue.engine.helper" not in cmdline:
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


def locked(db: Path) -> apsw.Connection:
    """Return a connection holding the database's write lock: every commit elsewhere waits."""
    conn = apsw.Connection(str(db))
    conn.set_busy_timeout(int(LIMIT_S * 1000))  # the helper may be mid-commit: wait for it
    conn.execute("BEGIN IMMEDIATE")
    return conn


# -- a tick with a helper -----------------------------------------------------------------------


def test_a_large_tick_commits_through_the_helper_each_target_once_records_first(
    db_path: Path, http: HttpSink
) -> None:
    store = open_sqlite(db_path)
    ids = fill(store, http.url("/r"))
    execute(db_path, RECORDS_FIRST)
    before = changes(store)

    summary = tick(store, NOW, options(db_path), lambda: NOW)

    assert (summary.claimed, summary.sent, summary.errors) == (ROWS, ROWS, ())
    assert set(webhook_ids(http).values()) == {1} and len(webhook_ids(http)) == ROWS
    assert sent_per_row(db_path) == collections.Counter(ids)
    assert {v.state for v in store.list_view("all", NOW)} == {"done"}
    # The tick's own connection made the first claim and nothing else: the helper wrote the
    # records and the resolutions (the trigger saw each resolution come after its record).
    assert changes(store) - before == ROWS
    assert helpers_running() == []
    tick(store, NOW + 3_600_000, options(db_path), lambda: NOW)
    assert len(http.requests) == ROWS  # and a later tick sends nothing again


def test_a_tick_below_the_threshold_commits_itself(db_path: Path, http: HttpSink) -> None:
    store = open_sqlite(db_path)
    fill(store, http.url("/r"), 5)
    before = changes(store)

    summary = tick(store, NOW, options(db_path, min_rows=6), lambda: NOW)

    assert summary.sent == 5
    assert changes(store) - before == 3 * 5  # claim, records, resolutions


def test_a_helper_that_cannot_start_leaves_the_tick_to_commit_itself(
    db_path: Path, http: HttpSink, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = open_sqlite(db_path)
    fill(store, http.url("/r"), 5)
    monkeypatch.setattr(sys, "executable", str(db_path.parent / "no-such-python"))
    before = changes(store)

    summary = tick(store, NOW, options(db_path), lambda: NOW)

    assert (summary.sent, summary.errors) == (5, ())
    assert changes(store) - before == 3 * 5


def test_on_one_core_the_tick_commits_itself(
    db_path: Path, http: HttpSink, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = open_sqlite(db_path)
    fill(store, http.url("/r"), 5)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0})
    before = changes(store)

    summary = tick(store, NOW, options(db_path), lambda: NOW)

    assert (summary.sent, summary.errors) == (5, ())
    assert changes(store) - before == 3 * 5


def test_a_failing_helper_hands_back_and_nothing_sent_is_forgotten(
    db_path: Path, http: HttpSink
) -> None:
    store = open_sqlite(db_path)
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
    # The unfinished claims were handed back at once: the next tick sends each remaining target
    # once and none of the delivered ones again.
    execute(db_path, "DROP TRIGGER fail_after")
    summary = tick(store, NOW + 1, options(db_path), lambda: NOW + 1)
    assert summary.errors == ()
    assert set(webhook_ids(http).values()) == {1} and len(webhook_ids(http)) == ROWS
    assert sent_per_row(db_path) == collections.Counter(ids)
    assert {v.state for v in store.list_view("all", NOW)} == {"done"}


def test_a_helper_killed_mid_tick_is_taken_over_by_the_tick(
    db_path: Path, http: HttpSink, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = open_sqlite(db_path)
    ids = fill(store, http.url("/r"))
    execute(db_path, RECORDS_FIRST)
    started: list[HelperRunner] = []
    start = HelperRunner.start

    def watched(
        db: str, busy_timeout_s: float, fallback: ThreadRunner, *, until: float | None = None
    ) -> HelperRunner | None:
        runner = start(db, busy_timeout_s, fallback, until=until)
        assert runner is not None
        started.append(runner)
        return runner

    monkeypatch.setattr(HelperRunner, "start", watched)

    def kill_it() -> None:
        http.wait_for_requests(ROWS // 3, timeout=LIMIT_S)
        os.kill(started[0].pid, signal.SIGKILL)

    killer = threading.Thread(target=kill_it)
    killer.start()
    summary = tick(store, NOW, options(db_path), lambda: NOW)
    killer.join()

    assert (summary.sent, summary.errors) == (ROWS, ())
    assert started[0]._proc.returncode == -signal.SIGKILL
    assert set(webhook_ids(http).values()) == {1} and len(webhook_ids(http)) == ROWS
    assert sent_per_row(db_path) == collections.Counter(ids)
    assert {v.state for v in store.list_view("all", NOW)} == {"done"}


class CountingStore(Store):
    """A real SQLite store that counts the records the tick's own process commits."""

    recorded = 0

    def commit(
        self,
        owner: str,
        now: int,
        records: Sequence[DeliveryRecord],
        resolutions: Sequence[Resolution],
        releases: Sequence[Claim],
    ) -> Committed:
        self.recorded += len(records)
        return super().commit(owner, now, records, resolutions, releases)


def test_a_draining_tick_hands_its_commits_and_claims_to_a_helper_once_it_has_claimed_enough(
    db_path: Path, http: HttpSink, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = CountingStore(SQLiteBackend(db_path))
    ids = fill(store, http.url("/r"))
    execute(db_path, RECORDS_FIRST)
    asked: list[int] = []
    claim = HelperRunner.claim

    def counted(runner: HelperRunner, args: ClaimArgs) -> "asyncio.Future[list]":  # type: ignore[type-arg]
        asked.append(runner.pid)
        return claim(runner, args)

    monkeypatch.setattr(HelperRunner, "claim", counted)
    # Claims of 50: the helper starts once 100 rows are claimed, and the batches after that go
    # to it, in order, behind the one the database thread was committing.
    drain = replace(options(db_path, min_rows=100), limit=50)

    summary = tick(store, NOW, drain, lambda: NOW)

    assert (summary.claimed, summary.batches, summary.sent, summary.errors) == (
        ROWS,
        ROWS // 50,
        ROWS,
        (),
    )
    assert store.recorded < ROWS  # the helper committed the rest ...
    assert sent_per_row(db_path) == collections.Counter(ids)  # ... each once
    # The first two claims (100 rows) come before the helper starts; it makes the rest, the
    # last empty one included.
    assert len(set(asked)) == 1 and len(asked) == ROWS // 50 - 1
    assert set(webhook_ids(http).values()) == {1} and len(webhook_ids(http)) == ROWS
    assert {v.state for v in store.list_view("all", NOW)} == {"done"}
    assert helpers_running() == []


# -- the runner on its own ----------------------------------------------------------------------

BULKY = "x" * 300


def test_a_helper_stalled_on_a_locked_database_never_blocks_the_tick_handing_it_work(
    db_path: Path,
) -> None:
    store = open_sqlite(db_path)
    (rid,) = fill(store, "http://127.0.0.1:9/h", 1)
    n = 2000
    records = [DeliveryRecord(rid, rid, NOW, "failed", BULKY, i, NOW) for i in range(1, n + 1)]
    handed, unlocked = threading.Event(), threading.Event()
    failures: list[BaseException] = []

    async def run() -> None:
        runner = HelperRunner.start(str(db_path), 60, ThreadRunner(store))
        assert runner is not None
        # Forty batches, some 700 KB in all: the helper stalls on the lock in the first, and the
        # rest are more than its pipe holds.
        until = time.monotonic() + 60
        futures = [
            runner.commit("t", NOW, Batch(records[i : i + 50], (), ()), until)
            for i in range(0, n, 50)
        ]
        assert runner._out  # the pipe is full: the rest waits in the tick's buffer
        handed.set()
        await asyncio.get_running_loop().run_in_executor(None, unlocked.wait)
        # The event loop alone drains the buffer and takes the answers.
        await asyncio.wait_for(asyncio.gather(*futures), LIMIT_S)
        runner.close()

    def tick_side() -> None:
        try:
            asyncio.run(run())
        except BaseException as exc:
            failures.append(exc)

    blocker = locked(db_path)
    thread = threading.Thread(target=tick_side, daemon=True)
    thread.start()
    try:
        assert handed.wait(LIMIT_S), "the tick blocked writing to a helper that was not reading"
        assert store.deliveries(rid) == []  # the helper has committed nothing: it is stalled
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
        unlocked.set()
    thread.join(LIMIT_S)
    assert not thread.is_alive(), "the tick never got its answer"
    assert failures == []
    assert sorted(d.attempt for d in store.deliveries(rid)) == list(range(1, n + 1))
    assert helpers_running() == []


def test_a_claim_in_flight_when_the_helper_dies_goes_to_the_fallback_once(
    db_path: Path,
) -> None:
    store = open_sqlite(db_path, busy_timeout_s=LIMIT_S)
    ids = fill(store, "http://127.0.0.1:9/h", 5)
    got: list[int] = []

    async def run() -> None:
        runner = HelperRunner.start(str(db_path), LIMIT_S, ThreadRunner(store))
        assert runner is not None
        blocker = locked(db_path)  # the helper's claim waits for the lock ...
        try:
            pending = runner.claim(ClaimArgs(NOW, 10, 3, 60_000, "t"))
            await asyncio.sleep(0.2)  # let it reach the lock; either way it commits nothing
            os.kill(runner.pid, signal.SIGKILL)  # ... and dies there, before committing anything
            await asyncio.sleep(0)
        finally:
            blocker.execute("ROLLBACK")
            blocker.close()
        # The fallback (a database thread of the tick's) made the claim instead.
        got.extend(f.reminder_id for f in await asyncio.wait_for(pending, LIMIT_S))
        runner.close()

    asyncio.run(run())
    assert sorted(got) == ids
    assert store.claim(NOW + 1, 10, 3, 60_000, "u") == []  # each row leased once, to "t"
    assert helpers_running() == []


def test_a_claim_the_helper_could_not_make_fails_with_its_error(db_path: Path) -> None:
    store = open_sqlite(db_path)
    fill(store, "http://127.0.0.1:9/h", 5)

    async def run() -> None:
        runner = HelperRunner.start(str(db_path), 0.05, ThreadRunner(store))
        assert runner is not None
        blocker = locked(db_path)
        try:
            with pytest.raises(StoreError, match=r"locked|busy"):
                await asyncio.wait_for(runner.claim(ClaimArgs(NOW, 10, 3, 60_000, "t")), LIMIT_S)
        finally:
            blocker.execute("ROLLBACK")
            blocker.close()
        runner.close()

    asyncio.run(run())
    assert len(store.claim(NOW, 10, 3, 60_000, "u")) == 5  # nothing was leased
    assert helpers_running() == []


def test_fires_and_resolutions_cross_the_pipe_unchanged(db_path: Path) -> None:
    from duequeue.engine.settle import one_shot_sent

    store = open_sqlite(db_path)
    fill(store, "http://127.0.0.1:9/h", 3)
    fires = store.claim(NOW, 10, 3, 60_000, "t")
    for fire in fires:
        assert helper_module.decode_fire(helper_module.encode_fire(fire)) == fire
        r = one_shot_sent(fire)
        back = helper_module.decode_resolution(helper_module.encode_resolution(r))
        assert back == r
        # The very instance the store writes with its own statement (resolve_done).
        assert back.row is SENT_DONE
    # A row state equal to it but built elsewhere crosses as what it is.
    general = Resolution(RowClaim(1), 1, NOW, "sent", RowState(None, None, 0, None, "done", True))
    back = helper_module.decode_resolution(helper_module.encode_resolution(general))
    assert back == general and back.row is not SENT_DONE


# -- the CLI --------------------------------------------------------------------------------------

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


def run_leased_out(db: Path, n: int) -> TickSummary:
    """Tick as the CLI would, at an instant past the lease of any tick started now."""
    from datetime import UTC, datetime

    from duequeue.config.settings import load_settings
    from duequeue.operations.tick import run as run_tick
    from duequeue.shared.timefmt import from_ms, to_ms

    settings = load_settings({"db": str(db), "tick_limit": n}, env={})
    later = from_ms(to_ms(datetime.now(UTC)) + settings.lease_ms + 1000)
    store = open_sqlite(db)
    try:
        return run_tick(store, settings, later, lambda: to_ms(later), None)
    finally:
        store.close()


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
        assert time.monotonic() < deadline, "the 300 records were never committed"
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


def test_a_stop_signal_does_not_wait_for_a_claim_stalled_on_a_lock(
    db_path: Path, http: HttpSink
) -> None:
    from tests.e2e.test_faults import Lines

    # Claims of 100, the helper from 100 rows: its claims wait out a lock taken after the first
    # batch went out, and SIGTERM comes while one waits.
    n = 300
    import_due(db_path, http.url("/r"), n)
    env = {
        "DUEQUEUE_TICK_LIMIT": "100",
        "DUEQUEUE_BUSY_TIMEOUT": str(LIMIT_S),
        **HELPER_FROM_100,
    }
    blocker = None
    proc = spawn_cli(db_path, "tick", "--json", env=env)
    try:
        stderr = Lines(proc)
        http.wait_for_requests(1, timeout=LIMIT_S)
        blocker = locked(db_path)
        http.wait_for_requests(100, timeout=LIMIT_S)  # the first batch is out; its claim waits
        proc.send_signal(signal.SIGTERM)
        stderr.wait_for("duequeue: SIGTERM: stopping")
        # The tick no longer waits for that claim: it winds down, takes the claim's answer once
        # the lock goes, and hands those rows back with the ones it did not send.
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
    summary = json.loads(out)
    assert summary["stopped_by"] == "SIGTERM" and summary["errors"] == []
    # Every claimed row is accounted for, the late ones among them (released), and none is left
    # leased: the next tick gets every row that was not sent.
    assert summary["claimed"] == summary["sent"] + summary["released"]
    assert set(sent_per_row(db_path).values()) == {1}
    again = json.loads(run_cli(db_path, "tick", "--json").stdout)
    assert again["claimed"] == n - summary["sent"]
    assert helpers_running() == []
