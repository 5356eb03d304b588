"""The webhook secret's format: what every official Standard Webhooks library reads alike.

The Go, Rust, C# and Elixir libraries decode strictly (padded base64; Rust also refuses stray
bits in the last character); Python, JavaScript, Java, PHP and Ruby are lenient (Python pads
the text and drops characters outside the alphabet). duequeue takes canonical padded base64,
pads a secret that lacks only its `=`, and refuses everything the libraries would disagree on.
"""

import base64
import string
from datetime import UTC, datetime
from pathlib import Path

import pytest
from freezegun import freeze_time
from hypothesis import example, given
from hypothesis import strategies as st
from standardwebhooks.webhooks import Webhook

from duequeue.channels.signing import padding_missing, parse_secret, sign_with_key
from duequeue.errors import ConfigError
from tests.clirunner import Cli
from tests.integration.test_cli import rows
from tests.procs import run_cli
from tests.servers import HttpSink

T0 = datetime(2027, 1, 5, 8, 0, tzinfo=UTC)
KEY = b"duequeue-secret-format-25"  # 25 bytes: base64 ends in "==" (and 24..64, as asked)
PADDED = "whsec_" + base64.b64encode(KEY).decode()
UNPADDED = PADDED.rstrip("=")
HOOK = "https://hooks.example.com/r"


def strict_key(secret: str) -> bytes:
    """Decode a secret the way Go's base64.StdEncoding and Rust's STANDARD engine do."""
    encoded = secret.removeprefix("whsec_")
    assert len(encoded) % 4 == 0, "Go, Rust, C# and Elixir need the = padding"
    key = base64.b64decode(encoded, validate=True)
    assert base64.b64encode(key).decode() == encoded, "Rust refuses stray bits"
    return key


def canonical(key: bytes) -> str:
    return "whsec_" + base64.b64encode(key).decode()


def test_the_example_secrets_are_in_the_form_every_library_reads() -> None:
    assert PADDED != UNPADDED
    assert strict_key(PADDED) == KEY
    assert strict_key("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw") == parse_secret(
        "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
    )  # docs/walkthrough.md's example


# 24 bytes at least: a shorter key is refused at load (Standard Webhooks asks for 24 to 64).
@given(st.binary(min_size=24, max_size=80), st.text(min_size=1, max_size=20), st.binary())
def test_a_padded_or_unpadded_secret_signs_exactly_as_the_reference_library(
    key: bytes, msg_id: str, body: bytes
) -> None:
    padded = canonical(key)
    unpadded = padded.rstrip("=")
    text = body.decode("latin-1")
    expected = Webhook(padded).sign(msg_id, T0, text)
    for secret in (padded, unpadded):
        assert parse_secret(secret) == key
        assert sign_with_key(parse_secret(secret), msg_id, int(T0.timestamp()), text.encode()) == (
            expected
        )
    assert padding_missing(padded) == 0
    assert padding_missing(unpadded) == len(padded) - len(unpadded)


B64ISH = st.text(string.ascii_letters + string.digits + "+/=-_ \n\t.é", max_size=16)


@given(B64ISH)
@example("QR==")  # stray bits: Go and Python read "A", Rust refuses
@example("QUJ=")
@example("QQ===")  # extra padding: Python ignores it, Go refuses
@example("ab-_")  # URL-safe: Python drops - and _, Java refuses
@example("QUJD\n")
def test_a_secret_is_taken_only_when_strict_and_lenient_libraries_read_the_same_key(
    encoded: str,
) -> None:
    secret = "whsec_" + encoded
    try:
        key = parse_secret(secret)
    except ConfigError as exc:
        assert str(exc).startswith("DUEQUEUE_WEBHOOK_SECRET: ")
        assert "\n" not in str(exc)
        return
    padded = secret + "=" * padding_missing(secret)
    assert strict_key(padded) == key  # Go, Rust, C#, Elixir (given the padded form)
    # Python's library, lenient, given the text as it is, signs with the same key.
    assert Webhook(secret).sign("id", T0, "{}") == sign_with_key(
        key, "id", int(T0.timestamp()), b"{}"
    )


@pytest.mark.parametrize(
    ("secret", "message"),
    [
        (UNPADDED[:-1] + "-", "is URL-safe base64 ('-' or '_')"),
        (PADDED + "\n", "holds spaces or line breaks"),
        ("whsec_ " + PADDED[6:], "holds spaces or line breaks"),
        ("whsec_QR==", "is not canonical base64"),
        (PADDED + "=", "is not base64"),
        ("whsec_", "the key after 'whsec_' is empty"),
    ],
)
def test_a_secret_the_libraries_would_disagree_on_stops_add_and_tick_by_a_real_process(
    db_path: Path, secret: str, message: str
) -> None:
    for args in (["add", "--at", "+1h", "--webhook", HOOK], ["tick"]):
        r = run_cli(db_path, *args, env={"DUEQUEUE_WEBHOOK_SECRET": secret})
        assert (r.returncode, r.stdout) == (1, "")
        assert r.stderr.startswith("duequeue: error: DUEQUEUE_WEBHOOK_SECRET: the ")
        assert message in r.stderr
        assert r.stderr.count("\n") == 1
    assert rows(db_path) == 0


def test_an_unpadded_secret_signs_webhooks_every_library_verifies_with_the_padded_form(
    db_path: Path,
) -> None:
    with HttpSink() as http:
        cli = Cli(db_path, T0, {"DUEQUEUE_WEBHOOK_SECRET": UNPADDED})
        cli.add("--at", "now", "--webhook", http.url("/r"), "--subject", "signed")
        assert cli.tick()["sent"] == 1
        (req,) = http.requests_for("/r")
    with freeze_time(T0):
        for secret in (PADDED, UNPADDED):  # what a strict receiver needs, and what was set
            assert Webhook(secret).verify(req.body, req.headers)["data"]["subject"] == "signed"
    expected = Webhook(PADDED).sign(req.headers["webhook-id"], T0, req.body.decode())
    assert req.headers["webhook-signature"] == expected


def test_doctor_reports_an_unpadded_secret_with_the_padding_to_append(db_path: Path) -> None:
    cli = Cli(db_path, T0, {"DUEQUEUE_WEBHOOK_SECRET": UNPADDED})
    cli.add("--at", "+1h", "--webhook", HOOK)  # works: duequeue pads it
    r = cli("doctor", "--json")
    (check,) = [c for c in r.json()["checks"] if c["name"] == "webhook secret"]
    assert (r.code, check["ok"]) == (1, False)
    assert "lacks its '==' padding" in check["detail"]
    assert "append '=='" in check["fix"]
    assert UNPADDED[6:] not in r.out


def test_doctor_takes_the_padded_secret_and_asks_for_24_bytes(db_path: Path) -> None:
    cli = Cli(db_path, T0)
    cli.add("--at", "+1h", "--webhook", HOOK)
    r = cli("doctor", "--json", env={"DUEQUEUE_WEBHOOK_SECRET": PADDED})
    (check,) = [c for c in r.json()["checks"] if c["name"] == "webhook secret"]
    assert (r.code, check["ok"], check["detail"]) == (0, True, "whsec_ format, 25-byte key")
    short = canonical(b"sixteen-byte-key")
    # A short key is refused with the settings; doctor reports that as its secret check.
    r = cli("doctor", "--json", env={"DUEQUEUE_WEBHOOK_SECRET": short})
    (check,) = [c for c in r.json()["checks"] if c["name"] == "webhook secret"]
    assert (r.code, check["ok"]) == (1, False)
    assert "the key is only 16 bytes" in check["detail"]
    assert "at least 24 random bytes" in check["detail"]


def test_doctor_reports_a_webhooks_own_unpadded_secret_by_reminder(db_path: Path) -> None:
    cli = Cli(db_path, T0)
    cli.add("--at", "+1h", "--webhook", HOOK)  # no secret of its own
    rid = cli.add("--at", "+1h", "--webhook", HOOK, "--webhook-secret", UNPADDED)
    cli.add("--at", "+1h", "--webhook", HOOK, "--webhook-secret", PADDED)
    r = cli("doctor", "--json")
    (check,) = [c for c in r.json()["checks"] if c["name"] == "webhook secrets of targets"]
    assert (r.code, check["ok"]) == (1, False)
    assert f"(reminders {rid})" in check["detail"]
    assert "lacks its '=' padding" in check["detail"]
    assert UNPADDED[6:] not in r.out
    assert cli("cancel", str(rid)).code == 0  # a cancelled reminder never signs again
    after = cli("doctor", "--json").json()
    assert "webhook secrets of targets" not in [c["name"] for c in after["checks"]]
