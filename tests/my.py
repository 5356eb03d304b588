"""MySQL / MariaDB for tests: a fresh database per test, dropped after it.

The server comes from DUEQUEUE_TEST_MYSQL_URL (default: the local MariaDB, root without a
password). Without a reachable server the MySQL tests skip with the reason, unless
DUEQUEUE_TEST_MYSQL_REQUIRED=1 (CI sets it), which turns the skip into a failure.

Only the tests marked `mysql` (tests/stores.py: the store contract, the guarantee, overlap and
fault suites) run on MySQL: the rest of the suite is the same SQL through the same store.
"""

import os
import secrets
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit

import pytest

if TYPE_CHECKING:
    import pymysql

# Read at import: the autouse isolated_env fixture removes DUEQUEUE_* variables from each test.
SERVER_URL = os.environ.get("DUEQUEUE_TEST_MYSQL_URL", "mysql://root@127.0.0.1:3306/test")
REQUIRED = os.environ.get("DUEQUEUE_TEST_MYSQL_REQUIRED") == "1"


def _unavailable(reason: str) -> None:
    message = f"MySQL tests need a server ({reason}); set DUEQUEUE_TEST_MYSQL_URL"
    if REQUIRED:
        pytest.fail(f"DUEQUEUE_TEST_MYSQL_REQUIRED=1: {message}", pytrace=False)
    pytest.skip(message)


def with_database(url: str, name: str) -> str:
    """Return `url` pointing at database `name` instead."""
    return urlsplit(url)._replace(path="/" + name).geturl()


def admin_connect(url: str) -> "pymysql.connections.Connection[Any]":
    """Connect outside duequeue (autocommit), to set up or inspect what a test needs."""
    import pymysql

    parts = urlsplit(url)
    return pymysql.connect(
        host=parts.hostname or "127.0.0.1",
        port=parts.port or 3306,
        user=unquote(parts.username or "root"),
        password=unquote(parts.password or ""),
        database=unquote(parts.path.lstrip("/")) or None,
        autocommit=True,
        connect_timeout=5,
    )


def query(url: str, sql: str) -> list[tuple[Any, ...]]:
    """Run one statement on the database `url` names; return its rows."""
    with admin_connect(url) as conn, conn.cursor() as cur:
        cur.execute(sql)
        return list(cur.fetchall())


@pytest.fixture
def mysql_url() -> Iterator[str]:
    """Create a throw-away database for the test; yield its URL; drop it after."""
    try:
        import pymysql
    except ImportError:
        _unavailable("PyMySQL is not installed: pip install 'duequeue[mysql]'")
        raise
    try:
        admin = admin_connect(SERVER_URL)
    except pymysql.Error as exc:
        _unavailable(f"cannot connect to {SERVER_URL}: {exc}")
        raise
    name = f"dq_test_{secrets.token_hex(4)}"
    with admin, admin.cursor() as cur:
        cur.execute(f"CREATE DATABASE `{name}`")
        try:
            yield with_database(SERVER_URL, name)
        finally:
            cur.execute(f"DROP DATABASE IF EXISTS `{name}`")
