"""Many ticks, one MySQL / MariaDB queue: real tick processes, a killed tick, a dropped
connection, and every command of the CLI (tests/my.py gives each test a fresh database).

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
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from duequeue.engine.tick import TickOptions, tick
from duequeue.shared.timefmt import to_ms
from duequeue.store.records import Fire, NewReminder, NewTarget
from tests.clirunner import SECRET, Cli
from tests.my import SERVER_URL, admin_connect, query
from tests.paths import ROOT
from tests.servers import HttpSink, Reply

NOW = 1_800_000_000_000
MIN = 60_000


def _store(url: str) -> Any:
    from duequeue.store.mysql import connect as open_mysql

    return open_mysql(url)


def one_shot(fire_at: int, url: str) -> NewReminder:
    return NewReminder("s", "b", None, "UTC", fire_at, fire_at, (NewTarget("webhook", url),))


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


def done_and_sent(url: str) -> tuple[int, int]:
    ((done, sent),) = query(
        url,
        """SELECT (SELECT count(*) FROM reminders WHERE done_at IS NOT NULL),
                  (SELECT count(*) FROM deliveries WHERE outcome = 'sent')""",
    )
    return int(done), int(sent)


def wait_until(what: str, done: Callable[[], bool], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def test_concurrent_tick_processes_deliver_every_due_row_exactly_once(
    mysql_url: str, http: HttpSink
) -> None:
    now = to_ms(datetime.now(UTC))
    rows = 300
    add_many(mysql_url, [one_shot(now - MIN - i, http.url(f"/r{i}")) for i in range(rows)], now)

    procs = [tick_process(mysql_url, "--limit", "100") for _ in range(4)]
    summaries = []
    for p in procs:
        out, err = p.communicate(timeout=90)
        assert p.returncode == 0, err
        summaries.append(json.loads(out))

    ids = Counter(r.headers["webhook-id"] for r in http.requests)
    assert len(ids) == rows
    assert set(ids.values()) == {1}
    assert sum(s["claimed"] for s in summaries) == rows
    assert sum(s["sent"] for s in summaries) == rows
    assert done_and_sent(mysql_url) == (rows, rows)


def test_a_tick_killed_mid_delivery_is_recovered_after_its_lease_without_resending(
    mysql_url: str, http: HttpSink
) -> None:
    now = to_ms(datetime.now(UTC))
    http.respond("/hang", Reply(hang=True), Reply(200))
    add_many(mysql_url, [one_shot(now - MIN, http.url("/a"))], now)
    both = (NewTarget("webhook", http.url("/b")), NewTarget("webhook", http.url("/hang")))
    add_many(mysql_url, [NewReminder("s", "b", None, "UTC", now - MIN, now - MIN, both)], now)

    proc = tick_process(mysql_url, DUEQUEUE_CHANNEL_TIMEOUT="60")
    try:
        http.wait_for_requests(3, timeout=20)
        wait_until("/a's row done and /b recorded", lambda: done_and_sent(mysql_url) == (1, 2))
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=10)

    cli = Cli(mysql_url, datetime.now(UTC), {"DUEQUEUE_WEBHOOK_SECRET": SECRET})
    assert cli.tick()["claimed"] == 0  # the killed tick's lease still holds
    cli.advance(hours=1)
    summary = cli.tick()
    assert (summary["claimed"], summary["sent"], summary["deliveries_sent"]) == (1, 1, 1)
    per_path = {p: [r.headers["webhook-id"] for r in http.requests_for(p)] for p in ("/a", "/b")}
    assert [len(per_path[p]) for p in ("/a", "/b")] == [1, 1]  # recorded: never again
    hang = [r.headers["webhook-id"] for r in http.requests_for("/hang")]
    assert len(hang) == 2 and len(set(hang)) == 1  # never recorded: again, same webhook-id
    assert done_and_sent(mysql_url) == (2, 3)


class _DroppedAfterClaim:
    """A MySQL store whose connection the server kills right after the claim."""

    def __init__(self, url: str) -> None:
        self.inner = _store(url)

    def claim(self, *args: Any) -> list[Fire]:
        claimed: list[Fire] = self.inner.claim(*args)
        thread = self.inner.backend.conn.thread_id()
        with admin_connect(SERVER_URL) as admin, admin.cursor() as cur:
            cur.execute(f"KILL CONNECTION {int(thread)}")
        return claimed

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_a_connection_killed_between_claim_and_write_back_is_reopened_and_nothing_repeats(
    mysql_url: str, http: HttpSink
) -> None:
    add_many(mysql_url, [one_shot(NOW - MIN, http.url(f"/r{i}")) for i in range(5)], NOW)
    store = _DroppedAfterClaim(mysql_url)
    options = TickOptions(settings={"webhook_secret": SECRET}, channel_timeout=5, lease_ms=5 * MIN)
    try:
        summary = tick(store, NOW, options, lambda: NOW)  # type: ignore[arg-type]
    finally:
        store.close()
    assert (summary.claimed, summary.sent, summary.deliveries_sent) == (5, 5, 5)
    ids = Counter(r.headers["webhook-id"] for r in http.requests)
    assert (len(ids), set(ids.values())) == (5, {1})
    assert done_and_sent(mysql_url) == (5, 5)


def test_processes_starting_on_a_fresh_database_apply_the_schema_once(mysql_url: str) -> None:
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "duequeue", "--db", mysql_url, "add", "--at", "+1h",
             "--subject", f"s{i}", "--webhook", "http://127.0.0.1:9/h"],
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        for i in range(4)
    ]  # fmt: skip
    for p in procs:
        _, err = p.communicate(timeout=60)
        assert p.returncode == 0, err
    assert query(mysql_url, "SELECT count(*) FROM reminders") == [(4,)]
    assert query(mysql_url, "SELECT value FROM duequeue_meta WHERE name = 'schema_version'") == [
        ("11",)
    ]


def test_a_foreign_database_is_refused_and_left_untouched(mysql_url: str) -> None:
    query(mysql_url, "CREATE TABLE theirs (id INT)")
    run = subprocess.run(
        [sys.executable, "-m", "duequeue", "--db", mysql_url, "init"],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert run.returncode != 0
    assert "holds tables, but not duequeue's" in run.stderr
    assert query(mysql_url, "SHOW TABLES") == [("theirs",)]


def test_the_cli_says_in_one_line_that_the_server_is_unreachable() -> None:
    from tests.servers import free_port

    url = f"mysql://dq:pw-s3cret@127.0.0.1:{free_port()}/dq"
    run = subprocess.run(
        [sys.executable, "-m", "duequeue", "--db", url, "tick"],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert run.returncode == 1
    (line,) = run.stderr.splitlines()
    assert line.startswith("duequeue: error: cannot connect to MySQL mysql://dq:****@"), line
    assert "pw-s3cret" not in run.stderr


def test_the_sqlite_path_never_imports_pymysql(tmp_path: Path) -> None:
    from duequeue.store.sqlite import connect as open_sqlite

    open_sqlite(tmp_path / "dq.db").close()
    code = (
        "import sys\nfrom duequeue.cli.entrypoint import main\n"
        f"sys.argv = ['duequeue', '--db', {str(tmp_path / 'dq.db')!r}, 'tick']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "assert 'pymysql' not in sys.modules, 'pymysql imported'\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr


def test_every_command_runs_on_mysql(mysql_url: str, http: HttpSink, tmp_path: Path) -> None:
    now = datetime.now(UTC).replace(microsecond=0)
    cli = Cli(mysql_url, now, {"DUEQUEUE_WEBHOOK_SECRET": SECRET})
    assert cli("init").code == 0
    http.respond("/fail", Reply(500), Reply(500), Reply(500), Reply(500), Reply(500))
    ok = cli.add("--at", "now", "--subject", "pay rent", "--key", "rent",
                 "--webhook", http.url("/ok"))  # fmt: skip
    assert cli.add("--at", "now", "--subject", "pay rent", "--key", "rent",
                   "--webhook", http.url("/ok")) == ok  # fmt: skip
    bad = cli.add("--at", "now", "--subject", "bad", "--webhook", http.url("/fail"))
    later = cli.add("--at", "+3d", "--subject", "later", "--webhook", http.url("/later"))
    lines = "".join(
        json.dumps({"at": (now + timedelta(days=1)).isoformat(), "subject": f"imp{i}",
                    "webhook": http.url(f"/i{i}")}) + "\n"
        for i in range(3)
    )  # fmt: skip
    assert cli("import", "-", stdin=lines).code == 0
    summary = cli.tick()
    assert (summary["claimed"], summary["sent"]) == (2, 1)
    assert len(http.requests_for("/ok")) == 1
    for _ in range(8):  # past the retries of /fail: dead
        cli.advance(hours=2)
        cli.tick()
    assert cli.row(bad)["state"] == "dead"
    assert cli("history", str(ok)).code == 0
    assert cli("retry", str(bad)).code == 0
    assert cli("reschedule", str(later), "--at", "+4d").code == 0
    assert cli("edit", str(later), "--subject", "later still").code == 0
    assert cli.row(later)["subject"] == "later still"
    assert cli("cancel", str(later)).code == 0
    assert cli.row(later)["state"] == "cancelled"
    stats = cli("stats", "--json")
    assert stats.code == 0, stats.err
    assert stats.json()["reminders"]["cancelled"] == 1
    doctor = cli("doctor")
    assert "MySQL protocol" in doctor.out + doctor.err
    assert len(cli.inspect("--all")) == 6
    cli.advance(hours=2)
    pruned = cli("prune", "--older-than", "1h", "--json")
    assert pruned.code == 0, pruned.err
    assert later not in {r["id"] for r in cli.inspect("--all")}  # cancelled 2 h ago: gone


def test_migrate_copies_an_sqlite_queue_into_mysql_which_then_ticks_it(
    mysql_url: str, http: HttpSink, tmp_path: Path
) -> None:
    now = datetime.now(UTC).replace(microsecond=0)
    lite = Cli(tmp_path / "dq.db", now, {"DUEQUEUE_WEBHOOK_SECRET": SECRET})
    done = lite.add("--at", "now", "--subject", "first", "--key", "k", "--webhook", http.url("/a"))
    lite.tick()
    due = lite.add("--at", "+1h", "--subject", "second", "--webhook", http.url("/b"),
                   "--email", "ann@example.com")  # fmt: skip
    moved = lite("migrate", "--to", mysql_url)
    assert moved.code == 0, moved.err
    assert "migrated 2 reminders, 3 targets" in moved.out + moved.err
    my = Cli(mysql_url, now, {"DUEQUEUE_WEBHOOK_SECRET": SECRET})
    assert {r["id"]: r["state"] for r in my.inspect("--all")} == {done: "done", due: "pending"}
    again = lite("migrate", "--to", mysql_url)
    assert again.code != 0 and "empty database only" in again.err
    # The copy's ids are behind the counters: a new add gets the next id.
    assert my.add("--at", "+2h", "--subject", "third", "--webhook", http.url("/c")) == due + 1
    assert len(http.requests_for("/a")) == 1
