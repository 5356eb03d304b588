"""What add and edit read from stdin or a file instead of argv (issue 33, items 3 and 6):
`--body -` and `--webhook-secret-file FILE|-`, beside `--notify-file`."""

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from freezegun import freeze_time
from standardwebhooks.webhooks import Webhook

from tests.clirunner import Cli
from tests.servers import HttpSink
from tests.stores import Db, reminder_count

T0 = datetime(2027, 1, 5, 8, 0, tzinfo=UTC)
OWN = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
OTHER = "whsec_b3RoZXItcmVjZWl2ZXItc2VjcmV0LTAxMjM0NQ=="


@pytest.fixture
def cli(db: Db) -> Cli:
    return Cli(db, T0)


def delivered_body(http: HttpSink) -> str:
    [request] = http.requests
    body: str = json.loads(request.body)["data"]["body"]
    return body


def test_body_dash_reads_the_body_from_stdin(cli: Cli, http: HttpSink) -> None:
    r = cli("add", "--at", "now", "--webhook", http.url("/"), "--body", "-", stdin="two\nlines\n")
    assert (r.code, r.out) == (0, "1\n"), r.err
    cli.tick()
    # One trailing newline (echo's, an editor's) is dropped; the rest is the body as sent.
    assert delivered_body(http) == "two\nlines"


def test_a_body_that_is_not_a_dash_is_sent_as_given(cli: Cli, http: HttpSink) -> None:
    cli.add("--at", "now", "--webhook", http.url("/"), "--body", "-x")
    cli.tick()
    assert delivered_body(http) == "-x"


def test_edit_body_dash_reads_stdin_too(cli: Cli, http: HttpSink) -> None:
    rid = cli.add("--at", "now", "--webhook", http.url("/"), "--body", "old")
    r = cli("edit", str(rid), "--body", "-", stdin="new body\n")
    assert r.code == 0, r.err
    cli.tick()
    assert delivered_body(http) == "new body"


def test_a_body_on_stdin_over_64_kib_is_refused_and_nothing_is_written(cli: Cli, db: Db) -> None:
    r = cli("add", "--at", "now", "--email", "a@example.com", "--body", "-", stdin="x" * 70_000)
    assert r.code == 2
    assert r.err.startswith("duequeue: error: --body: ")
    assert reminder_count(db) == 0


def test_two_flags_reading_stdin_are_refused_before_anything_is_read(cli: Cli, db: Db) -> None:
    r = cli(
        "add", "--at", "now", "--webhook", "https://h.example.com/", "--body", "-",
        "--webhook-secret-file", "-", stdin=OWN + "\n",
    )  # fmt: skip
    assert r.code == 2
    assert r.err == (
        "duequeue: error: --body/--webhook-secret-file: stdin (-) can be read once: "
        "give all but one of these a file\n"
    )
    assert reminder_count(db) == 0


def verifies(secret: str, http: HttpSink, path: str) -> bool:
    [request] = http.requests_for(path)
    with freeze_time(T0):
        try:
            Webhook(secret).verify(request.body, dict(request.headers))
        except Exception:
            return False
    return True


def test_webhook_secret_file_gives_one_secret_a_line_per_webhook_in_order(
    cli: Cli, http: HttpSink, tmp_path: Path
) -> None:
    secrets = tmp_path / "secrets"
    secrets.write_text(f"# the two receivers\n{OWN}\n\n{OTHER}\n")
    cli.add(
        "--at", "now", "--webhook", http.url("/a"), "--webhook", http.url("/b"),
        "--webhook-secret-file", str(secrets),
    )  # fmt: skip
    cli.tick()
    assert verifies(OWN, http, "/a") and not verifies(OTHER, http, "/a")
    assert verifies(OTHER, http, "/b") and not verifies(OWN, http, "/b")


def test_webhook_secret_file_dash_reads_stdin(cli: Cli, http: HttpSink) -> None:
    r = cli(
        "add", "--at", "now", "--webhook", http.url("/a"), "--webhook-secret-file", "-",
        stdin=OWN + "\n",
    )  # fmt: skip
    assert r.code == 0, r.err
    cli.tick()
    assert verifies(OWN, http, "/a")


def test_a_secret_given_both_ways_or_an_empty_file_is_refused(
    cli: Cli, db: Db, tmp_path: Path
) -> None:
    empty = tmp_path / "empty"
    empty.write_text("# nothing yet\n")
    hook = ("add", "--at", "now", "--webhook", "https://h.example.com/")
    both = cli(*hook, "--webhook-secret", OWN, "--webhook-secret-file", str(empty))
    assert (both.code, both.err) == (
        2,
        "duequeue: error: --webhook-secret/--webhook-secret-file: give the secrets one way, "
        "not both\n",
    )
    none = cli(*hook, "--webhook-secret-file", str(empty))
    assert (none.code, none.err) == (
        2,
        f"duequeue: error: --webhook-secret-file: {empty} holds no secret\n",
    )
    bad = cli(*hook, "--webhook-secret-file", "-", stdin="not-a-secret\n")
    assert bad.code == 2
    assert bad.err.startswith("duequeue: error: --webhook-secret: ")
    assert reminder_count(db) == 0


def test_edit_takes_a_webhook_secret_file(cli: Cli, http: HttpSink) -> None:
    rid = cli.add("--at", "now", "--email", "a@example.com")
    r = cli(
        "edit", str(rid), "--webhook", http.url("/a"), "--webhook-secret-file", "-",
        stdin=OWN + "\n",
    )  # fmt: skip
    assert r.code == 0, r.err
    cli.tick()
    assert verifies(OWN, http, "/a")
