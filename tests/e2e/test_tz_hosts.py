"""Many hosts, one PostgreSQL queue, different tz data (issue 23): the newest release wins.

Two real `duequeue` processes read two zone folders built by `zic` (tests/tzfolders.py) through
PYTHONTZPATH, as docs/time.md tells an operator: host A release 2099a, host B release 2099b, in
which Test/Vancouver stays on daylight time (UTC-7) where A still falls back to UTC-8. The fires
are days ahead, so the real clock is fine: nothing is due, only computed.
"""

import json
from datetime import datetime
from pathlib import Path
from typing import Any, cast

import pytest

from tests.procs import run_cli
from tests.tzfolders import build

HOOK = "http://127.0.0.1:9/never-called"


class Host:
    """duequeue on one host: a zone folder, the shared queue."""

    def __init__(self, db: str, folder: Path, name: str = "") -> None:
        self.db = db
        self.env = {"PYTHONTZPATH": str(folder)} | ({"DUEQUEUE_HOST": name} if name else {})

    def __call__(self, *args: str, code: int = 0) -> Any:
        # The URL as it is: Path() would fold its // into a relative file name.
        r = run_cli(cast(Path, self.db), *args, env=self.env)
        assert r.returncode == code, r.stderr
        return json.loads(r.stdout) if "--json" in args else r.stdout

    def add(self) -> int:
        return int(self("add", "--cron", "0 9 * * *", "--tz", "Test/Vancouver", "--webhook", HOOK))

    def fire(self, rid: int) -> tuple[str, str]:
        (row,) = [r for r in self("inspect", "--pending", "--json") if r["id"] == rid]
        return row["fire_at"], row["fire_release"]


@pytest.fixture
def hosts(pg_url: str, tmp_path: Path) -> tuple[Host, Host]:
    return Host(pg_url, build(tmp_path, "2099a")), Host(pg_url, build(tmp_path, "2099b"))


def _hours(a: str, b: str) -> float:
    def at(s: str) -> datetime:
        return datetime.fromisoformat(s.replace("Z", "+00:00"))

    return (at(b) - at(a)).total_seconds() / 3600


def test_the_newest_release_wins_and_a_host_with_older_data_never_computes_back(
    hosts: tuple[Host, Host],
) -> None:
    old, new = hosts
    rid = old.add()
    stored, release = old.fire(rid)
    assert release == "2099a"
    assert old("next", str(rid), "--json")["tz_release"] == "2099a"

    new("tick")  # computes the row again before claiming anything
    moved, release = new.fire(rid)
    assert (release, _hours(stored, moved)) == ("2099b", -1.0)  # 09:00 at UTC-7, not UTC-8
    assert new("next", str(rid), "--json")["fires"][0]["local"].endswith("T09:00:00-07:00")

    # The older host ticks, recomputes and lists nothing: no flapping back.
    old("tick")
    assert old.fire(rid) == (moved, "2099b")
    assert old("recompute", "--dry-run", "--json")["checked"] == 0
    old("recompute")
    assert old.fire(rid) == (moved, "2099b")

    # doctor says which is older, and what to update, on the older host alone.
    report = old("doctor", "--json", code=1)
    (check,) = [c for c in report["checks"] if c["name"] == "tz release"]
    assert not check["ok"]
    assert "2099a" in check["detail"] and "older than the queue's 2099b" in check["detail"]
    assert "pip install -U tzdata" in check["fix"]
    # On the newer host it says that a host ticked on older data (issue 30).
    newer = [c for c in new("doctor", "--json", code=1)["checks"] if c["name"] == "tz release"]
    assert "computed with 2099b" in newer[0]["detail"]
    assert not newer[0]["ok"] and "ticks with 2099a" in newer[0]["detail"]

    # What the older host adds follows its rules until a newer host ticks; then it moves once.
    later = old.add()
    assert old.fire(later)[1] == "2099a"
    done = new("recompute", "--json")
    assert (done["checked"], done["moved"]) == (1, 1)
    assert done["moves"][0]["id"] == later and done["moves"][0]["old_release"] == "2099a"
    history = new("history", str(later), "--json")["moved_fires"]
    assert [(m["old_release"], m["new_release"]) for m in history] == [("2099a", "2099b")]
    assert new("stats", "--json")["moved_fires"] == 2


def test_stats_and_doctor_name_the_tz_release_each_host_ticks_with(
    pg_url: str, tmp_path: Path
) -> None:
    # A host left on older data (a worker not restarted, a host not updated) is visible.
    old = Host(pg_url, build(tmp_path, "2099a"), "h-old")
    new = Host(pg_url, build(tmp_path, "2099b"), "h-new")
    old.add()
    new("tick")
    old("tick")
    hosts = {h["host"]: h["tz_release"] for h in new("stats", "--json")["hosts"]}
    assert hosts == {"h-old": "2099a", "h-new": "2099b"}
    assert "h-old " in new("stats") and "tz 2099a)" in new("stats")
    report = new("doctor", "--json", code=1)
    (check,) = [c for c in report["checks"] if c["name"] == "tz release"]
    assert not check["ok"]
    assert "h-old ticks with 2099a" in check["detail"], check
    old.env["PYTHONTZPATH"] = new.env["PYTHONTZPATH"]  # h-old updated: no host is behind
    old("tick")
    (check,) = [c for c in new("doctor", "--json")["checks"] if c["name"] == "tz release"]
    assert check["ok"], check
