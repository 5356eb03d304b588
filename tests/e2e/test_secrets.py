"""Secrets (the SMTP password, the webhook secret) never show in output, errors or the ledger.

One recognisable password and one webhook secret go through every path that could echo them:
add, tick (with an SMTP login that fails, a server that is down, a webhook that fails), inspect
in every view and form, and settings that are wrong in ways that tempt a message to quote them.
"""

import base64
import socket
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import apsw
import pytest

from tests.clirunner import Cli
from tests.procs import run_cli
from tests.rawserver import RawServer
from tests.servers import HttpSink, Reply, SmtpSink

T0 = datetime(2027, 1, 5, 8, 0, tzinfo=UTC)
PASSWORD = "Xyzzy-S3cr3t-pa55"
KEY = b"duequeue-test-signing-key-XYZZY!"
SECRET = "whsec_" + base64.b64encode(KEY).decode()
NEEDLES = (PASSWORD, SECRET, SECRET.removeprefix("whsec_"), "Xyzzy")


def assert_clean(*texts: str) -> None:
    for text in texts:
        for needle in NEEDLES:
            assert needle not in text, f"{needle!r} leaked into {text[:200]!r}"


def ledger_text(db: Path) -> str:
    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    conn.setbusytimeout(5000)  # a reader can meet a writer's brief WAL recovery
    try:
        rows = conn.execute(
            "SELECT error FROM deliveries UNION ALL SELECT last_error FROM reminders "
            "UNION ALL SELECT last_error FROM dead_letters"
        ).fetchall()
        return "\n".join(str(r[0]) for r in rows)
    finally:
        conn.close()


@pytest.fixture
def smtp() -> Iterator[SmtpSink]:
    with SmtpSink(credentials=("alice", "the-right-one")) as sink:
        yield sink


@pytest.fixture
def http() -> Iterator[HttpSink]:
    with HttpSink() as sink:
        sink.respond("/down", Reply(500, body=b"no"))
        yield sink


@pytest.mark.parametrize("where", ["url", "env"])
def test_no_secret_shows_in_add_tick_inspect_or_the_ledger(
    db_path: Path, smtp: SmtpSink, http: HttpSink, where: str
) -> None:
    if where == "url":
        env = {"DUEQUEUE_SMTP_URL": f"smtp://alice:{PASSWORD}@127.0.0.1:{smtp.port}"}
    else:
        env = {"DUEQUEUE_SMTP_URL": smtp.url, "DUEQUEUE_SMTP_USER": "alice"}
        env["DUEQUEUE_SMTP_PASSWORD"] = PASSWORD
    env |= {"DUEQUEUE_EMAIL_FROM": "r@example.com", "DUEQUEUE_WEBHOOK_SECRET": SECRET}
    env["DUEQUEUE_MAX_RETRIES"] = "1"  # dead at once: the dead-letter views have it too
    cli = Cli(db_path, T0, env)
    outputs = [
        cli("add", "--at", "now", "--email", "bob@example.com", "--webhook", http.url("/down"))
    ]
    outputs.append(cli("tick"))
    outputs.append(cli("tick", "--json"))
    for view in ("--dead", "--all", "--pending", "--due"):
        outputs += [cli("inspect", view), cli("inspect", view, "--json")]
    assert all(r.code == 0 for r in outputs)
    assert smtp.messages == []
    assert "SMTP authentication failed" in ledger_text(db_path)  # the failure is there ...
    assert_clean(ledger_text(db_path), *(r.out + r.err for r in outputs))  # ... the secret not
    assert len(http.requests_for("/down")) == 1  # the webhook failed too, signed with it


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("DUEQUEUE_SMTP_URL", f"smtpx://alice:{PASSWORD}@mail.example.com"),
        ("DUEQUEUE_SMTP_URL", f"smtp://alice:{PASSWORD}@mail.example.com/path"),
        ("DUEQUEUE_SMTP_URL", f"smtp://alice:{PASSWORD}@mail.example.com:99999"),
        ("DUEQUEUE_SMTP_URL", f"smtp://alice:{PASSWORD}@"),
        ("DUEQUEUE_WEBHOOK_SECRET", SECRET + "!"),
        ("DUEQUEUE_WEBHOOK_SECRET", SECRET.removeprefix("whsec_")),
        ("DUEQUEUE_WEBHOOK_SECRET", "whsec_Xyzzy-not-base64"),
    ],
)
def test_a_wrong_secret_setting_is_refused_without_quoting_it_by_a_real_process(
    db_path: Path, name: str, value: str
) -> None:
    r = run_cli(db_path, "tick", env={name: value})
    assert r.returncode == 1
    assert r.stderr.startswith(f"duequeue: error: {name}")
    assert r.stderr.count("\n") == 1
    assert "Traceback" not in r.stderr
    assert_clean(r.stdout, r.stderr)


def echo_auth(conn: socket.socket, stopping: threading.Event) -> None:
    """An SMTP server that quotes the client's AUTH command back in its refusal."""
    conn.sendall(b"220 echo.example ESMTP\r\n")
    reader = conn.makefile("rb")
    while not stopping.is_set():
        try:
            line = reader.readline()
        except TimeoutError:
            continue
        if not line:
            return
        verb = line[:4].upper()
        if verb in (b"EHLO", b"HELO"):
            conn.sendall(b"250-echo.example\r\n250 AUTH PLAIN\r\n")
        elif verb == b"AUTH":
            conn.sendall(b"535 5.7.8 rejected: " + line.strip() + b"\r\n")
        else:
            conn.sendall(b"221 bye\r\n")
            return


def test_an_smtp_server_echoing_the_auth_command_does_not_leak_the_password(
    db_path: Path,
) -> None:
    with RawServer(echo_auth) as server:
        env = {
            "DUEQUEUE_SMTP_URL": f"smtp://alice:{PASSWORD}@127.0.0.1:{server.port}",
            "DUEQUEUE_EMAIL_FROM": "r@example.com",
        }
        cli = Cli(db_path, T0, env)
        cli.add("--at", "now", "--email", "bob@example.com")
        r = cli("tick")
    plain = base64.b64encode(f"\0alice\0{PASSWORD}".encode()).decode()
    assert r.code == 0
    refused = f"SMTP authentication failed for user alice (127.0.0.1:{server.port}): 535 5.7.8"
    assert f"{refused} rejected: AUTH PLAIN ***" in ledger_text(db_path)
    assert plain not in ledger_text(db_path)
    assert_clean(r.out, r.err, ledger_text(db_path), cli("inspect", "--all").out)


def test_a_down_smtp_server_is_reported_without_the_password(db_path: Path) -> None:
    env = {
        "DUEQUEUE_SMTP_URL": f"smtp://alice:{PASSWORD}@127.0.0.1:9",
        "DUEQUEUE_EMAIL_FROM": "r@example.com",
    }
    cli = Cli(db_path, T0, env)
    cli.add("--at", "now", "--email", "bob@example.com")
    r = cli("tick")
    assert r.code == 0
    assert "SMTP connection refused (127.0.0.1:9)" in ledger_text(db_path)
    assert_clean(r.out, r.err, ledger_text(db_path), cli("inspect", "--all").out)
