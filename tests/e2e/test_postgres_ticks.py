"""Many ticks, one PostgreSQL queue: real tick processes, a killed tick and a dropped connection.

Every wait here is on something observable (the sink received N requests, the ledger holds N
rows, a process ended); nothing sleeps to win a race.
"""

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from duequeue.engine.tick import TickOptions, tick
from duequeue.errors import StoreError
from duequeue.shared.timefmt import to_ms
from duequeue.store.records import Fire, NewReminder, NewTarget
from tests.clirunner import SECRET, Cli
from tests.paths import ROOT
from tests.pg import SERVER_URL, admin_connect, needs_psycopg
from tests.servers import HttpSink, Reply

NOW = 1_800_000_000_000
MIN = 60_000


def _store(url: str) -> Any:
    from duequeue.store.postgres import connect as open_postgres

    return open_postgres(url)


def one_shot(fire_at: int, url: str) -> NewReminder:
    return NewReminder(
        subject="s",
        body="b",
        data=None,
        tz="UTC",
        dtstart=fire_at,
        fire_at=fire_at,
        targets=(NewTarget("webhook", url),),
    )


def add_many(url: str, reminders: list[NewReminder], now: int) -> list[int]:
    store = _store(url)
    try:
        return [store.add(r, now)[0] for r in reminders]
    finally:
        store.close()


def tick_process(db: str, *args: str, **env: str) -> "subprocess.Popen[str]":
    """Start `duequeue tick --json` as its own process on the real clock."""
    return subprocess.Popen(
        [sys.executable, "-m", "duequeue", "tick", "--json", *args],
        env={
            **os.environ,
            "PYTHONPATH": str(ROOT),
            "DUEQUEUE_DB": db,
            "DUEQUEUE_WEBHOOK_SECRET": SECRET,
            **env,
        },
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def sent_in_ledger(url: str) -> int:
    with admin_connect(url) as conn:
        row = conn.execute("SELECT count(*) FROM deliveries WHERE outcome = 'sent'").fetchone()
    assert row is not None
    return int(row[0])


def wait_until(what: str, done: Callable[[], bool], timeout: float = 20.0) -> None:
    """Wait for an observable state (polling the database), failing after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not done():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def test_concurrent_tick_processes_deliver_every_due_row_exactly_once(
    pg_url: str, http: HttpSink
) -> None:
    now = to_ms(datetime.now(UTC))
    rows = 300
    add_many(pg_url, [one_shot(now - MIN - i, http.url(f"/r{i}")) for i in range(rows)], now)

    procs = [tick_process(pg_url, "--limit", "100") for _ in range(4)]
    summaries = []
    for p in procs:
        out, err = p.communicate(timeout=60)
        assert p.returncode == 0, err
        summaries.append(json.loads(out))

    ids = Counter(r.headers["webhook-id"] for r in http.requests)
    assert len(ids) == rows
    assert set(ids.values()) == {1}
    assert sum(s["claimed"] for s in summaries) == rows
    assert sum(s["sent"] for s in summaries) == rows
    assert sent_in_ledger(pg_url) == rows


def test_a_tick_killed_mid_delivery_is_recovered_after_its_lease_without_resending(
    pg_url: str, http: HttpSink
) -> None:
    now = to_ms(datetime.now(UTC))
    # The second reminder's /hang target hangs the first time, so the tick is mid-delivery
    # when killed: /a's row is finished, /b is in the ledger, /hang is on the wire.
    http.respond("/hang", Reply(hang=True), Reply(200))
    add_many(pg_url, [one_shot(now - MIN, http.url("/a"))], now)
    both = (NewTarget("webhook", http.url("/b")), NewTarget("webhook", http.url("/hang")))
    two = NewReminder("s", "b", None, "UTC", now - MIN, now - MIN, both)
    add_many(pg_url, [two], now)

    proc = tick_process(pg_url, DUEQUEUE_CHANNEL_TIMEOUT="60")
    try:
        http.wait_for_requests(3, timeout=20)
        wait_until("/a's row done and /b recorded", lambda: done_and_sent(pg_url) == (1, 2))
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=10)

    cli = Cli(pg_url, datetime.now(UTC), {"DUEQUEUE_WEBHOOK_SECRET": SECRET})  # type: ignore[arg-type]
    assert cli.tick()["claimed"] == 0  # the killed tick's lease still holds

    cli.advance(hours=1)  # past the lease (budget + 10 x timeout + 60 s)
    summary = cli.tick()
    assert (summary["claimed"], summary["sent"], summary["deliveries_sent"]) == (1, 1, 1)

    per_path = {
        p: [r.headers["webhook-id"] for r in http.requests_for(p)] for p in ("/a", "/b", "/hang")
    }
    assert [len(per_path[p]) for p in ("/a", "/b")] == [1, 1]  # recorded: never again
    # The hung delivery was never recorded, so it goes again: same webhook-id (at least once).
    assert len(per_path["/hang"]) == 2
    assert len(set(per_path["/hang"])) == 1
    assert {r["state"] for r in cli.inspect("--all")} == {"done"}
    assert done_and_sent(pg_url) == (2, 3)


def done_and_sent(url: str) -> tuple[int, int]:
    with admin_connect(url) as conn:
        row = conn.execute(
            """SELECT (SELECT count(*) FROM reminders WHERE done_at IS NOT NULL),
                      (SELECT count(*) FROM deliveries WHERE outcome = 'sent')"""
        ).fetchone()
    assert row is not None
    return int(row[0]), int(row[1])


class _DroppedAfterClaim:
    """A PostgreSQL store whose connection is terminated by the server right after the claim."""

    def __init__(self, url: str, *, block: bool) -> None:
        self.inner = _store(url)
        self.url = url
        self.block = block

    def claim(self, *args: Any) -> list[Fire]:
        claimed: list[Fire] = self.inner.claim(*args)
        name = self.url.rsplit("/", 1)[1]
        with admin_connect(SERVER_URL) as admin:
            if self.block:
                # No reconnect can succeed: like a server that stays down.
                admin.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS false')
            admin.execute(
                "SELECT pg_terminate_backend(%s)", (self.inner.backend.conn.info.backend_pid,)
            )
        return claimed

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def _options() -> TickOptions:
    return TickOptions(settings={"webhook_secret": SECRET}, channel_timeout=5, lease_ms=5 * MIN)


def test_a_connection_dropped_between_claim_and_write_back_is_reopened_and_nothing_repeats(
    pg_url: str, http: HttpSink
) -> None:
    add_many(pg_url, [one_shot(NOW - MIN, http.url(f"/r{i}")) for i in range(5)], NOW)
    store = _DroppedAfterClaim(pg_url, block=False)
    try:
        summary = tick(store, NOW, _options(), lambda: NOW)  # type: ignore[arg-type]
    finally:
        store.close()
    assert (summary.claimed, summary.sent, summary.deliveries_sent) == (5, 5, 5)
    ids = Counter(r.headers["webhook-id"] for r in http.requests)
    assert (len(ids), set(ids.values())) == (5, {1})
    assert sent_in_ledger(pg_url) == 5
    again = _store(pg_url)
    try:
        assert {v.state for v in again.list_view("all", NOW)} == {"done"}
    finally:
        again.close()


def test_a_tick_that_cannot_reach_the_server_again_stops_and_its_rows_are_retaken_later(
    pg_url: str, http: HttpSink
) -> None:
    add_many(pg_url, [one_shot(NOW - MIN, http.url(f"/r{i}")) for i in range(3)], NOW)
    name = pg_url.rsplit("/", 1)[1]
    store = _DroppedAfterClaim(pg_url, block=True)
    # A short lease: the tick tries the lost write again only until shortly before it ends
    # (busy timeout + 5 s), here for about 2 s, then stops.
    options = replace(_options(), lease_ms=12_000)
    try:
        with pytest.raises(StoreError, match="could not reconnect"):
            tick(store, NOW, options, lambda: NOW)  # type: ignore[arg-type]
    finally:
        store.close()
        with admin_connect(SERVER_URL) as admin:
            admin.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS true')
    first = Counter(r.headers["webhook-id"] for r in http.requests)
    assert sent_in_ledger(pg_url) == 0  # nothing could be recorded...

    later = NOW + 12_000 + 1  # ...so once the leases run out, the next tick sends again
    recovery = _store(pg_url)
    try:
        summary = tick(recovery, later, _options(), lambda: later)
        assert (summary.claimed, summary.sent) == (3, 3)
        assert {v.state for v in recovery.list_view("all", later)} == {"done"}
    finally:
        recovery.close()
    total = Counter(r.headers["webhook-id"] for r in http.requests)
    assert len(total) == 3
    # At least once: a copy went out before the tick stopped only where the first tick got that
    # far; the copies carry the same webhook-id, so the receiver can drop them.
    assert all(total[i] == first[i] + 1 for i in total)
    assert sent_in_ledger(pg_url) == 3


def test_the_cli_says_in_one_line_that_the_server_is_unreachable(tmp_path: Path) -> None:
    needs_psycopg()
    from tests.servers import free_port

    url = f"postgresql://dq:pw-s3cret@127.0.0.1:{free_port()}/dq"
    run = subprocess.run(
        [sys.executable, "-m", "duequeue", "--db", url, "tick"],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 1
    assert run.stdout == ""
    (line,) = run.stderr.splitlines()
    assert line.startswith("duequeue: error: cannot connect to PostgreSQL postgresql://dq:****@")
    assert "pw-s3cret" not in run.stderr


def test_the_sqlite_path_never_imports_psycopg(tmp_path: Path) -> None:
    from duequeue.store.sqlite import connect as open_sqlite

    open_sqlite(tmp_path / "dq.db").close()  # ticks refuse a missing database
    code = (
        "import sys\n"
        "from duequeue.cli.entrypoint import main\n"
        f"sys.argv = ['duequeue', '--db', {str(tmp_path / 'dq.db')!r}, 'tick']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "assert 'psycopg' not in sys.modules, 'psycopg was imported'\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 0, run.stderr
    assert "claimed 0" in run.stdout
