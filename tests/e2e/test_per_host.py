"""At most DUEQUEUE_WEBHOOK_PER_HOST webhooks in flight to one host:port (engine/endpoints.py).

Ticks run as real processes against real loopback receivers: a small http.server one, as an
operator's own receiver often is, and the recording HttpSink.
"""

import json
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import apsw
import pytest

from duequeue.channels.webhook import endpoint
from duequeue.config.settings import Settings
from duequeue.engine.endpoints import EndpointSlots
from duequeue.shared.timefmt import to_ms
from duequeue.store.records import NewReminder, NewTarget
from duequeue.store.sqlite import connect as open_sqlite
from tests.procs import LIMIT_S, reap, run_cli, spawn_cli
from tests.servers import LOOPBACK, HttpSink, Reply


@pytest.fixture(autouse=True)
def no_leftover_processes() -> Iterator[None]:
    yield
    reap()


def add_due(db: Path, urls: list[str]) -> None:
    """Add one one-shot per URL, due in that order (oldest first), each a webhook to its URL."""
    store = open_sqlite(db)
    try:
        due = to_ms(datetime.now(UTC)) - 3_600_000
        for i, url in enumerate(urls):
            at = due + i
            targets = (NewTarget("webhook", url),)
            store.add(NewReminder(f"r{i}", "", None, "UTC", at, at, targets), at)
    finally:
        store.close()


def outcomes(db: Path) -> list[tuple[str, str | None]]:
    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return [(str(o), e) for o, e in conn.execute("SELECT outcome, error FROM deliveries")]
    finally:
        conn.close()


# -- the endpoint of a URL, and the slots ------------------------------------------------------


def test_it_keys_an_endpoint_by_host_and_port_with_the_scheme_default() -> None:
    assert endpoint("http://Hooks.Example.com/a?x=1") == "hooks.example.com:80"
    assert endpoint("https://hooks.example.com/b") == "hooks.example.com:443"
    assert endpoint("https://user:pw@hooks.example.com:8443/") == "hooks.example.com:8443"
    assert endpoint("http://[::1]:9000/") == "::1:9000"


@pytest.mark.parametrize("url", ["ftp://example.com/", "http:///path", "http://h:99999/", "x"])
def test_it_leaves_a_url_it_cannot_read_unbounded(url: str) -> None:
    assert endpoint(url) is None


def test_a_job_finding_its_endpoint_full_is_parked_and_inherits_the_next_free_slot() -> None:
    slots: EndpointSlots[str] = EndpointSlots(2)

    assert slots.take("a:80", "a1") and slots.take("a:80", "a2")
    assert not slots.take("a:80", "a3")  # parked
    assert not slots.take("a:80", "a4")
    assert slots.take("b:80", "b1")  # another endpoint is not held up
    assert (slots.in_flight("a:80"), slots.parked()) == (2, 2)

    assert slots.done("a:80") == "a3"  # the finishing worker takes it over, slot and all
    assert slots.done("a:80") == "a4"
    assert (slots.in_flight("a:80"), slots.parked()) == (2, 0)
    assert slots.done("a:80") is None
    assert slots.done("a:80") is None
    assert slots.in_flight("a:80") == 0
    assert slots.take("a:80", "a5")


def test_a_per_endpoint_limit_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        EndpointSlots(0)


# -- a small receiver keeps up ----------------------------------------------------------------


class SmallReceiver(ThreadingHTTPServer):
    """Python's http.server as issue 12 met it: listen backlog 5 (the stdlib default), a thread
    and a connection per request (HTTP/1.0), `work` seconds of work per request. Counts the
    requests in flight at once: received and not yet answered."""

    daemon_threads = True

    def __init__(self, work: float) -> None:
        super().__init__((LOOPBACK, 0), _SmallHandler)
        self.work = work
        self.lock = threading.Lock()
        self.in_flight = 0
        self.peak = 0
        self.ids: list[str] = []
        self.stopping = threading.Event()

    def url(self) -> str:
        return f"http://{LOOPBACK}:{self.server_address[1]}/hook"


class _SmallHandler(BaseHTTPRequestHandler):
    server: SmallReceiver

    def do_POST(self) -> None:
        server = self.server
        with server.lock:
            server.in_flight += 1
            server.peak = max(server.peak, server.in_flight)
        try:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            server.stopping.wait(server.work)  # the receiver's own work on the event
        finally:
            # Out of flight before the answer goes out: once the client has it, it may send
            # the next request, whose thread may start before this one got to run again.
            with server.lock:
                server.in_flight -= 1
                server.ids.append(self.headers.get("webhook-id", ""))
        self.send_response(204)
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def small_receiver() -> Iterator[SmallReceiver]:
    server = SmallReceiver(work=0.02)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01})
    thread.start()
    try:
        yield server
    finally:
        server.stopping.set()
        server.shutdown()
        server.server_close()
        thread.join(5)


def test_a_tick_of_200_webhooks_to_a_small_receiver_stays_within_the_default_bound(
    db_path: Path, small_receiver: SmallReceiver
) -> None:
    default = Settings(db="unused").webhook_per_host
    assert default < Settings(db="unused").concurrency  # else this test would show nothing
    add_due(db_path, [small_receiver.url()] * 200)

    r = run_cli(db_path, "tick", "--json", env={"DUEQUEUE_TICK_LIMIT": "200"})

    assert r.returncode == 0, r.stderr
    summary = json.loads(r.stdout)
    assert (summary["sent"], summary["deliveries_failed"]) == (200, 0)
    assert outcomes(db_path) == [("sent", None)] * 200
    assert len(set(small_receiver.ids)) == 200
    assert small_receiver.peak <= default


def test_the_bound_is_a_setting(db_path: Path, small_receiver: SmallReceiver) -> None:
    add_due(db_path, [small_receiver.url()] * 40)

    r = run_cli(
        db_path,
        "tick",
        "--json",
        env={"DUEQUEUE_TICK_LIMIT": "40", "DUEQUEUE_WEBHOOK_PER_HOST": "2"},
    )

    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["sent"] == 40
    assert small_receiver.peak <= 2


@pytest.mark.parametrize(("value", "message"), [("0", "must be greater than 0"), ("many", "not a")])
def test_a_bad_per_host_bound_stops_the_tick_before_it_claims(
    db_path: Path, value: str, message: str
) -> None:
    add_due(db_path, ["http://127.0.0.1:9/hook"])

    r = run_cli(db_path, "tick", env={"DUEQUEUE_WEBHOOK_PER_HOST": value})

    # Like every invalid setting: exit 1, one line, nothing claimed or recorded.
    assert (r.returncode, r.stdout, r.stderr.count("\n")) == (1, "", 1)
    assert r.stderr.startswith("duequeue: error: DUEQUEUE_WEBHOOK_PER_HOST: ")
    assert message in r.stderr
    assert outcomes(db_path) == []


# -- one slow host does not hold up the others ------------------------------------------------


def test_workers_pass_over_a_full_slow_host_to_deliver_to_the_others(db_path: Path) -> None:
    with HttpSink() as slow, HttpSink() as fast:
        slow.respond("/hook", Reply(hold=True))
        # The slow host's rows come first in claim order, more of them than there are workers.
        add_due(db_path, [slow.url("/hook")] * 6 + [fast.url("/hook")] * 6)
        env = {"DUEQUEUE_CONCURRENCY": "4", "DUEQUEUE_WEBHOOK_PER_HOST": "2"}
        tick = spawn_cli(db_path, "tick", "--json", env=env)

        # Two workers hold the slow host's two slots; the other two go on past its rows.
        fast.wait_for_requests(6, timeout=LIMIT_S)
        slow.wait_for_requests(2, timeout=LIMIT_S)
        assert len(slow.requests) == 2
        slow.release()
        out, err = tick.communicate(timeout=LIMIT_S)

    assert tick.returncode == 0, err
    assert json.loads(out)["sent"] == 12
    assert len(slow.requests) == 6
