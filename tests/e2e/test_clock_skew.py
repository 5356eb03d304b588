"""Hosts whose clocks disagree tick one PostgreSQL queue by the server's clock (issue 26).

Each tick is a real `duequeue` process whose clock `faketime` moves two minutes ahead of or
behind this machine's, which is the database server's (the local PostgreSQL). What is due and
when a lease ends are judged by the server: a host ahead fires nothing early and steals no live
lease; a host behind fires what is due without waiting its two minutes. `doctor` on a skewed
host says by how much it is off; `stats` names the hosts that ticked.
"""

import json
import shutil
import subprocess
import time
from collections.abc import Iterator

import pytest

from duequeue.store.postgres import connect as open_postgres
from duequeue.store.records import NewReminder, NewTarget
from duequeue.store.store import Store
from tests.procs import LIMIT_S, cli_args, cli_env
from tests.servers import HttpSink

AHEAD, BEHIND = "+120s", "-120s"

pytestmark = pytest.mark.skipif(
    shutil.which("faketime") is None, reason="needs faketime (apt-get install faketime)"
)


def server_ms(store: Store) -> int:
    found = store.server_ms()
    assert found is not None
    return found


def run_skewed(
    offset: str, url: str, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run one duequeue command with its clock moved by `offset` (faketime's syntax)."""
    return subprocess.run(
        ["faketime", "-f", offset, *map(str, cli_args(*args))],
        env=cli_env(url, env),  # type: ignore[arg-type]
        capture_output=True,
        text=True,
        timeout=LIMIT_S,
        check=False,
    )


@pytest.fixture
def store(pg_url: str) -> Iterator[Store]:
    s = open_postgres(pg_url)
    yield s
    s.close()


def add(store: Store, url: str, at: int) -> int:
    target = (NewTarget("webhook", url),)
    return store.add(NewReminder("s", "b", None, "UTC", at, at, target), at)[0]


def tick_json(offset: str, url: str) -> dict[str, object]:
    done = run_skewed(offset, url, "tick", "--json")
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    found: dict[str, object] = json.loads(done.stdout)
    return found


def test_the_skewed_hosts_own_clock_is_what_faketime_says(pg_url: str) -> None:
    # The premise of the other tests: faketime does move the process's clock.
    done = run_skewed(AHEAD, pg_url, "--version")
    assert done.returncode == 0, done.stderr
    moved = subprocess.run(
        ["faketime", "-f", AHEAD, "date", "+%s"], capture_output=True, text=True, check=True
    )
    assert int(moved.stdout) - time.time() > 100


def test_a_host_two_minutes_ahead_fires_nothing_early(
    pg_url: str, store: Store, http: HttpSink
) -> None:
    now = server_ms(store)
    add(store, http.url("/soon"), now + 59_000)  # due in 59 s by the server's clock
    summary = tick_json(AHEAD, pg_url)
    assert summary["claimed"] == 0, summary
    assert http.requests == []


def test_a_host_two_minutes_behind_fires_what_is_due_at_once(
    pg_url: str, store: Store, http: HttpSink
) -> None:
    now = server_ms(store)
    add(store, http.url("/due"), now - 1_000)
    summary = tick_json(BEHIND, pg_url)
    assert (summary["claimed"], summary["sent"]) == (1, 1), summary
    assert [r.path for r in http.requests] == ["/due"]
    [attempt] = store.deliveries(store.list_view("all", now)[0].id)
    # Stamped by the server's clock carried forward, not the host's two minutes behind.
    assert abs(attempt.at - server_ms(store)) < 60_000


def test_a_host_ahead_takes_no_live_lease(pg_url: str, store: Store, http: HttpSink) -> None:
    now = server_ms(store)
    rid = add(store, http.url("/held"), now - 1_000)
    # Another tick holds the row for 60 s more by the server's clock.
    assert store.claim(now, 10, 3, 60_000, "another-host")
    summary = tick_json(AHEAD, pg_url)
    assert summary["claimed"] == 0, summary
    assert http.requests == []
    view = store.get(rid)
    assert view is not None and view.state == "pending"


def test_doctor_says_how_far_the_hosts_clock_is_from_the_servers(pg_url: str) -> None:
    done = run_skewed(AHEAD, pg_url, "doctor", "--json")
    checks = {c["name"]: c for c in json.loads(done.stdout)["checks"]}
    clock = checks["clock"]
    assert clock["ok"] is False
    assert "ahead of the database server's" in clock["detail"]
    seconds = float(clock["detail"].split("clock is ")[1].split("s ")[0])
    assert 110 < seconds < 130
    assert done.returncode == 1


def test_stats_names_the_hosts_that_ticked_and_their_clocks(pg_url: str) -> None:
    for offset, name in ((BEHIND, "h-behind"), (AHEAD, "h-ahead")):
        done = run_skewed(offset, pg_url, "tick", env={"DUEQUEUE_HOST": name})
        assert done.returncode == 0, done.stderr
    done = run_skewed("+0s", pg_url, "stats", "--json")
    assert done.returncode == 0, done.stderr
    hosts = {h["host"]: h for h in json.loads(done.stdout)["hosts"]}
    assert set(hosts) == {"h-behind", "h-ahead"}
    assert -130 < hosts["h-behind"]["clock_offset_s"] < -110
    assert 110 < hosts["h-ahead"]["clock_offset_s"] < 130
    text = run_skewed("+0s", pg_url, "stats").stdout
    assert "hosts ticking, last day: h-ahead " in text and "(clock -1" in text, text
