"""`duequeue worker` and `duequeue serve` on MySQL / MariaDB, as processes, as users run them.

The store contract and test_mysql_ticks.py cover the store and every one-shot command; these two
run for long on one connection each: the worker polls and delivers what becomes due, and serve's
dashboard and API read (overview, list, search, a reminder, stats) and change (cancel) a queue.
"""

import json
import signal
from datetime import UTC, datetime
from urllib.parse import quote

import pytest

from tests.clirunner import Cli
from tests.e2e.test_worker import Running
from tests.servers import HttpSink
from tests.webserver import Served

pytestmark = pytest.mark.mysql


def test_the_worker_on_mysql_delivers_what_becomes_due_once(mysql_url: str) -> None:
    with HttpSink() as http:
        cli = Cli(mysql_url, datetime.now(UTC))
        assert cli("init").code == 0
        first = cli.add("--at", "now", "--webhook", http.url("/first"))
        worker = Running(mysql_url, "--every", "1s")
        assert "sent 1" in worker.wait_for("sent 1")
        # Added while it runs: found by a later poll, sent once.
        second = cli.add("--at", "now", "--webhook", http.url("/second"))
        worker.wait_for("sent 1")
        assert worker.stop(signal.SIGTERM) == 0
        worker.wait_for("worker: stopped by a signal")
    sent = sorted(json.loads(r.body)["data"]["reminder_id"] for r in http.requests)
    assert sent == [first, second]
    rows = {r["id"]: r["state"] for r in cli.inspect("--all")}
    assert rows == {first: "done", second: "done"}


def test_serve_on_mysql_reads_searches_and_changes_the_queue(mysql_url: str) -> None:
    with Served(mysql_url) as s:
        body = {"at": "+1d", "subject": "Quarterly report", "webhooks": ["https://r.example/in"]}
        added = s.fetch("POST", "/api/v1/reminders", json_body=body)
        assert added.status == 201, added.text
        rid = added.json()["id"]
        other = s.fetch("POST", "/api/v1/reminders", json_body={**body, "subject": "Rent"})
        assert other.status == 201, other.text

        overview = s.fetch("GET", "/")
        assert overview.status == 200 and "pending" in overview.text, overview.text
        stats = s.fetch("GET", "/api/v1/stats").json()
        assert stats["reminders"]["pending"] == 2
        for term in ("quarterly", "r.example/in"):
            found = s.fetch("GET", f"/api/v1/reminders?search={quote(term)}").json()["reminders"]
            assert [r["id"] for r in found] == ([rid] if term == "quarterly" else sorted(
                [rid, other.json()["id"]], reverse=True)), term  # fmt: skip
        page = s.fetch("GET", f"/reminders/{rid}")
        assert page.status == 200 and "Quarterly report" in page.text

        cancelled = s.fetch("POST", f"/api/v1/reminders/{rid}/cancel", json_body={})
        assert cancelled.status == 200, cancelled.text
        assert s.fetch("GET", f"/api/v1/reminders/{rid}").json()["state"] == "cancelled"
        assert s.fetch("GET", "/api/v1/stats").json()["reminders"]["pending"] == 1
