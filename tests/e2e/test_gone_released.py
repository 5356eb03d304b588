"""A 410 Gone is remembered however its fire's claim ends (issue 30, item 9).

The tick that hears it may hand the row back (a stop signal, the time budget) instead of
settling it: the target is still switched off (`disabled_at`), `inspect` and `stats` show it, and
no later fire of a recurring reminder calls the gone endpoint again.
"""

import json
import signal
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import apsw
import pytest

from duequeue.shared.timefmt import to_ms
from duequeue.store.records import NewReminder, NewTarget
from duequeue.store.sqlite import connect as open_sqlite
from tests.e2e.test_faults import Lines, errors, tick_json, tick_later
from tests.procs import LIMIT_S, reap, run_cli, spawn_cli
from tests.servers import HttpSink, Reply


@pytest.fixture(autouse=True)
def no_leftover_processes() -> Iterator[None]:
    yield
    reap()


def add_every_minute(db: Path, urls: list[str]) -> int:
    """Add a cron reminder every minute whose fire was due a minute ago, to these webhooks."""
    store = open_sqlite(db)
    try:
        due = (to_ms(datetime.now(UTC)) // 60_000 - 1) * 60_000
        targets = tuple(NewTarget("webhook", u) for u in urls)
        new = NewReminder("r", "b", None, "UTC", due, due, targets, "cron", "* * * * *")
        return store.add(new, due)[0]
    finally:
        store.close()


def disabled(db: Path) -> dict[str, bool]:
    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        rows = conn.execute("SELECT address, disabled_at FROM targets ORDER BY id").fetchall()
    finally:
        conn.close()
    return {str(a).rsplit("/", 1)[1]: d is not None for a, d in rows}


def test_a_410_heard_by_a_tick_that_hands_its_row_back_still_switches_the_target_off(
    db_path: Path, http: HttpSink
) -> None:
    http.respond("/gone", Reply(410, hold=True))
    rid = add_every_minute(db_path, [http.url("/gone"), http.url("/later")])
    # One webhook at a time: /gone is in flight when SIGTERM comes, /later is never started,
    # so the fire is released rather than settled.
    proc = spawn_cli(db_path, "tick", "--json", env={"DUEQUEUE_CONCURRENCY": "1"})
    stderr = Lines(proc)
    http.wait_for_requests(1, timeout=LIMIT_S)
    proc.send_signal(signal.SIGTERM)
    stderr.wait_for("duequeue: SIGTERM: stopping")
    http.release()  # the receiver answers 410 Gone
    out, _ = proc.communicate(timeout=LIMIT_S)
    summary = json.loads(out)
    assert (summary["released"], summary["deliveries_failed"]) == (1, 1)
    [(r, outcome, error)] = errors(db_path)
    assert (r, outcome) == (rid, "permanent") and "endpoint gone: target disabled" in str(error)

    # Remembered: the target is off, and the views say so.
    assert disabled(db_path) == {"gone": True, "later": False}
    shown = json.loads(run_cli(db_path, "inspect", "--all", "--json").stdout)
    assert [t["disabled_at"] is not None for t in shown[0]["targets"]] == [True, False]
    assert json.loads(run_cli(db_path, "stats", "--json").stdout)["disabled_targets"] == 1

    # The released fire goes to /later alone; the next fires too: /gone is never called again.
    assert tick_json(db_path)["deliveries_sent"] == 1
    assert tick_later(db_path, 61).deliveries_sent == 1
    assert tick_later(db_path, 121).deliveries_sent == 1
    assert [len(http.requests_for(p)) for p in ("/gone", "/later")] == [1, 3]
