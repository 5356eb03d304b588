"""A running `duequeue worker` across a tz data update (issue 30 item 6).

The zone folder the worker reads (PYTHONTZPATH) is a symlink to release A's folder, built by
`zic` (tests/tzfolders.py); while the worker runs, the link is swapped to release B's, as an OS
package update replaces /usr/share/zoneinfo under a running service. The worker runs under
`faketime`, its clock ten times faster from just before the fire, so the test waits seconds.

Test/Zone has daylight time under A (09:00 on 2027-03-15 is 16:00Z) and none under B (17:00Z).
"""

import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from duequeue.schedule import zones as tz_zones
from tests.clirunner import Cli
from tests.paths import ROOT
from tests.procs import run_cli
from tests.servers import HttpSink
from tests.stores import Db
from tests.tzfolders import build

LIBFAKETIME = next(
    (
        str(p)
        for p in Path("/usr/lib").glob("*/faketime/libfaketime.so.1")
        if shutil.which("faketime") is not None
    ),
    "",
)
pytestmark = pytest.mark.skipif(not LIBFAKETIME, reason="needs faketime (apt-get install faketime)")

WAIT = 30.0  # seconds; generous for a loaded machine, never a race winner
START = "2027-03-15 15:59:00"  # faketime's start, UTC: 07:59 PST under B, 08:59 PDT under A
OLD_FIRE = "2027-03-15T16:00:00.000Z"  # 09:00 under A: 08:00 under B
NEW_FIRE = "2027-03-15T17:00:00.000Z"  # 09:00 under B
HOOK = "http://127.0.0.1:9/never-called"


class Zones:
    """A zone folder path whose target can be swapped in one rename."""

    def __init__(self, root: Path) -> None:
        self.a, self.b = build(root, "2099a"), build(root, "2099b")
        self.path = root / "current"
        os.symlink(self.a, self.path)

    def swap_to_b(self) -> None:
        link = self.path.with_name("next")
        os.symlink(self.b, link)
        os.replace(link, self.path)


class Worker:
    """`duequeue worker` under faketime; its output lines read on a thread."""

    def __init__(self, db: Db, zones: Path) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("DUEQUEUE_")}
        env |= {"PYTHONPATH": str(ROOT), "PYTHONTZPATH": str(zones), "TZ": "UTC"}
        # libfaketime preloaded into the worker itself (the `faketime` command would stand
        # between the signal and the worker).
        env |= {"LD_PRELOAD": LIBFAKETIME, "FAKETIME": f"@{START} x10"}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "duequeue", "--db", str(db), "worker", "--every", "10s"],
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

    def stop(self) -> int:
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(WAIT)
        finally:
            self.proc.kill()


def fired(http: HttpSink, path: str) -> list[str]:
    return [json.loads(r.body)["data"]["fire_at"] for r in http.requests_for(path)]


@pytest.fixture
def fresh_zones(monkeypatch: pytest.MonkeyPatch) -> Iterator[pytest.MonkeyPatch]:
    """The in-process CLI chooses its tz database once a process: choose again under this
    test's PYTHONTZPATH, and again after it, so no other test reads Test/Zone's folders."""
    yield monkeypatch
    monkeypatch.undo()
    tz_zones.reset()


@pytest.mark.sqlite_only  # on PostgreSQL the server's clock says what is due: faketime cannot
def test_a_worker_follows_new_tz_data_without_a_restart_and_fires_once_a_day(
    db: Db, tmp_path: Path, fresh_zones: pytest.MonkeyPatch
) -> None:
    zones = Zones(tmp_path / "zones")
    env = {"PYTHONTZPATH": str(zones.path)}
    fresh_zones.setenv("PYTHONTZPATH", str(zones.path))
    tz_zones.reset()
    cli = Cli(db, datetime(2027, 3, 15, 12, 0, tzinfo=UTC), env=env)
    with HttpSink() as http:
        daily = cli.add("--cron", "0 9 * * *", "--tz", "Test/Zone", "--webhook", http.url("/d"))
        # An instant no zone moves: delivered once the worker's clock is past both 09:00s' first.
        cli.add("--at", "2027-03-15T16:01:00Z", "--webhook", http.url("/mark"))
        worker = Worker(db, zones.path)
        worker.wait_for(" tick: ")  # the first tick ran on release A (nothing due)
        zones.swap_to_b()
        changed = worker.wait_for("worker: tz data changed")
        assert changed == "worker: tz data changed on disk: 2099a -> 2099b; zones loaded again"
        seen = 1
        while "/mark" not in [r.path for r in http.wait_for_requests(seen, WAIT)]:
            seen += 1
        assert worker.stop() == 0, worker.seen
    # 09:00 under B is still ahead: the 08:00 (A's 09:00) was not sent, and no fire is due again
    # the same day (zones loaded from B while the worker says A).
    (row,) = [r for r in cli.inspect("--pending") if r["id"] == daily]
    sent = fired(http, "/d")
    assert (sent, row["fire_at"], row["fire_release"]) == ([], NEW_FIRE, "2099b"), worker.seen


@pytest.mark.sqlite_only  # PostgreSQL lists each host's release: tests/e2e/test_tz_hosts.py
def test_on_sqlite_stats_and_doctor_show_the_tz_release_of_the_last_tick(
    db: Path, tmp_path: Path
) -> None:
    zones = Zones(tmp_path / "zones")

    def cli(folder: Path, *args: str, code: int = 0) -> str:
        # Each a process of its own, as cron's ticks and a worker are.
        r = run_cli(db, *args, env={"PYTHONTZPATH": str(folder)})
        assert r.returncode == code, r.stderr
        return r.stdout

    cli(zones.b, "add", "--cron", "0 9 * * *", "--tz", "Test/Zone", "--webhook", HOOK)
    cli(zones.b, "tick")
    assert json.loads(cli(zones.b, "stats", "--json"))["last_tick_tz_release"] == "2099b"
    cli(zones.a, "tick")  # a process on older data (a worker started before the update, say)
    assert json.loads(cli(zones.b, "stats", "--json"))["last_tick_tz_release"] == "2099a"
    assert "tz release of the last tick: 2099a" in cli(zones.b, "stats")
    report = json.loads(cli(zones.b, "doctor", "--json", code=1))
    (check,) = [c for c in report["checks"] if c["name"] == "tz release"]
    assert not check["ok"] and "the last tick ran on 2099a" in check["detail"], check
    cli(zones.b, "tick")
    report = json.loads(cli(zones.b, "doctor", "--json"))
    (check,) = [c for c in report["checks"] if c["name"] == "tz release"]
    assert check["ok"], check
