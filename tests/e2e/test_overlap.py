"""Real processes on one database: overlapping ticks, concurrent adds, SIGKILL and recovery.

Each test runs the `duequeue` CLI as separate processes against real loopback sinks and counts
what the receivers got, by webhook-id, next to what the ledger recorded.
"""

import collections
import json
import signal
import subprocess
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import apsw
import pytest

from duequeue.config.settings import load_settings
from duequeue.operations.tick import run as run_tick
from duequeue.shared.timefmt import from_ms, to_ms
from duequeue.store.records import NewReminder, NewTarget
from duequeue.store.sqlite import connect as open_sqlite
from tests.procs import LIMIT_S, reap, run_cli, spawn_cli
from tests.servers import HttpSink, Reply


@pytest.fixture(autouse=True)
def no_leftover_processes() -> Iterator[None]:
    yield
    reap()


def add_due(db: Path, n: int, urls: list[str]) -> list[int]:
    """Add `n` one-shots due an hour ago (on the real clock, which the CLI reads), each with
    every URL as a webhook target."""
    store = open_sqlite(db)
    try:
        due = to_ms(datetime.now(UTC)) - 3_600_000
        targets = tuple(NewTarget("webhook", u) for u in urls)
        return [
            store.add(NewReminder(f"r{i}", "", None, "UTC", due, due, targets), due)[0]
            for i in range(n)
        ]
    finally:
        store.close()


def ledger(db: Path) -> list[tuple[int, int, str]]:
    """Return (reminder, target, outcome) of every ledger row."""
    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    conn.setbusytimeout(5000)  # a reader can meet a writer's brief WAL recovery
    try:
        rows = conn.execute("SELECT reminder_id, target_id, outcome FROM deliveries").fetchall()
        return [(int(r), int(t), str(o)) for r, t, o in rows]
    finally:
        conn.close()


def targets(db: Path) -> int:
    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    conn.setbusytimeout(5000)  # a reader can meet a writer's brief WAL recovery
    try:
        return int(conn.execute("SELECT count(*) FROM targets").fetchall()[0][0])
    finally:
        conn.close()


def wait_for(condition: "collections.abc.Callable[[], bool]", what: str) -> None:
    """Poll an observable condition (ledger rows, files), bounded by LIMIT_S."""
    deadline = time.monotonic() + LIMIT_S
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


def finish(proc: "subprocess.Popen[str]") -> tuple[int, str, str]:
    out, err = proc.communicate(timeout=LIMIT_S)
    return proc.returncode, out, err


def test_four_overlapping_ticks_deliver_each_fire_to_each_target_exactly_once(
    db_path: Path, http: HttpSink
) -> None:
    http.respond("/slow", Reply(200, delay=0.01))  # a slow receiver keeps the ticks overlapping
    add_due(db_path, 300, [http.url("/slow"), http.url("/other")])
    env = {"DUEQUEUE_TICK_LIMIT": "75", "DUEQUEUE_CONCURRENCY": "8"}
    procs = [spawn_cli(db_path, "tick", "--json", env=env) for _ in range(4)]
    results = [finish(p) for p in procs]
    assert [code for code, _, _ in results] == [0, 0, 0, 0], [e for _, _, e in results]
    summaries = [json.loads(out) for _, out, _ in results]
    claimed = [s["claimed"] for s in summaries]
    # Whoever came first took what it could (a tick drains: batch after batch while rows are
    # due, each claim at most the limit); between them they took every row, none twice.
    assert sum(claimed) == 300
    assert all(s["claimed"] <= 75 * s["batches"] for s in summaries)

    per_id = collections.Counter(r.headers["webhook-id"] for r in http.requests)
    assert len(per_id) == 600  # every (reminder, fire, target) reached its receiver ...
    assert set(per_id.values()) == {1}  # ... exactly once
    sent = [(r, t) for r, t, o in ledger(db_path) if o == "sent"]
    assert len(sent) == len(set(sent)) == targets(db_path) == 600


def test_concurrent_adds_on_a_fresh_database_all_land(tmp_path: Path) -> None:
    db = tmp_path / "new" / "dq.db"  # not there yet: the adds race to create it
    procs = [
        spawn_cli(db, "add", "--at", "+1h", "--webhook", f"https://example.com/{i}")
        for i in range(8)
    ]
    results = [finish(p) for p in procs]
    assert [code for code, _, _ in results] == [0] * 8, [e for _, _, e in results]
    ids = sorted(int(out) for _, out, _ in results)
    assert ids == list(range(1, 9))
    assert targets(db) == 8


def test_concurrent_adds_of_one_key_land_once(db_path: Path) -> None:
    add_due(db_path, 0, [])  # an existing database: the race is on the key alone
    procs = [
        spawn_cli(db_path, "add", "--at", "+1h", "--webhook", "https://e.example/", "--key", "k")
        for _ in range(6)
    ]
    results = [finish(p) for p in procs]
    assert [code for code, _, _ in results] == [0] * 6
    assert {out for _, out, _ in results} == {"1\n"}
    assert sum("exists: reminder 1" in err for _, _, err in results) == 5
    assert targets(db_path) == 1


def test_a_tick_killed_mid_delivery_loses_nothing_and_never_resends_what_it_recorded(
    db_path: Path, http: HttpSink
) -> None:
    # Ten receivers answer, thirty take the request and never answer: the kill lands while
    # thirty deliveries are in flight (received but unrecorded) and ten are recorded as sent.
    http.respond("/r", *[Reply(200)] * 10, Reply(hang=True))
    ids = add_due(db_path, 40, [http.url("/r")])
    # All forty in flight at once to this one receiver: no per-host bound below that.
    env = {"DUEQUEUE_CONCURRENCY": "64", "DUEQUEUE_WEBHOOK_PER_HOST": "64"}
    tick = spawn_cli(db_path, "tick", env=env)
    http.wait_for_requests(40, timeout=LIMIT_S)
    wait_for(lambda: len(ledger(db_path)) == 10, "ten recorded deliveries")
    tick.send_signal(signal.SIGKILL)
    assert finish(tick)[0] == -signal.SIGKILL
    recorded = {r for r, _, o in ledger(db_path) if o == "sent"}
    assert len(recorded) == 10

    http.respond("/r", Reply(200))
    # A tick while the dead tick's lease holds takes nothing: a live tick's rows are never taken.
    early = run_cli(db_path, "tick", "--json")
    assert (early.returncode, early.stdout.count('"claimed": 0')) == (0, 1), early.stderr

    # Recovery once the lease has run out: the same engine the CLI runs, at a later instant.
    settings = load_settings({"db": str(db_path)}, env={})
    later = from_ms(to_ms(datetime.now(UTC)) + settings.lease_ms + 1000)
    store = open_sqlite(db_path)
    try:
        summary = run_tick(store, settings, later, lambda: to_ms(later), None)
    finally:
        store.close()
    assert (summary.claimed, summary.sent) == (30, 30)

    sent = [r for r, _, o in ledger(db_path) if o == "sent"]
    assert sorted(sent) == ids  # every target exactly one recorded `sent`
    per_id = collections.Counter(r.headers["webhook-id"] for r in http.requests)
    assert len(per_id) == 40
    recorded_ids = {i for i in per_id if int(i.split("_")[1]) in recorded}
    assert {per_id[i] for i in recorded_ids} == {1}  # recorded as sent: never sent again
    resent = sorted(per_id[i] for i in per_id if i not in recorded_ids)
    # The at-least-once window: a request the receiver took but the dead tick never recorded
    # goes out once more, with the same webhook-id for the receiver to drop.
    assert resent == [2] * 30
    r = run_cli(db_path, "inspect", "--all", "--json")
    assert {row["state"] for row in json.loads(r.stdout)} == {"done"}


@pytest.mark.parametrize("seen", [1, 12, 24])
def test_a_tick_killed_at_any_point_of_its_deliveries_recovers_with_one_send_per_target(
    db_path: Path, http: HttpSink, seen: int
) -> None:
    # A slow receiver and few connections spread the tick's life out; the kill lands after
    # `seen` requests arrived: some answered and recorded, some answered and not yet recorded,
    # some in flight, some not started.
    http.respond("/r", Reply(200, delay=0.02))
    ids = add_due(db_path, 24, [http.url("/r")])
    tick = spawn_cli(db_path, "tick", env={"DUEQUEUE_CONCURRENCY": "4"})
    http.wait_for_requests(seen, timeout=LIMIT_S)
    tick.send_signal(signal.SIGKILL)
    finish(tick)
    recorded = {r for r, _, o in ledger(db_path) if o == "sent"}

    settings = load_settings({"db": str(db_path)}, env={})
    later = from_ms(to_ms(datetime.now(UTC)) + settings.lease_ms + 1000)
    store = open_sqlite(db_path)
    try:
        run_tick(store, settings, later, lambda: to_ms(later), None)
    finally:
        store.close()

    assert sorted(r for r, _, o in ledger(db_path) if o == "sent") == ids
    per_rid = collections.Counter(int(r.headers["webhook-id"].split("_")[1]) for r in http.requests)
    assert set(per_rid) == set(ids)
    assert {per_rid[r] for r in recorded} <= {1}  # recorded as sent: never sent again
    assert set(per_rid.values()) <= {1, 2}  # at most one copy, from the unrecorded window


def test_a_killed_tick_does_not_hold_up_a_fresh_database_for_the_others(db_path: Path) -> None:
    # SIGKILL right after start, whatever it was doing: the database stays usable.
    add_due(db_path, 5, ["http://127.0.0.1:9/x"])
    victim = spawn_cli(db_path, "tick")
    victim.send_signal(signal.SIGKILL)
    finish(victim)
    r = run_cli(db_path, "inspect", "--all", "--json")
    assert r.returncode == 0, r.stderr
    assert len(json.loads(r.stdout)) == 5
