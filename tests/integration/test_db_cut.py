"""A tick cut off from PostgreSQL in the middle of its sends (issue 26).

The cut is a FreezeProxy (tests/freezeproxy.py) between the tick and the server: from the moment
the receiver takes the fifth webhook, nothing reaches the server and nothing comes back, while
the proxy's kernel keeps acknowledging, so no TCP timeout helps. The tick must start no new send
it could not record, return before its lease ends, say how many sends it could not record, and a
tick after the lease must send again exactly those, with the same webhook-id.
"""

import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from duequeue.config.settings import Settings
from duequeue.engine.tick import HelperOptions, TickOptions, tick
from duequeue.errors import DatabaseLostError
from duequeue.store.postgres import connect as open_postgres
from duequeue.store.records import NewReminder, NewTarget
from duequeue.store.store import Store
from tests.freezeproxy import FreezeProxy
from tests.pg import admin_connect
from tests.procs import LIMIT_S

ROWS = 12
FREEZE_AT = 5  # the receiver cuts the database link when this request arrives
LEASE_MS = 10_000
BUSY_S = 0.2  # the stall bound is this + 1 s, the deadline the lease - this - 5 s
CHANNEL_TIMEOUT_S = 3.0  # longer than the stall bound: the send started before it times out


def real_now() -> int:
    return time.time_ns() // 1_000_000


class Receiver:
    """Webhook receiver: records each request's webhook-id; at request FREEZE_AT, once the
    ledger holds the sends before it, freezes the proxy (and answers); holds every later
    request until released (its send times out)."""

    def __init__(self, proxy: FreezeProxy | None, pg_url: str = "") -> None:
        self.ids: list[str] = []
        self.go = threading.Event()
        lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length", 0)))
                with lock:
                    receiver.ids.append(self.headers["webhook-id"])
                    count = len(receiver.ids)
                if proxy is not None and count == FREEZE_AT:
                    receiver.wait_for_ledger(pg_url, FREEZE_AT - 1)
                    proxy.freeze()
                elif proxy is not None and proxy.frozen.is_set():
                    receiver.go.wait(LIMIT_S)
                self.send_response(200)
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}{path}"

    @staticmethod
    def wait_for_ledger(pg_url: str, rows: int) -> None:
        """Wait (bounded) until the ledger holds `rows` rows: the cut then comes between
        recorded sends and unrecorded ones, as in issue 26."""
        with admin_connect(pg_url) as conn:
            deadline = time.monotonic() + LIMIT_S
            while conn.execute("SELECT count(*) FROM deliveries").fetchone() != (rows,):
                assert time.monotonic() < deadline, "the tick recorded nothing"
                time.sleep(0.01)  # polling the condition, not waiting out a race

    def __enter__(self) -> "Receiver":
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.go.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def direct(pg_url: str) -> Iterator[Store]:
    store = open_postgres(pg_url)
    yield store
    store.close()


def add_rows(store: Store, receiver: Receiver, at: int) -> list[int]:
    ids = []
    for i in range(ROWS):
        target = (NewTarget("webhook", receiver.url(f"/{i}")),)
        ids.append(store.add(NewReminder("s", "b", None, "UTC", at, at, target), at)[0])
    return ids


def recorded_ids(store: Store, rids: list[int]) -> dict[str, list[str]]:
    """Return the webhook-ids of the ledger's rows, by outcome."""
    from duequeue.channels.base import delivery_id

    found: dict[str, list[str]] = {}
    for rid in rids:
        for d in store.deliveries(rid):
            found.setdefault(d.outcome, []).append(delivery_id(rid, d.fire_at, d.target_id))
    return found


def options(helper_db: str | None = None) -> TickOptions:
    return TickOptions(
        lease_ms=LEASE_MS,
        busy_timeout_s=BUSY_S,
        channel_timeout=CHANNEL_TIMEOUT_S,
        webhook_concurrency=1,
        webhook_per_host=1,
        # With a database, the commits move to a helper process from the first claim on
        # (engine/helper.py), which reaches the database through the same cut link.
        commit_helper=None if helper_db is None else HelperOptions(helper_db, BUSY_S, 1),
    )


@pytest.mark.parametrize("helper", [False, True], ids=["thread", "helper"])
def test_a_tick_cut_from_the_database_stops_sending_and_returns_before_its_lease(
    pg_url: str, direct: Store, helper: bool
) -> None:
    with FreezeProxy.to_url(pg_url) as proxy, Receiver(proxy, pg_url) as r:
        now = real_now()
        rids = add_rows(direct, r, now - 1000)
        cut = open_postgres(proxy.url(pg_url), busy_timeout_s=BUSY_S)
        started = time.monotonic()
        try:
            with pytest.raises(DatabaseLostError) as lost:
                tick(cut, now, options(proxy.url(pg_url) if helper else None), real_now)
        finally:
            took = time.monotonic() - started
            cut.close()
        r.go.set()
        summary = lost.value.summary
        assert took < LEASE_MS / 1000, took  # the bound under test, not a race
        first = list(r.ids)
        # The send after the fifth had started before the commit stalled; none after it.
        assert len(first) == FREEZE_AT + 1, (first, summary.line())
        recorded = recorded_ids(direct, rids)
        in_ledger = {i for ids in recorded.values() for i in ids}
        missing = [i for i in first if i not in in_ledger]
        assert missing  # what the cut kept out of the ledger ...
        assert summary.lost is not None and summary.unrecorded >= len(missing), summary.line()
        assert summary.deliveries_sent + summary.deliveries_failed == len(first)
        assert "unrecorded" in summary.line()

        # After the lease, another tick sends again only what could not be recorded, with the
        # same webhook-id; recorded sends are not repeated.
        again = tick(direct, now + LEASE_MS + 1, options(), real_now)
        assert again.lost is None, again.line()
        resent = r.ids[len(first) :]
        assert sorted(set(resent) & set(first)) == sorted(missing)
        assert len(set(r.ids)) == ROWS and len(resent) == ROWS - len(first) + len(missing)
        assert [v.state for v in direct.list_view("all", now + LEASE_MS + 1)] == ["done"] * ROWS


def test_the_cli_says_in_one_line_how_many_sends_it_could_not_record_and_exits_1(
    pg_url: str,
    direct: Store,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from duequeue.cli import context

    monkeypatch.setattr(Settings, "lease_ms", property(lambda self: LEASE_MS))
    for name, value in (
        ("BUSY_TIMEOUT", BUSY_S),
        ("CHANNEL_TIMEOUT", CHANNEL_TIMEOUT_S),
        ("CONCURRENCY", 1),
        ("WEBHOOK_PER_HOST", 1),
    ):
        monkeypatch.setenv(f"DUEQUEUE_{name}", str(value))
    with FreezeProxy.to_url(pg_url) as proxy, Receiver(proxy, pg_url) as r:
        add_rows(direct, r, real_now() - 1000)
        with pytest.raises(SystemExit) as exited:
            context.run_tick(proxy.url(pg_url), None, None, False)
        r.go.set()
    assert exited.value.code == 1
    out, err = capsys.readouterr()
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("tick: lost the database mid-tick; "), err
    assert "could not be recorded and may be sent again by another host after lease expiry" in err
    assert out.startswith("tick: claimed 12: ") and "unrecorded" in out, out
