"""Faults of the outside world are data: each becomes a recorded failure with a useful message.

Ticks run as real processes (or through the engine where a later clock is needed) against real
loopback servers that stop, hang, reset, drip, redirect or never stop talking.
"""

import asyncio
import json
import queue
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import apsw
import pytest

from duequeue.channels.netguard import blocked_reason
from duequeue.config.settings import load_settings
from duequeue.engine.summary import TickSummary
from duequeue.operations.tick import run as run_tick
from duequeue.shared.timefmt import from_ms, to_ms
from duequeue.store.records import NewReminder, NewTarget
from duequeue.store.sqlite import connect as open_sqlite
from tests import rawserver
from tests.procs import LIMIT_S, reap, run_cli, spawn_cli
from tests.servers import HttpSink, Reply, SmtpSink

FROM = "reminders@example.com"


@pytest.fixture(autouse=True)
def no_leftover_processes() -> Iterator[None]:
    yield
    reap()


def add_due(db: Path, targets: list[tuple[str, str]], n: int = 1) -> list[int]:
    """Add `n` one-shots due a minute ago on the real clock, each with all `targets`."""
    store = open_sqlite(db)
    try:
        due = to_ms(datetime.now(UTC)) - 60_000
        ts = tuple(NewTarget(c, a) for c, a in targets)  # type: ignore[arg-type]
        return [
            store.add(NewReminder(f"r{i}", "b", None, "UTC", due, due, ts), due)[0]
            for i in range(n)
        ]
    finally:
        store.close()


def errors(db: Path) -> list[tuple[int, str, str | None]]:
    """Return (reminder, outcome, error) of every ledger row, in order."""
    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    conn.setbusytimeout(5000)  # a reader can meet a writer's brief WAL recovery
    try:
        rows = conn.execute("SELECT reminder_id, outcome, error FROM deliveries ORDER BY id")
        return [(int(r), str(o), e) for r, o, e in rows.fetchall()]
    finally:
        conn.close()


def tick_json(db: Path, env: dict[str, str] | None = None) -> dict[str, Any]:
    r = run_cli(db, "tick", "--json", env=env)
    assert r.returncode == 0, r.stderr
    assert r.stderr == ""
    summary: dict[str, Any] = json.loads(r.stdout)
    return summary


def tick_later(db: Path, seconds: float, env: dict[str, str] | None = None) -> TickSummary:
    """Run a tick through the engine the CLI uses, `seconds` after the real now."""
    settings = load_settings({"db": str(db)}, env=env or {})
    later = from_ms(to_ms(datetime.now(UTC)) + round(seconds * 1000))
    store = open_sqlite(db)
    try:
        return run_tick(store, settings, later, lambda: to_ms(later), None)
    finally:
        store.close()


class Lines:
    """Read a process's stderr on a thread so a test can wait for one line, bounded."""

    def __init__(self, proc: "subprocess.Popen[str]") -> None:
        self.lines: queue.Queue[str] = queue.Queue()
        assert proc.stderr is not None
        stream = proc.stderr
        threading.Thread(target=lambda: [self.lines.put(x) for x in stream], daemon=True).start()

    def wait_for(self, fragment: str) -> str:
        deadline = time.monotonic() + LIMIT_S
        while (left := deadline - time.monotonic()) > 0:
            try:
                line = self.lines.get(timeout=left)
            except queue.Empty:
                break
            if fragment in line:
                return line
        raise AssertionError(f"no stderr line with {fragment!r}")


# -- graceful stop ------------------------------------------------------------------------------


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_stop_signal_finishes_the_delivery_in_flight_releases_the_rest_and_dies_by_it(
    db_path: Path, http: HttpSink, sig: signal.Signals
) -> None:
    http.respond("/first", Reply(200, hold=True))
    first = add_due(db_path, [("webhook", http.url("/first"))])[0]
    rest = add_due(db_path, [("webhook", http.url("/rest"))], n=3)
    # One webhook at a time: the held one is in flight, the other three wait their turn.
    proc = spawn_cli(db_path, "tick", "--json", env={"DUEQUEUE_CONCURRENCY": "1"})
    stderr = Lines(proc)
    http.wait_for_requests(1, timeout=LIMIT_S)
    proc.send_signal(sig)
    stderr.wait_for(f"duequeue: {sig.name}: stopping")
    http.release()  # the receiver answers the request that was in flight
    out, _ = proc.communicate(timeout=LIMIT_S)

    assert proc.returncode == -sig  # died by the signal, after writing everything back
    summary = json.loads(out)
    assert summary["stopped_by"] == sig.name
    assert (summary["claimed"], summary["sent"], summary["released"]) == (4, 1, 3)
    assert errors(db_path) == [(first, "sent", None)]
    assert [r.path for r in http.requests] == ["/first"]

    # Released, not leased: the next tick takes them at once; the finished one is not resent.
    assert tick_json(db_path)["sent"] == 3
    assert sorted(r for r, o, _ in errors(db_path) if o == "sent") == [first, *rest]
    assert len(http.requests_for("/first")) == 1


def test_a_target_that_failed_in_a_tick_stopped_short_waits_out_its_backoff_and_counts_the_try(
    db_path: Path, http: HttpSink
) -> None:
    http.respond("/down", Reply(503))
    http.respond("/held", Reply(200, hold=True))
    targets = [("webhook", http.url(p)) for p in ("/down", "/held", "/later")]
    (rid,) = add_due(db_path, targets)
    # One webhook at a time: /down fails, /held is in flight, /later waits its turn.
    proc = spawn_cli(db_path, "tick", "--json", env={"DUEQUEUE_CONCURRENCY": "1"})
    stderr = Lines(proc)
    http.wait_for_requests(2, timeout=LIMIT_S)
    proc.send_signal(signal.SIGTERM)
    stderr.wait_for("duequeue: SIGTERM: stopping")
    http.release()
    out, _ = proc.communicate(timeout=LIMIT_S)
    summary = json.loads(out)
    assert (summary["released"], summary["deliveries_sent"], summary["deliveries_failed"]) == (
        1,
        1,
        1,
    )

    # The next tick, at once: /later goes out, /held is not sent again, and /down, whose
    # failure the stopped tick recorded, waits out its backoff instead of being tried again.
    again = tick_json(db_path)
    assert (again["partial"], again["deliveries_sent"], again["deliveries_failed"]) == (1, 1, 0)
    assert [len(http.requests_for(p)) for p in ("/down", "/held", "/later")] == [1, 1, 1]
    # A minute on, /down's own retry is its second try, numbered so.
    later = tick_later(db_path, 61)
    assert (later.target_retries, later.deliveries_failed) == (1, 1)
    attempts = [(r, o) for r, o, _ in errors(db_path) if o != "sent"]
    assert attempts == [(rid, "failed"), (rid, "failed")]
    conn = apsw.Connection(str(db_path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        numbers = conn.execute(
            "SELECT attempt FROM deliveries WHERE outcome = 'failed' ORDER BY id"
        ).fetchall()
    finally:
        conn.close()
    assert numbers == [(1,), (2,)]


def test_a_second_stop_signal_abandons_the_delivery_in_flight_and_releases_every_row(
    db_path: Path, http: HttpSink
) -> None:
    http.respond("/first", Reply(200, hold=True))  # held until the sink closes: never answered
    add_due(db_path, [("webhook", http.url("/first"))])
    add_due(db_path, [("webhook", http.url("/rest"))], n=2)
    proc = spawn_cli(db_path, "tick", "--json", env={"DUEQUEUE_CONCURRENCY": "1"})
    stderr = Lines(proc)
    http.wait_for_requests(1, timeout=LIMIT_S)
    proc.send_signal(signal.SIGTERM)
    stderr.wait_for("deliveries in flight finish")
    proc.send_signal(signal.SIGTERM)
    stderr.wait_for("deliveries in flight are abandoned")
    out, _ = proc.communicate(timeout=LIMIT_S)

    assert proc.returncode == -signal.SIGTERM
    summary = json.loads(out)
    assert (summary["stopped_by"], summary["sent"], summary["released"]) == ("SIGTERM", 0, 3)
    assert errors(db_path) == []  # nothing recorded: the abandoned send's fate is unknown
    http.respond("/first", Reply(200))
    assert tick_json(db_path)["sent"] == 3  # released, so taken at once; no lease to wait out
    first = http.requests_for("/first")
    assert len(first) == 2  # the at-least-once window, with one webhook-id for the receiver
    assert first[0].headers["webhook-id"] == first[1].headers["webhook-id"]


# -- SMTP ------------------------------------------------------------------------------------------


def test_an_smtp_server_stopped_mid_tick_fails_the_rest_and_a_later_tick_delivers_them(
    db_path: Path,
) -> None:
    with SmtpSink(hold={"c@example.com"}) as smtp:
        env = {"DUEQUEUE_SMTP_URL": smtp.url, "DUEQUEUE_EMAIL_FROM": FROM}
        ids = [add_due(db_path, [("email", f"{x}@example.com")])[0] for x in "abcde"]
        proc = spawn_cli(db_path, "tick", "--json", env=env)
        # Emails go out one at a time, oldest row first: a and b are accepted, then c's data
        # arrives and is never answered.
        smtp.wait_for_data_attempts(3, timeout=LIMIT_S)
        assert len(smtp.messages) == 2
        smtp.stop()  # the server dies with c in flight; d and e find it gone
        out, err = proc.communicate(timeout=LIMIT_S)
        assert proc.returncode == 0, err
        summary = json.loads(out)
        assert (summary["sent"], summary["retried"]) == (2, 3)
        outcome = {r: (o, e) for r, o, e in errors(db_path)}
        assert outcome[ids[2]][0] == "failed"
        assert "(during DATA; delivery unknown)" in str(outcome[ids[2]][1])
        refused = f"SMTP connection refused ({smtp.url.removeprefix('smtp://')})"
        assert {str(outcome[i][1]) for i in ids[3:]} == {refused}

        smtp.hold = frozenset()
        smtp.start()
        assert tick_later(db_path, 61, env).sent == 3  # after the 1-minute backoff
        received = [m["To"] for m in smtp.messages]
    assert sorted(received) == [f"{x}@example.com" for x in "abcde"]


def test_an_smtp_server_that_drips_its_replies_is_cut_at_the_channel_timeout(
    db_path: Path,
) -> None:
    # Each byte comes well inside the socket timeout, so only a whole-attempt bound stops it.
    drip = rawserver.drip(b"220-", b"slow greeting\r\n220-", 0.02, http=False)
    with rawserver.RawServer(drip) as server:
        add_due(db_path, [("email", "a@example.com")])
        env = {
            "DUEQUEUE_SMTP_URL": server.url("smtp", ""),
            "DUEQUEUE_EMAIL_FROM": FROM,
            "DUEQUEUE_CHANNEL_TIMEOUT": "0.5",
        }
        started = time.monotonic()
        summary = tick_json(db_path, env)
        elapsed = time.monotonic() - started
    assert summary["retried"] == 1
    [(_, outcome, error)] = errors(db_path)
    assert (outcome, error) == ("failed", f"SMTP timeout after 0.5s (127.0.0.1:{server.port})")
    # A drip never ends by itself: without the whole-attempt bound this tick would not end.
    assert elapsed < 10


def test_an_smtp_server_that_is_down_or_unknown_is_a_recorded_failure(db_path: Path) -> None:
    add_due(db_path, [("email", "a@example.com")])
    for hours, url, expected in (
        (1, "smtp://127.0.0.1:9", "SMTP connection refused (127.0.0.1:9)"),
        (2, "smtp://nonexistent.invalid", "SMTP host lookup failed for nonexistent.invalid"),
    ):
        env = {"DUEQUEUE_SMTP_URL": url, "DUEQUEUE_EMAIL_FROM": FROM}
        summary = tick_later(db_path, hours * 3600, env)  # past the backoff of the last try
        assert summary.retried + summary.dead == 1
        assert str(errors(db_path)[-1][2]).startswith(expected)


# -- webhooks ----------------------------------------------------------------------------------


def webhook_fault(db: Path, url: str, env: dict[str, str] | None = None) -> tuple[str, str]:
    add_due(db, [("webhook", url)])
    tick_json(db, {"DUEQUEUE_CHANNEL_TIMEOUT": "0.5", **(env or {})})
    [(_, outcome, error)] = errors(db)
    return outcome, str(error)


def test_a_dns_failure_of_a_webhook_host_is_a_recorded_failure(db_path: Path) -> None:
    outcome, error = webhook_fault(db_path, "http://nonexistent.invalid/hook")
    assert outcome == "failed"
    assert error.startswith("DNS lookup failed")


def test_a_connection_reset_is_a_recorded_failure(db_path: Path) -> None:
    with rawserver.RawServer(rawserver.reset) as server:
        outcome, error = webhook_fault(db_path, server.url())
    assert (outcome, error) == ("failed", "connection reset by peer")


def test_a_response_dripped_a_byte_at_a_time_is_cut_at_the_timeout(db_path: Path) -> None:
    # Headers that never end, a byte every 20 ms: each read succeeds, the attempt never would.
    # (A 2xx whose body drips counts as sent: the receiver took the event; test_webhook_channel.)
    drip = rawserver.drip(b"HTTP/1.1 500 Oops\r\n", b"X-Slow: yes\r\n", 0.02)
    with rawserver.RawServer(drip) as server:
        started = time.monotonic()
        outcome, error = webhook_fault(db_path, server.url())
        elapsed = time.monotonic() - started
    assert (outcome, error) == ("failed", "response timeout after 0.5s (delivery unknown)")
    assert elapsed < 10  # the drip never ends by itself


def test_an_enormous_response_body_is_read_only_up_to_the_cap(db_path: Path) -> None:
    head = b"HTTP/1.1 500 Oops\r\nContent-Length: 1073741824\r\n\r\n"
    with rawserver.RawServer(rawserver.endless(head)) as server:
        started = time.monotonic()
        outcome, error = webhook_fault(db_path, server.url())
        elapsed = time.monotonic() - started
    assert outcome == "failed"
    assert error.startswith("HTTP 500: xxxx")
    assert len(error) < 300
    assert elapsed < 10  # a gigabyte was offered, as fast as it could be taken; 64 KiB were read


def test_a_redirect_loop_is_not_followed(db_path: Path, http: HttpSink) -> None:
    http.respond("/loop", Reply(302, headers={"Location": http.url("/loop")}))
    outcome, error = webhook_fault(db_path, http.url("/loop"))
    assert (outcome, error) == ("failed", "HTTP 302 redirect not followed")
    assert len(http.requests) == 1


def test_a_hung_receiver_is_cut_at_the_timeout(db_path: Path, http: HttpSink) -> None:
    http.respond("/hang", Reply(hang=True))
    outcome, error = webhook_fault(db_path, http.url("/hang"))
    assert (outcome, error) == ("failed", "response timeout after 0.5s (delivery unknown)")


def test_a_receiver_that_never_accepts_is_a_connect_timeout_with_nothing_sent(
    db_path: Path,
) -> None:
    with rawserver.never_accepts() as url:
        outcome, error = webhook_fault(db_path, url)
    assert (outcome, error) == ("failed", "connect timeout after 0.5s (nothing sent)")


def test_a_tick_against_every_slow_server_at_once_ends_well_inside_its_lease(
    db_path: Path, http: HttpSink
) -> None:
    http.respond("/hang", Reply(hang=True))
    smtp_drip = rawserver.drip(b"220-", b"x\r\n220-", 0.02, http=False)
    http_drip = rawserver.drip(b"HTTP/1.1 500 Oops\r\n", b"X: y\r\n", 0.02)
    with rawserver.RawServer(smtp_drip) as smtp, rawserver.RawServer(http_drip) as slow:
        targets = [
            ("webhook", http.url("/hang")),
            ("webhook", slow.url()),
            ("email", "a@example.com"),
            ("email", "b@example.com"),
        ]
        add_due(db_path, targets, n=3)
        env = {
            "DUEQUEUE_SMTP_URL": smtp.url("smtp", ""),
            "DUEQUEUE_EMAIL_FROM": FROM,
            "DUEQUEUE_CHANNEL_TIMEOUT": "0.3",
            "DUEQUEUE_TICK_BUDGET": "1",
        }
        # In-process, so that only the tick is timed, not an interpreter starting up.
        started = time.monotonic()
        result = tick_later(db_path, 0, env)
        elapsed = time.monotonic() - started
    settings = load_settings({"db": str(db_path)}, env=env)
    # No delivery starts after the budget and each attempt, email included, ends within the
    # timeout; closing SMTP takes one more. That is the arithmetic the lease is built on.
    assert elapsed < settings.tick_budget + 2 * settings.channel_timeout + 1
    assert elapsed * 1000 < settings.lease_ms
    summary = result.as_json()
    assert summary["claimed"] == 3
    assert summary["retried"] + summary["released"] == 3


def test_the_default_lease_is_the_documented_325_seconds() -> None:
    from duequeue.engine.tick import TickOptions

    settings = load_settings({"db": "unused.db"}, env={})
    assert settings.lease_ms == (50 + 20 * 10 + 3 * 5 + 60) * 1000 == 325_000
    assert TickOptions().lease_ms == settings.lease_ms  # the library default agrees


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("DUEQUEUE_WEBHOOK_BLOCK_PRIVATE", "maybe", "is not a yes/no value"),
        ("DUEQUEUE_BUSY_TIMEOUT", "0", "must be greater than 0"),
    ],
)
def test_a_bad_safety_setting_stops_the_tick_before_it_claims(
    db_path: Path, name: str, value: str, message: str
) -> None:
    add_due(db_path, [("webhook", "http://127.0.0.1:9/")])
    r = run_cli(db_path, "tick", env={name: value})
    assert (r.returncode, r.stderr.count("\n")) == (1, 1)
    assert r.stderr.startswith(f"duequeue: error: {name}: ")
    assert message in r.stderr
    assert errors(db_path) == []


# -- a locked database mid-tick ----------------------------------------------------------------


def test_a_database_locked_mid_tick_keeps_the_outcome_and_records_it_once_the_lock_goes(
    db_path: Path, http: HttpSink
) -> None:
    http.respond("/r", Reply(200, hold=True))
    [rid] = add_due(db_path, [("webhook", http.url("/r"))])
    proc = spawn_cli(db_path, "tick", "--json", env={"DUEQUEUE_BUSY_TIMEOUT": "0.2"})
    http.wait_for_requests(1, timeout=LIMIT_S)
    lock = apsw.Connection(str(db_path))
    lock.execute("BEGIN EXCLUSIVE")  # taken while the delivery is in flight
    try:
        http.release()
        # The condition under test, not a wait for a race: the lock outlasts the busy timeout
        # several times over, so the tick's first attempts to record the outcome fail.
        time.sleep(1.5)
    finally:
        lock.execute("ROLLBACK")
        lock.close()
    out, err = proc.communicate(timeout=LIMIT_S)
    assert (proc.returncode, err) == (0, "")
    assert json.loads(out)["sent"] == 1
    assert errors(db_path) == [(rid, "sent", None)]  # kept, tried again, recorded once
    assert tick_later(db_path, 60).claimed == 0
    assert len(http.requests) == 1


# -- private addresses -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("address", "reason"),
    [
        ("127.0.0.1", "a loopback address"),
        ("::1", "a loopback address"),
        ("10.1.2.3", "a private address"),
        ("172.16.0.1", "a private address"),
        ("192.168.1.1", "a private address"),
        ("fd12:3456::1", "a private address"),
        ("169.254.169.254", "a cloud metadata address"),
        ("fd00:ec2::254", "a cloud metadata address"),
        ("169.254.1.1", "a link-local address"),
        ("fe80::1", "a link-local address"),
        ("100.64.0.1", "a shared (CGNAT) address"),
        ("224.0.0.1", "a multicast address"),
        ("ff02::1", "a multicast address"),
        ("0.0.0.0", "the unspecified address"),
        ("::", "the unspecified address"),
        ("::ffff:127.0.0.1", "a loopback address"),
        ("::ffff:169.254.169.254", "a cloud metadata address"),
        ("64:ff9b::a00:1", "a private address"),
        ("2002:c0a8:101::1", "a private address"),
        ("240.0.0.1", "a reserved address"),
        ("93.184.215.14", None),
        ("2606:4700::1111", None),
    ],
)
def test_it_classifies_addresses_for_the_private_block(address: str, reason: str | None) -> None:
    assert blocked_reason(address) == reason


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
def test_with_the_private_block_on_a_loopback_webhook_is_refused_before_any_request(
    db_path: Path, http: HttpSink, host: str
) -> None:
    # `localhost` is a name: the check is on the address actually connected to.
    url = http.url("/r").replace("127.0.0.1", host)
    outcome, error = webhook_fault(db_path, url, {"DUEQUEUE_WEBHOOK_BLOCK_PRIVATE": "true"})
    assert outcome == "permanent"
    assert error.endswith("a loopback address; refused by DUEQUEUE_WEBHOOK_BLOCK_PRIVATE")
    assert http.requests == []


def test_without_the_private_block_loopback_webhooks_are_delivered(
    db_path: Path, http: HttpSink
) -> None:
    assert webhook_fault(db_path, http.url("/r")) == ("sent", "None")


def test_the_private_block_check_runs_on_the_channel_in_process(http: HttpSink) -> None:
    from duequeue.channels.base import Message
    from duequeue.channels.webhook_sender import WebhookChannel

    msg = Message(1, datetime(2027, 1, 1, tzinfo=UTC), "s", "b", None, "dq_1_0_1")

    async def send() -> tuple[str, str | None]:
        async with WebhookChannel(secret=None, timeout=2, block_private=True) as channel:
            outcome = await channel.send(msg, http.url("/r"))
        return outcome.status, outcome.error

    status, error = asyncio.run(send())
    assert status == "permanent"
    assert "127.0.0.1, a loopback address" in str(error)
    assert http.requests == []
