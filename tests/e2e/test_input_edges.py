"""Input that used to pass and could never work is refused up front (issue 24, item 9): one
line, nothing written; and a subject that looks encoded arrives as typed."""

import subprocess
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.clirunner import Cli
from tests.procs import LIMIT_S, cli_args, cli_env, run_cli
from tests.servers import SmtpSink

T0 = datetime(2027, 1, 5, 8, 0, tzinfo=UTC)
HOOK = "https://hooks.example.com/r"


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (
            ["--webhook", HOOK, "--data", '{"n": ' + "9" * 401 + "}"],
            "--data: a number is too large (beyond about 1.8e308)",
        ),
        (
            ["--notify", "mqtt://127.0.0.1:18830"],
            "--notify: mqtt://...: no topic: give one as the path (mqtt://host/topic)",
        ),
        (
            ["--notify", "ntfys://"],
            "--notify: ntfys://...: no topic: give one as the path (ntfys://host/topic)",
        ),
        (
            ["--notify", "json://127.0.0.1:99999/"],
            "--notify: json://...: the port must be a number from 1 to 65535",
        ),
    ],
)
def test_an_add_that_could_never_be_delivered_is_refused(
    db_path: Path, args: list[str], line: str
) -> None:
    r = run_cli(db_path, "add", "--at", "+1h", *args)
    assert (r.returncode, r.stdout, r.stderr) == (2, "", f"duequeue: error: {line}\n")
    assert not db_path.exists()  # nothing written, not even an empty database


@pytest.mark.parametrize(
    ("url", "line"),
    [
        (
            "postgresql:/127.0.0.1/test",
            "--db postgresql:/127.0.0.1/test: a postgresql URL starts postgresql:// (write"
            " postgresql://127.0.0.1/test; a file of that name: ./postgresql:/127.0.0.1/test)",
        ),
        (
            "nosuch://host/db",
            "--db nosuch://host/db: no backend for that scheme"
            " (known: mariadb://, mysql://, postgres://, postgresql://, sqlite://)",
        ),
    ],
)
def test_a_db_url_that_names_no_database_is_refused(tmp_path: Path, url: str, line: str) -> None:
    # Before, `postgresql:/host/db` (one slash) added into a new SQLite file under a folder
    # named `postgresql:`, exit 0, that no tick read.
    r = subprocess.run(
        cli_args("--db", url, "add", "--at", "+1h", "--webhook", HOOK),
        env=cli_env(tmp_path / "unused.db"),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=LIMIT_S,
        check=False,
    )
    assert (r.returncode, r.stdout, r.stderr) == (2, "", f"duequeue: error: {line}\n")
    assert list(tmp_path.iterdir()) == []  # nothing written anywhere


def test_a_large_number_that_fits_a_double_passes(db_path: Path) -> None:
    big = "9" * 300
    r = run_cli(db_path, "add", "--at", "+1h", "--webhook", HOOK, "--data", f"[{big}]")
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize(
    ("url", "line"),
    [
        (
            "smtp://ho st:2526",
            "DUEQUEUE_SMTP_URL: the host 'ho st' is not a host name or IP address",
        ),
        (
            "smtp+starttls://u:p%ZZ@h",
            "DUEQUEUE_SMTP_URL: a '%' in the user or password does not start a %XX escape "
            "(write a literal '%' as %25)",
        ),
    ],
)
def test_an_smtp_url_that_could_never_connect_stops_every_command(
    db_path: Path, url: str, line: str
) -> None:
    for args in (["tick"], ["add", "--at", "+1h", "--email", "ann@example.com"]):
        r = run_cli(db_path, *args, env={"DUEQUEUE_SMTP_URL": url})
        # A setting, not an argument: exit 1 as for every invalid setting (docs/reference.md).
        assert (r.returncode, r.stdout, r.stderr) == (1, "", f"duequeue: error: {line}\n")
        assert not db_path.exists()


@pytest.fixture
def smtp() -> Iterator[SmtpSink]:
    with SmtpSink() as sink:
        yield sink


@pytest.mark.parametrize(
    "subject",
    [
        "=?utf-8?q?not_encoded?= literal",
        "a  =?b?q?x?=  kept ✓ " + "long enough to fold over several lines " * 4,
    ],
)
def test_a_subject_that_looks_encoded_arrives_literally(
    db_path: Path, smtp: SmtpSink, subject: str
) -> None:
    env = {"DUEQUEUE_SMTP_URL": smtp.url, "DUEQUEUE_EMAIL_FROM": "r@example.com"}
    cli = Cli(db_path, T0, env)
    cli.add("--at", "now", "--email", "bob@example.com", "--subject", subject)
    assert cli.tick()["sent"] == 1
    (message,) = smtp.messages
    assert message["Subject"] == subject
    assert all(len(line) <= 78 for line in message.raw.split(b"\r\n"))
