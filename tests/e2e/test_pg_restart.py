"""A tick whose PostgreSQL backend goes away mid-tick, as at a `pg_ctl restart -m fast` (issue 26).

The backend is terminated while the tick's sends are in flight: the tick reconnects and carries
on, and psycopg's cleanup warnings ("error ignored terminating <psycopg.Pipeline [BAD]>") never
reach stderr. A backend terminated inside a pipeline used to leave the connection stuck in
pipeline mode, not marked broken: every later commit failed "busy" until the lease's margin.
"""

import subprocess
from collections.abc import Iterator

import pytest

from duequeue.store.postgres import connect as open_postgres
from duequeue.store.records import NewReminder, NewTarget
from duequeue.store.store import Store
from tests.pg import admin_connect
from tests.procs import LIMIT_S, cli_args, cli_env
from tests.servers import HttpSink


@pytest.fixture
def store(pg_url: str) -> Iterator[Store]:
    s = open_postgres(pg_url)
    yield s
    s.close()


def add(store: Store, url: str, at: int) -> int:
    target = (NewTarget("webhook", url),)
    return store.add(NewReminder("s", "b", None, "UTC", at, at, target), at)[0]


@pytest.mark.parametrize("round_", range(3))
def test_a_tick_whose_backend_is_terminated_mid_tick_carries_on_quietly(
    pg_url: str, store: Store, http: HttpSink, round_: int
) -> None:
    # What a `pg_ctl restart -m fast` does to a tick (issue 26): its backend terminated while
    # its sends are in flight. The tick reconnects and goes on (or fails in one line); psycopg's
    # "error ignored terminating <psycopg.Pipeline [BAD]>" never reaches stderr.
    now = store.server_ms()
    assert now is not None
    for i in range(30):
        add(store, http.url(f"/{i}"), now - 1_000)
    proc = subprocess.Popen(
        cli_args("tick"),
        env=cli_env(pg_url),
        stdout=subprocess.PIPE,  # type: ignore[arg-type]
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        http.wait_for_requests(1, timeout=LIMIT_S)
        with admin_connect(pg_url) as admin:
            admin.execute(
                """SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                   WHERE application_name = 'duequeue' AND datname = current_database()
                     AND pid <> pg_backend_pid()"""
            )
        out, err = proc.communicate(timeout=LIMIT_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert "psycopg" not in err and "Traceback" not in err, err
    assert len(err.splitlines()) <= 1, err
    assert out.startswith("tick: claimed 30: sent 30"), out
    assert proc.returncode == 0
    ids = [r.headers["webhook-id"] for r in http.requests]
    assert len(ids) == len(set(ids))  # nothing sent twice
