"""Per-target webhook secrets and rotation, verified by the official `standardwebhooks` library:
a receiver holding only the old secret and one holding only the new both accept every message."""

import base64
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from freezegun import freeze_time
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from tests.clirunner import SECRET, Cli
from tests.servers import HttpSink, RecordedRequest
from tests.stores import Db

T0 = datetime(2027, 1, 5, 8, 0, tzinfo=UTC)
OLD = "whsec_" + base64.b64encode(b"old-secret-of-the-receiver-0123").decode()
NEW = "whsec_" + base64.b64encode(b"new-secret-of-the-receiver-4567").decode()
OTHER = "whsec_" + base64.b64encode(b"another-receiver-own-secret-89ab").decode()


@pytest.fixture
def cli(db: Db) -> Cli:
    return Cli(db, T0, {"DUEQUEUE_WEBHOOK_SECRET": SECRET})


def verifies(secret: str, request: RecordedRequest) -> bool:
    with freeze_time(T0):
        try:
            Webhook(secret).verify(request.body, dict(request.headers))
        except WebhookVerificationError:
            return False
    return True


def test_rotation_signs_with_both_secrets_so_old_and_new_receivers_verify(
    cli: Cli, http: HttpSink
) -> None:
    rid = cli.add("--at", "now", "--webhook", http.url("/hook"), "--webhook-secret", f"{OLD} {NEW}")
    cli.tick()

    [request] = http.requests
    assert len(request.headers["webhook-signature"].split(" ")) == 2
    assert verifies(OLD, request)  # a receiver not moved yet
    assert verifies(NEW, request)  # a receiver already on the new secret
    assert not verifies(SECRET, request)  # the global secret is not used for this target
    assert cli.row(rid)["state"] == "done"


def test_each_webhook_has_its_own_secret_or_the_global_one(cli: Cli, http: HttpSink) -> None:
    cli.add(
        "--at",
        "now",
        "--webhook",
        http.url("/a"),
        "--webhook",
        http.url("/b"),
        "--webhook-secret",
        OLD,
        "--webhook-secret",
        OTHER,
    )
    cli.add("--at", "now", "--webhook", http.url("/c"))
    cli.tick()

    [a], [b], [c] = (http.requests_for(p) for p in ("/a", "/b", "/c"))
    assert verifies(OLD, a)
    assert not verifies(OTHER, a)
    assert verifies(OTHER, b)
    assert not verifies(OLD, b)
    assert verifies(SECRET, c)


def test_one_secret_signs_every_webhook_of_the_reminder(cli: Cli, http: HttpSink) -> None:
    cli.add(
        "--at", "now", "--webhook", http.url("/a"), "--webhook", http.url("/b"),
        "--webhook-secret", NEW,
    )  # fmt: skip
    cli.tick()

    assert all(verifies(NEW, r) for r in http.requests)
    assert len(http.requests) == 2


def test_secrets_never_show_in_inspect_history_or_config(cli: Cli, http: HttpSink) -> None:
    rid = cli.add("--at", "+1h", "--webhook", http.url("/hook"), "--webhook-secret", f"{OLD} {NEW}")
    shown = "\n".join(
        [
            cli("inspect", "--all").out,
            cli("inspect", "--all", "--json").out,
            cli("history", str(rid)).out,
            cli("history", str(rid), "--json").out,
            cli("next", str(rid)).out,
            cli("config").out,
            cli("doctor").out,
        ]
    )
    for secret in (OLD, NEW, SECRET):
        assert secret.removeprefix("whsec_") not in shown


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--webhook-secret", OLD], "--webhook-secret: given without a webhook"),
        (
            ["--webhook", "https://a.example/h", "--webhook-secret", "whsec_short"],
            "--webhook-secret: the part after 'whsec_' is not base64",
        ),
        (
            ["--webhook", "https://a.example/h", "--webhook-secret", "s3cr3t-not-whsec"],
            "--webhook-secret: must start with 'whsec_'",
        ),
        (
            [
                "--webhook", "https://a.example/h", "--webhook", "https://b.example/h",
                "--webhook", "https://c.example/h",
                "--webhook-secret", OLD, "--webhook-secret", NEW,
            ],
            "--webhook-secret: 2 given for 3 webhooks",
        ),
        (
            ["--webhook", "https://a.example/h", "--webhook-secret", f"{OLD} {OLD}"],
            "--webhook-secret: the same secret is given twice",
        ),
    ],
)  # fmt: skip
def test_a_bad_webhook_secret_exits_2_naming_the_flag_and_writes_nothing(
    cli: Cli, args: list[str], message: str
) -> None:
    result = cli("add", "--at", "now", *args)

    assert result.code == 2
    assert result.err.startswith(f"duequeue: error: {message}")
    assert "s3cr3t" not in result.err
    listed = cli("inspect", "--all", "--json")
    assert listed.code == 1 or listed.json() == []


def test_import_takes_a_webhook_secret(cli: Cli, http: HttpSink, tmp_path: Path) -> None:
    lines = tmp_path / "r.jsonl"
    line = {"at": "now", "webhooks": http.url("/i"), "webhook_secret": f"{OLD} {NEW}"}
    lines.write_text(json.dumps(line) + "\n")

    assert cli("import", str(lines)).code == 0
    cli.tick()

    [request] = http.requests
    assert verifies(OLD, request)
    assert verifies(NEW, request)


def test_the_global_secret_rotates_too(db: Db, http: HttpSink) -> None:
    cli = Cli(db, T0, {"DUEQUEUE_WEBHOOK_SECRET": f"{SECRET} {NEW}"})
    cli.add("--at", "now", "--webhook", http.url("/g"))
    cli.tick()

    [request] = http.requests
    assert verifies(SECRET, request)
    assert verifies(NEW, request)
    assert "2 secrets" in cli("doctor").out
