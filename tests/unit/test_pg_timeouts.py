"""The libpq parameters that bound every wait of duequeue's PostgreSQL connections (issue 26)."""

import logging

import pytest

pytest.importorskip("psycopg")

from duequeue.store.postgres import timeouts


def test_it_bounds_every_wait_below_the_lease_by_default() -> None:
    found = timeouts("postgresql://u@db.internal/q", busy_timeout_s=5.0)
    assert found == {
        "connect_timeout": "10",
        "keepalives": "1",
        "keepalives_idle": "5",
        "keepalives_interval": "2",
        "keepalives_count": "3",
        "tcp_user_timeout": "15000",
        "options": "-c lock_timeout=5000 -c statement_timeout=30000",
    }


def test_it_follows_the_busy_timeout() -> None:
    found = timeouts("postgresql://u@db/q", busy_timeout_s=10.0)
    assert found["tcp_user_timeout"] == "20000"
    assert found["options"] == "-c lock_timeout=10000 -c statement_timeout=60000"


def test_what_the_url_sets_wins() -> None:
    url = (
        "postgresql://u@db/q?keepalives_idle=60&tcp_user_timeout=0&connect_timeout=3"
        "&options=-csearch_path%3Dduequeue%20-cstatement_timeout%3D0"
    )
    found = timeouts(url, busy_timeout_s=5.0)
    assert "keepalives_idle" not in found and "tcp_user_timeout" not in found
    assert "connect_timeout" not in found
    assert found["keepalives"] == "1"
    # The URL's options are kept; only the timeout it does not set is added.
    assert found["options"] == "-csearch_path=duequeue -cstatement_timeout=0 -c lock_timeout=5000"


def test_psycopgs_cleanup_warnings_never_reach_stderr() -> None:
    # "error ignored terminating <psycopg.Pipeline [BAD]>" after a restart: three lines on
    # stderr from logging's last resort (used when no handler is found up the hierarchy),
    # beside the one line the tick says itself. A handler of psycopg's own keeps it away.
    handlers = logging.getLogger("psycopg").handlers
    assert any(isinstance(h, logging.NullHandler) for h in handlers)
