"""`duequeue worker`: ticks on an interval, stops cleanly on SIGTERM / SIGINT between ticks."""

import json
import os
import queue
import signal
import subprocess
import sys
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.clirunner import Cli
from tests.paths import ROOT
from tests.procs import run_cli
from tests.servers import HttpSink, Reply
from tests.stores import Db

WAIT = 20.0  # seconds; generous for a loaded machine, never a race winner


class Running:
    """A worker subprocess whose output lines are read on a thread, so waits can time out."""

    def __init__(self, db: Db, *args: str, env: dict[str, str] | None = None) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("DUEQUEUE_")} | (env or {})
        env["PYTHONPATH"] = str(ROOT)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "duequeue", "--db", str(db), "worker", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=env,
        )
        self.lines: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))

    def wait_for(self, text: str) -> str:
        while True:
            try:
                line = self.lines.get(timeout=WAIT)
            except queue.Empty:
                self.proc.kill()
                raise AssertionError(f"no line with {text!r}; got {self.seen}") from None
            self.seen.append(line)
            if text in line:
                return line

    def stop(self, signum: int) -> int:
        self.proc.send_signal(signum)
        try:
            return self.proc.wait(WAIT)
        finally:
            self.proc.kill()


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_the_worker_ticks_and_stops_cleanly_on_a_signal(db: Db, signum: int) -> None:
    assert Cli(db, datetime.now(UTC))("init").code == 0
    worker = Running(db, "--every", "1s")
    assert "worker: ticking every 1s" in worker.wait_for("worker:")
    line = worker.wait_for(" tick: ")
    assert "claimed 0" in line
    assert worker.stop(signum) == 0
    worker.wait_for("worker: stopped by a signal")


@pytest.mark.sqlite_only
def test_the_worker_refuses_a_missing_database_and_creates_nothing(db_path: Path) -> None:
    typo = db_path.parent / "typo" / "dq.db"
    r = run_cli(typo, "worker", "--every", "1s")
    assert r.returncode == 1
    assert r.stderr == (
        f"duequeue: error: database {typo} does not exist (check --db / DUEQUEUE_DB; "
        "`duequeue init` creates it, as do `add` and `import`)\n"
    )
    assert not typo.parent.exists()


def test_the_worker_delivers_what_becomes_due(db: Db) -> None:
    with HttpSink() as http:
        rid = Cli(db, datetime.now(UTC)).add("--at", "now", "--webhook", http.url("/w"))
        worker = Running(db, "--every", "1s")
        worker.wait_for("sent 1")
        (req,) = http.wait_for_requests(1)
        assert req.path == "/w"
        assert worker.stop(signal.SIGTERM) == 0
    assert json.loads(req.body)["data"]["reminder_id"] == rid


def test_on_postgresql_the_worker_wakes_for_what_is_added_between_polls(pg_url: str) -> None:
    """LISTEN/NOTIFY: a reminder added due now is delivered long before the next poll (an
    hour away), by the same worker; so is one re-armed by `retry` and one imported."""
    with HttpSink() as http:
        http.respond("/once-dead", Reply(404), Reply(200))
        assert Cli(pg_url, datetime.now(UTC))("init").code == 0
        worker = Running(pg_url, "--every", "1h")
        assert "claimed 0" in worker.wait_for(" tick: ")  # the first tick; the next in an hour
        cli = Cli(pg_url, datetime.now(UTC))
        rid = cli.add("--at", "now", "--webhook", http.url("/added"))
        assert "sent 1" in worker.wait_for(" tick: ")
        assert json.loads(http.requests_for("/added")[0].body)["data"]["reminder_id"] == rid
        dead = cli.add("--at", "now", "--webhook", http.url("/once-dead"))
        assert "dead 1" in worker.wait_for(" tick: ")
        assert run_cli(Path("unused"), "--db", pg_url, "retry", str(dead)).returncode == 0
        assert "sent 1" in worker.wait_for(" tick: ")
        line = {"at": "now", "subject": "imported", "webhooks": [http.url("/imported")]}
        lines = json.dumps(line)
        r = subprocess.run(
            [sys.executable, "-m", "duequeue", "--db", pg_url, "import", "-"],
            input=lines + "\n",
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            timeout=WAIT,
            check=False,
        )
        assert r.returncode == 0, r.stderr
        assert "sent 1" in worker.wait_for(" tick: ")
        assert len(http.requests_for("/imported")) == 1
        assert worker.stop(signal.SIGTERM) == 0


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_during_a_delivery_ends_the_worker_after_that_tick(db: Db, signum: int) -> None:
    with HttpSink() as http:
        http.respond("/first", Reply(hold=True))
        due = datetime.now(UTC) - timedelta(minutes=1)
        first = Cli(db, due).add("--at", "now", "--webhook", http.url("/first"))
        rest = Cli(db, due + timedelta(seconds=1)).add(
            "--at", "now", "--webhook", http.url("/rest")
        )
        # One webhook at a time: /first is held in flight while /rest waits its turn.
        worker = Running(db, "--every", "1s", env={"DUEQUEUE_CONCURRENCY": "1"})
        http.wait_for_requests(1)
        worker.proc.send_signal(signum)
        worker.wait_for(f"duequeue: {signal.Signals(signum).name}: stopping")
        http.release()  # the receiver answers the request in flight
        line = worker.wait_for(" tick: ")
        assert worker.proc.wait(WAIT) == 0
        worker.wait_for("worker: stopped by a signal")
        # No later tick: /rest, released and due, would have been the next tick's first row.
        assert [r.path for r in http.requests] == ["/first"]
        assert "claimed 2: sent 1" in line and "released 1" in line
        assert line.endswith(f"stopped by {signal.Signals(signum).name}")
        assert not [x for x in worker.seen if " tick: " in x and x != line]

        cli = Cli(db, datetime.now(UTC))
        attempts = cli("history", str(first), "--json").json()["attempts"]
        assert [a["outcome"] for a in attempts] == ["sent"]  # the held one was written back
        assert cli("history", str(rest), "--json").json()["attempts"] == []
        assert cli.tick()["sent"] == 1  # released, not leased: taken at once
    assert [r.path for r in http.requests] == ["/first", "/rest"]


def test_a_bad_interval_exits_2(db: Db) -> None:
    r = Cli(db, datetime.now(UTC))("worker", "--every", "often")
    assert r.code == 2
    assert r.err.startswith("duequeue: error: --every: invalid duration")


def test_idle_ticks_are_not_logged_between_the_first_tick_and_one_that_did_something(
    db: Db,
) -> None:
    with HttpSink() as http:
        assert Cli(db, datetime.now(UTC))("init").code == 0
        worker = Running(db, "--every", "1s")
        assert "worker: ticking every 1s" in worker.wait_for("worker:")
        first = worker.wait_for(" tick: ")
        assert "claimed 0" in first
        # Decided by events, not by how fast the machine is: the worker ticks idle for as long
        # as the add takes, then finds the reminder (on PostgreSQL it is woken for it).
        Cli(db, datetime.now(UTC)).add("--at", "now", "--webhook", http.url("/w"))
        sent = worker.wait_for(" tick: ")
        assert "claimed 1: sent 1" in sent  # the next line logged: no idle tick in between
        assert worker.stop(signal.SIGTERM) == 0
    assert worker.seen == [worker.seen[0], first, sent]
