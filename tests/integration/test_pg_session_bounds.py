"""What bounds a PostgreSQL wait whatever the URL says, and what frees a frozen client's rows
(issue 30, items 1 and 2), on the real server.

- A reconnect under way is bounded by the tick's deadline (Store.bound), not by the URL's
  `connect_timeout`: through a FreezeProxy (tests/freezeproxy.py) a connect is accepted and
  never answered, the hang a cut link gives a reconnect. So is a statement on the tick's own
  thread (its first claim) that a frozen link never answers.
- A client frozen mid-transaction (SIGSTOP: its kernel still answers every TCP keepalive, so no
  TCP timeout ends the session) holds its row locks only as long as the session it opened
  allows: its own idle_in_transaction_session_timeout, set at connect, with the server at its
  defaults.
"""

import os
import signal
import subprocess
import sys
import threading
import time
from typing import Any

import pytest

from duequeue.engine.tick import TickOptions, tick
from duequeue.errors import StoreError
from duequeue.store.postgres import PostgresBackend
from duequeue.store.postgres import connect as open_postgres
from duequeue.store.records import NewReminder, NewTarget
from tests.freezeproxy import FreezeProxy
from tests.paths import ROOT
from tests.pg import admin_connect

BUSY_S = 1.0  # the session's idle_in_transaction_session_timeout is this + 2 s


def test_a_reconnect_under_way_ends_by_the_deadline_whatever_the_url_asks(pg_url: str) -> None:
    with FreezeProxy.to_url(pg_url) as proxy:
        backend = PostgresBackend(proxy.url(pg_url) + "?connect_timeout=60", BUSY_S)
        try:
            proxy.freeze()
            backend.conn.close()  # the link is lost: the next transaction reconnects
            until = time.monotonic() + 3.5
            backend.bound(until)
            with pytest.raises(StoreError, match="could not reconnect"):
                backend.transact_cursor(
                    lambda cur: cur.execute("SELECT 1"), what="a read", repeatable=True
                )
            ended = time.monotonic()
            # Before: the reconnect waited its URL's 60 s. Now the connect gets the whole
            # seconds left (3) and ends before the deadline.
            assert ended <= until, ended - until
            # With less than psycopg's 2 s floor left, no connect is started at all.
            backend.bound(time.monotonic() + 1)
            started = time.monotonic()
            with pytest.raises(StoreError, match="no time left before the tick's deadline"):
                backend.transact_cursor(
                    lambda cur: cur.execute("SELECT 1"), what="a read", repeatable=True
                )
            assert time.monotonic() - started < 1
        finally:
            backend.close()


def test_a_first_claim_on_a_link_that_never_answers_ends_by_the_deadline(pg_url: str) -> None:
    # Before the delivery stage (whose commits and claims the tick cuts at its deadline) come
    # the tz check and the first claim, on the tick's own thread: a link that takes the bytes
    # and never answers (no TCP timeout fires) held them forever.
    lease_ms = 8_000  # the deadline: lease - (busy timeout + 5 s) = 2 s after the tick starts
    with FreezeProxy.to_url(pg_url) as proxy:
        store = open_postgres(proxy.url(pg_url), busy_timeout_s=BUSY_S)
        now = time.time_ns() // 1_000_000
        target = (NewTarget("webhook", "https://hooks.example.com/r"),)
        store.add(NewReminder("s", "b", None, "UTC", now - 1000, now - 1000, target), now)
        proxy.freeze()
        done: list[BaseException] = []

        def run() -> None:
            try:
                tick(store, now, TickOptions(lease_ms=lease_ms, busy_timeout_s=BUSY_S), clock)
            except BaseException as exc:
                done.append(exc)

        def clock() -> int:
            return time.time_ns() // 1_000_000

        started = time.monotonic()
        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        thread.join(timeout=20)  # far past the deadline; the lease ends at 8 s
        took = time.monotonic() - started
        try:
            assert not thread.is_alive(), "the tick still waits on the frozen link"
            assert took < lease_ms / 1000, took
            assert isinstance(done[0], StoreError), done
            assert "before the tick's deadline" in str(done[0])
        finally:
            store.close()


# The frozen client: opens duequeue's PostgreSQL backend, locks every row of `held` in one
# transaction, says so, and stops itself (SIGSTOP) mid-transaction.
_FROZEN = """
import os, signal, sys
from duequeue.store.postgres import PostgresBackend
backend = PostgresBackend(sys.argv[1], float(sys.argv[2]))
def lock(cur):
    cur.execute("SELECT id FROM side.held FOR UPDATE")
    print(len(cur.fetchall()), flush=True)
    os.kill(os.getpid(), signal.SIGSTOP)
backend.transact_cursor(lock, what="holding the rows", repeatable=False)
"""


def free_rows(url: str) -> int:
    """Rows of `held` nobody holds now (what a claim with SKIP LOCKED could take)."""
    with admin_connect(url) as conn, conn.transaction():
        return len(conn.execute("SELECT id FROM side.held FOR UPDATE SKIP LOCKED").fetchall())


def test_a_frozen_clients_rows_come_free_within_its_sessions_bound(pg_url: str) -> None:
    with admin_connect(pg_url) as conn:
        # Outside the schema duequeue opens (a foreign table there would be refused).
        conn.execute("CREATE SCHEMA IF NOT EXISTS side")
        conn.execute("DROP TABLE IF EXISTS side.held")
        conn.execute("CREATE TABLE side.held (id int PRIMARY KEY)")
        conn.execute("INSERT INTO side.held SELECT generate_series(1, 5)")
        server: Any = conn.execute(
            "SELECT setting FROM pg_settings WHERE name = 'idle_in_transaction_session_timeout'"
        ).fetchone()
    assert server == ("0",)  # the server at its default: it never ends an idle transaction
    proc = subprocess.Popen(
        [sys.executable, "-c", _FROZEN, pg_url, str(BUSY_S)],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()
        assert line == "5", proc.stderr.read() if proc.stderr else line  # locked, stopping
        frozen_at = time.monotonic()
        assert free_rows(pg_url) == 0
        # Waited for by the rows' state; 20 s is far past the bound (3 s) and far short of
        # what a server at its defaults gives a frozen client (forever).
        while free_rows(pg_url) < 5:
            assert time.monotonic() - frozen_at < 20, "the frozen client's rows stayed locked"
            time.sleep(0.2)
        freed_after = time.monotonic() - frozen_at
        print(f"a frozen client's rows came free after {freed_after:.1f} s")
        assert freed_after < BUSY_S + 2 + 5, freed_after
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=10)
