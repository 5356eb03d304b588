"""What `add --key` means (issue 24, item 1): a key is unique among live reminders; a done or
cancelled one frees it; a repeat with the same content is idempotent, with other content a
conflict that writes nothing. On SQLite and PostgreSQL."""

from datetime import UTC, datetime

import pytest

from tests.clirunner import Cli
from tests.servers import HttpSink
from tests.stores import Db

T0 = datetime(2027, 1, 5, 8, 0, tzinfo=UTC)
HOOK = "https://hooks.example.com/r"
AT = "2027-02-01T09:00:00Z"


@pytest.fixture
def cli(db: Db) -> Cli:
    return Cli(db, T0)


def test_a_cancelled_reminder_frees_its_key(cli: Cli) -> None:
    first = cli.add("--key", "rent", "--at", AT, "--webhook", HOOK, "--subject", "rent")
    assert cli("cancel", str(first)).code == 0
    r = cli("add", "--key", "rent", "--at", AT, "--webhook", HOOK, "--subject", "rent v2")
    assert r.code == 0, r.err
    assert int(r.out) != first and r.err == ""
    assert [(row["id"], row["state"]) for row in cli.inspect()] == [
        (first, "cancelled"),
        (int(r.out), "pending"),
    ]


def test_a_done_reminder_frees_its_key(cli: Cli, http: HttpSink) -> None:
    first = cli.add("--key", "ping", "--at", "now", "--webhook", http.url("/p"))
    assert cli.tick()["sent"] == 1
    again = cli.add("--key", "ping", "--at", "now", "--webhook", http.url("/p"))
    assert again != first
    assert cli.tick()["sent"] == 1
    assert len(http.requests_for("/p")) == 2


def test_the_same_live_key_and_content_is_idempotent_and_says_so(cli: Cli) -> None:
    args = ("--key", "rent", "--at", AT, "--webhook", HOOK, "--subject", "rent")
    first = cli.add(*args)
    r = cli("add", *args)
    assert (r.code, r.out) == (0, f"{first}\n")
    assert r.err == (
        f"duequeue: key 'rent' exists: reminder {first}, with the same content; nothing added\n"
    )
    # A relative time names another instant each run: it is not compared.
    rel = cli.add("--key", "standup", "--at", "+15m", "--webhook", HOOK)
    cli.advance(seconds=30)
    assert cli("add", "--key", "standup", "--at", "+15m", "--webhook", HOOK).out == f"{rel}\n"


@pytest.mark.parametrize(
    ("change", "named"),
    [
        (("--subject", "rent v2"), "subject"),
        (("--at", "2027-03-01T09:00:00Z"), "time"),
        (("--email", "ann@example.com"), "targets"),
        (("--cron", "0 9 1 * *"), "rule_kind, rule"),
    ],
)
def test_a_live_key_with_other_content_is_a_conflict_that_writes_nothing(
    cli: Cli, change: tuple[str, str], named: str
) -> None:
    base = {"--key": "rent", "--at": AT, "--webhook": HOOK, "--subject": "rent"}
    first = cli.add(*[a for kv in base.items() for a in kv])
    changed = {**base, change[0]: change[1]}
    if change[0] == "--email":
        del changed["--webhook"]
    r = cli("add", *[a for kv in changed.items() for a in kv])
    assert (r.code, r.out) == (1, "")
    assert r.err.count("\n") == 1
    assert f"'rent' is the key of reminder {first}, which differs ({named}); nothing added" in r.err
    assert r.err.startswith("duequeue: error: --key: ")
    assert len(cli.inspect()) == 1
