"""PostgreSQL for tests: a throw-away database per session, and a clean schema per test.

The server comes from DUEQUEUE_TEST_PG_URL (default: the local server, trust auth). Without a
reachable server the PostgreSQL tests skip with the reason, unless DUEQUEUE_TEST_PG_REQUIRED=1
(CI sets it), which turns the skip into a failure.
"""

import os
import secrets
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import pytest

if TYPE_CHECKING:
    import psycopg

# Read at import: the autouse isolated_env fixture removes DUEQUEUE_* variables from each test.
SERVER_URL = os.environ.get("DUEQUEUE_TEST_PG_URL", "postgresql://postgres@127.0.0.1:5432/postgres")
REQUIRED = os.environ.get("DUEQUEUE_TEST_PG_REQUIRED") == "1"


def _unavailable(reason: str) -> None:
    message = f"PostgreSQL tests need a server ({reason}); set DUEQUEUE_TEST_PG_URL"
    if REQUIRED:
        pytest.fail(f"DUEQUEUE_TEST_PG_REQUIRED=1: {message}", pytrace=False)
    pytest.skip(message)


def with_database(url: str, name: str) -> str:
    """Return `url` pointing at database `name` instead."""
    return urlsplit(url)._replace(path="/" + name).geturl()


def admin_connect(url: str) -> "psycopg.Connection[tuple[Any, ...]]":
    """Connect outside duequeue, to set up or inspect what a test needs."""
    import psycopg

    return psycopg.connect(url, autocommit=True, connect_timeout=5)


def needs_psycopg() -> None:
    """Skip (or, when required, fail) a test that needs psycopg but no server."""
    try:
        import psycopg  # noqa: F401
    except ImportError:
        _unavailable("psycopg is not installed: pip install 'psycopg[binary]'")


@pytest.fixture(scope="session")
def pg_database() -> Iterator[str]:
    """Create a throw-away database for the session; yield its URL; drop it at the end."""
    needs_psycopg()
    import psycopg

    try:
        admin = admin_connect(SERVER_URL)
    except psycopg.Error as exc:
        _unavailable(f"cannot connect to {SERVER_URL}: {str(exc).splitlines()[0]}")
    name = f"duequeue_test_{secrets.token_hex(4)}"
    with admin:
        admin.execute(f'CREATE DATABASE "{name}"')
        try:
            yield with_database(SERVER_URL, name)
        finally:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def pg_url(pg_database: str) -> str:
    """Return the session database's URL with an empty public schema and no other sessions."""
    with admin_connect(pg_database) as conn:
        # Sessions left by an earlier test (a killed tick, a terminated backend) would hold
        # locks the DROP waits on.
        conn.execute(
            """SELECT pg_terminate_backend(pid) FROM pg_stat_activity
               WHERE datname = current_database() AND pid <> pg_backend_pid()"""
        )
        conn.execute("DROP SCHEMA IF EXISTS public CASCADE")
        conn.execute("CREATE SCHEMA public")
    return pg_database
