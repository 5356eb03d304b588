"""The libpq parameters that bound every wait of duequeue's PostgreSQL connections (issue 26),
the session's bounds on the server (issue 30 item 2), the clamped connect timeout (item 1)."""

import logging

import pytest

pytest.importorskip("psycopg")

from duequeue.store.postgres import connect_timeout, timeouts

SERVER_TCP = "-c tcp_keepalives_idle=5 -c tcp_keepalives_interval=2 -c tcp_keepalives_count=3"


def test_it_bounds_every_wait_below_the_lease_by_default() -> None:
    found = timeouts("postgresql://u@db.internal/q", busy_timeout_s=5.0)
    assert found == {
        "keepalives": "1",
        "keepalives_idle": "5",
        "keepalives_interval": "2",
        "keepalives_count": "3",
        "tcp_user_timeout": "15000",
        "options": "-c lock_timeout=5000 -c statement_timeout=30000"
        " -c idle_in_transaction_session_timeout=7000 " + SERVER_TCP + " -c tcp_user_timeout=15000",
    }


def test_a_cut_clients_open_transaction_ends_before_a_ticks_margin() -> None:
    # The tick stops waiting busy timeout + 5 s before its leases end; the server ends a
    # session idle in a transaction sooner, so a commit cut then frees its rows in the lease.
    for busy in (1.0, 5.0, 30.0):
        options = timeouts("postgresql://u@db/q", busy_timeout_s=busy)["options"]
        idle = int(options.split("idle_in_transaction_session_timeout=")[1].split()[0])
        assert idle < (busy + 5) * 1000


def test_it_follows_the_busy_timeout() -> None:
    found = timeouts("postgresql://u@db/q", busy_timeout_s=10.0)
    assert found["tcp_user_timeout"] == "20000"
    assert found["options"].startswith(
        "-c lock_timeout=10000 -c statement_timeout=60000"
        " -c idle_in_transaction_session_timeout=12000"
    )
    assert found["options"].endswith("-c tcp_user_timeout=20000")


def test_what_the_url_sets_wins() -> None:
    url = (
        "postgresql://u@db/q?keepalives_idle=60&tcp_user_timeout=0&connect_timeout=3"
        "&options=-csearch_path%3Dduequeue%20-cstatement_timeout%3D0"
        "%20-cidle_in_transaction_session_timeout%3D60000"
    )
    found = timeouts(url, busy_timeout_s=5.0)
    assert "keepalives_idle" not in found and "tcp_user_timeout" not in found
    assert "connect_timeout" not in found
    assert found["keepalives"] == "1"
    # The URL's options are kept; only the timeout it does not set is added.
    assert found["options"] == (
        "-csearch_path=duequeue -cstatement_timeout=0 -cidle_in_transaction_session_timeout=60000"
        " -c lock_timeout=5000 " + SERVER_TCP + " -c tcp_user_timeout=15000"
    )


@pytest.mark.parametrize(
    ("url", "seconds"),
    [
        ("postgresql://u@db/q", 10),
        ("postgresql://u@db/q?connect_timeout=3", 3),
        ("postgresql://u@db/q?connect_timeout=1", 2),  # psycopg's floor
        ("postgresql://u@db/q?connect_timeout=60", 30),  # a minute: clamped
        ("postgresql://u@db/q?connect_timeout=0", 30),  # libpq's "forever": clamped
    ],
)
def test_a_connect_waits_what_the_url_asks_clamped(url: str, seconds: int) -> None:
    assert connect_timeout(url) == (seconds, 1)


def test_it_counts_the_hosts_a_connect_may_try() -> None:
    url = "postgresql://u@a:5432,b:5432/q?target_session_attrs=read-write"
    assert connect_timeout(url) == (10, 2)


def test_psycopgs_cleanup_warnings_never_reach_stderr() -> None:
    # "error ignored terminating <psycopg.Pipeline [BAD]>" after a restart: three lines on
    # stderr from logging's last resort (used when no handler is found up the hierarchy),
    # beside the one line the tick says itself. A handler of psycopg's own keeps it away.
    handlers = logging.getLogger("psycopg").handlers
    assert any(isinstance(h, logging.NullHandler) for h in handlers)
