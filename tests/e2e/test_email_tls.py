"""Email over TLS against real loopback aiosmtpd servers with a certificate made at test time.

The certificate is signed by a private CA that the client trusts only through SSL_CERT_FILE,
the mechanism docs/email-and-webhooks.md documents; `doctor` and delivery share one connection
routine, so each case is checked on both where it matters.
"""

import json
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import pytest

from duequeue.channels import smtpprobe
from duequeue.channels.base import Outcome
from tests.certs import TestCa
from tests.integration.test_email_channel import run, to
from tests.procs import run_cli
from tests.servers import LOOPBACK, SmtpSink

USER = "mailer@example.org"
PASSWORD = "right-password"
UNICODE_PASSWORD = "pässwörd-日本-☕"  # RFC 4616: AUTH PLAIN carries UTF-8


@pytest.fixture(scope="module")
def ca(tmp_path_factory: pytest.TempPathFactory) -> TestCa:
    return TestCa.create(tmp_path_factory.mktemp("ca"))


@pytest.fixture
def trusted(ca: TestCa, monkeypatch: pytest.MonkeyPatch) -> TestCa:
    """Trust the test CA as an operator would: SSL_CERT_FILE names its PEM file."""
    monkeypatch.setenv("SSL_CERT_FILE", str(ca.ca_file))
    return ca


@pytest.fixture
def untrusted(monkeypatch: pytest.MonkeyPatch) -> None:
    """Trust only the system CAs, which do not know the test CA."""
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)


def url_of(sink: SmtpSink, user: str = USER, password: str = PASSWORD, host: str = LOOPBACK) -> str:
    scheme = sink.url.split("://")[0]
    quoted = urllib.parse.quote(user, safe=""), urllib.parse.quote(password, safe="")
    return f"{scheme}://{quoted[0]}:{quoted[1]}@{host}:{sink.port}"


@pytest.fixture(params=["starttls", "implicit"])
def tls_sink(request: pytest.FixtureRequest, trusted: TestCa) -> Iterator[SmtpSink]:
    """A sink that needs TLS (STARTTLS before AUTH, or TLS from the first byte) and a login."""
    context = trusted.server_context()
    mode = {"starttls": context} if request.param == "starttls" else {"implicit_tls": context}
    with SmtpSink(credentials=(USER, PASSWORD), **mode) as sink:  # type: ignore[arg-type]
        yield sink


# -- delivery ---------------------------------------------------------------------------------


@pytest.mark.parametrize("mechanism", ["PLAIN", "LOGIN"])
@pytest.mark.parametrize("security", ["starttls", "implicit"])
def test_it_delivers_over_tls_after_logging_in(
    trusted: TestCa, security: str, mechanism: str
) -> None:
    context = trusted.server_context()
    mode = {"starttls": context} if security == "starttls" else {"implicit_tls": context}
    with SmtpSink(
        credentials=(USER, UNICODE_PASSWORD),
        auth_mechanisms=[mechanism],
        **mode,  # type: ignore[arg-type]
    ) as sink:
        outcomes = run(url_of(sink, password=UNICODE_PASSWORD), to("bob@example.com"))

        assert outcomes == [Outcome("sent")]
        [mail] = sink.messages
        assert mail.tls
        assert mail.rcpt_tos == ["bob@example.com"]
        assert sink.logins == [USER]


def test_it_verifies_the_certificate_by_host_name_too(tls_sink: SmtpSink) -> None:
    assert run(url_of(tls_sink, host="localhost"), to("bob@example.com")) == [Outcome("sent")]
    assert tls_sink.messages[0].tls


def test_it_sends_a_date_with_a_real_utc_offset(tls_sink: SmtpSink) -> None:
    run(url_of(tls_sink), to("bob@example.com"))

    assert tls_sink.messages[0]["Date"] == "Tue, 14 Nov 2023 22:13:20 +0000"


def test_it_refuses_an_untrusted_certificate_before_sending_the_password(
    ca: TestCa, untrusted: None
) -> None:
    with SmtpSink(credentials=(USER, PASSWORD), starttls=ca.server_context()) as sink:
        [outcome] = run(url_of(sink), to("bob@example.com"))

        assert outcome == Outcome(
            "failed",
            f"SMTP TLS certificate not accepted ({LOOPBACK}:{sink.port}): "
            "unable to get local issuer certificate",
        )
        assert (sink.logins, sink.auth_failures, sink.messages) == ([], 0, [])


def test_it_never_logs_in_in_clear_when_starttls_is_missing(trusted: TestCa) -> None:
    with SmtpSink(credentials=(USER, PASSWORD)) as plain:
        url = url_of(plain).replace("smtp://", "smtp+starttls://")
        [outcome] = run(url, to("bob@example.com"))

        assert outcome == Outcome("failed", "SMTP: server does not offer STARTTLS")
        assert (plain.logins, plain.auth_failures) == ([], 0)


def test_a_refused_password_is_permanent_and_tried_once_per_tick(tls_sink: SmtpSink) -> None:
    outcomes = run(
        url_of(tls_sink, password="wrong-password"),
        to("a@example.com"),
        to("b@example.com"),
        to("c@example.com"),
    )

    refused = Outcome(
        "permanent",
        f"SMTP authentication failed for user {USER} ({LOOPBACK}:{tls_sink.port}): "
        "535 5.7.8 Authentication credentials invalid",
    )
    assert outcomes == [refused] * 3
    # One login per tick: retrying a wrong password per email gets accounts locked.
    assert (tls_sink.auth_failures, tls_sink.connections, tls_sink.messages) == (1, 1, [])


def test_a_temporary_auth_failure_is_retried(trusted: TestCa) -> None:
    with SmtpSink(
        credentials=(USER, PASSWORD),
        starttls=trusted.server_context(),
        auth_refusal="454 4.7.0 Temporary authentication failure",
    ) as sink:
        outcomes = run(url_of(sink, password="any"), to("a@example.com"), to("b@example.com"))

        assert [o.status for o in outcomes] == ["failed", "failed"]
        assert outcomes[0].error == (
            f"SMTP authentication failed for user {USER} ({LOOPBACK}:{sink.port}): "
            "454 4.7.0 Temporary authentication failure"
        )
        assert sink.auth_failures == 2  # a transient refusal does not stop the next attempt


# -- the real CLI: add, tick, history, doctor ------------------------------------------------


def cli_env(sink: SmtpSink, ca: TestCa | None, password: str) -> dict[str, str]:
    env = {
        "DUEQUEUE_SMTP_URL": url_of(sink, password=password),
        "DUEQUEUE_EMAIL_FROM": "Reminders <reminders@example.org>",
    }
    if ca is not None:
        env["SSL_CERT_FILE"] = str(ca.ca_file)
    return env


def test_the_cli_delivers_over_starttls_with_a_unicode_password(tmp_path: Path, ca: TestCa) -> None:
    db = tmp_path / "dq.db"
    with SmtpSink(credentials=(USER, UNICODE_PASSWORD), starttls=ca.server_context()) as sink:
        env = cli_env(sink, ca, UNICODE_PASSWORD)
        added = run_cli(db, "add", "--at", "now", "--email", "bob@example.com", env=env)
        assert added.returncode == 0, added.stderr
        ticked = run_cli(db, "tick", "--json", env=env)

        assert ticked.returncode == 0, ticked.stderr
        assert json.loads(ticked.stdout)["sent"] == 1
        [mail] = sink.messages
        assert (mail.tls, mail.rcpt_tos, sink.logins) == (True, ["bob@example.com"], [USER])
        assert mail["Date"].endswith(" +0000")


def test_the_cli_records_a_wrong_password_as_a_dead_letter(tmp_path: Path, ca: TestCa) -> None:
    db = tmp_path / "dq.db"
    with SmtpSink(credentials=(USER, PASSWORD), implicit_tls=ca.server_context()) as sink:
        env = cli_env(sink, ca, "wrong-password")
        rid = run_cli(db, "add", "--at", "now", "--email", "bob@example.com", env=env).stdout
        ticked = run_cli(db, "tick", "--json", env=env)
        history = run_cli(db, "history", rid.strip(), "--json", env=env)

        assert ticked.returncode == 0, ticked.stderr
        assert json.loads(ticked.stdout)["dead"] == 1
        [attempt] = json.loads(history.stdout)["attempts"]
        assert attempt["outcome"] == "permanent"
        assert attempt["error"] == (
            f"SMTP authentication failed for user {USER} ({LOOPBACK}:{sink.port}): "
            "535 5.7.8 Authentication credentials invalid"
        )
        assert "wrong-password" not in ticked.stdout + history.stdout
        assert sink.messages == []


def smtp_check(db: Path, env: dict[str, str]) -> tuple[int, dict[str, str]]:
    run_cli(db, "add", "--at", "+1h", "--webhook", "http://127.0.0.1:9/x", env=env)
    r = run_cli(db, "doctor", "--json", env=env)
    (check,) = [c for c in json.loads(r.stdout)["checks"] if c["name"] == "smtp"]
    return r.returncode, check


def test_doctor_passes_over_tls_where_delivery_does(
    tmp_path: Path, tls_sink: SmtpSink, trusted: TestCa
) -> None:
    code, check = smtp_check(tmp_path / "dq.db", cli_env(tls_sink, trusted, PASSWORD))

    assert code == 0, check
    assert check["ok"] is True
    assert check["detail"].startswith(f"{LOOPBACK}:{tls_sink.port} answered EHLO and NOOP, ")
    assert f"logged in as {USER}" in check["detail"]
    assert tls_sink.logins == [USER]
    assert tls_sink.messages == []


def test_doctor_fails_on_a_wrong_password(
    tmp_path: Path, tls_sink: SmtpSink, trusted: TestCa
) -> None:
    code, check = smtp_check(tmp_path / "dq.db", cli_env(tls_sink, trusted, "wrong-password"))

    assert code == 1
    assert check["detail"] == f"login refused for user {USER} ({LOOPBACK}:{tls_sink.port}): 535"
    assert "DUEQUEUE_SMTP_PASSWORD" in check["fix"]
    assert tls_sink.auth_failures == 1


def test_doctor_names_ssl_cert_file_for_an_untrusted_certificate(
    tmp_path: Path, ca: TestCa
) -> None:
    with SmtpSink(credentials=(USER, PASSWORD), implicit_tls=ca.server_context()) as sink:
        code, check = smtp_check(tmp_path / "dq.db", cli_env(sink, None, PASSWORD))

    assert code == 1
    assert check["detail"] == (
        f"TLS certificate not accepted ({LOOPBACK}:{sink.port}): "
        "unable to get local issuer certificate"
    )
    assert "SSL_CERT_FILE" in check["fix"]


def test_doctor_says_to_check_the_scheme_when_tls_meets_a_plain_port(trusted: TestCa) -> None:
    with SmtpSink() as plain:
        url = plain.url.replace("smtp://", "smtps://")
        with pytest.raises(OSError) as caught:
            smtpprobe.probe(url, timeout=2.0)

    assert smtpprobe.describe(caught.value, url) == (
        f"TLS handshake failed ({LOOPBACK}:{plain.port}): WRONG_VERSION_NUMBER"
    )
    assert "smtps:// for TLS from the start (465)" in smtpprobe.advice(caught.value)


def test_doctor_reports_a_starttls_server_that_requires_a_login_when_no_user_is_set(
    tmp_path: Path, trusted: TestCa
) -> None:
    with SmtpSink(credentials=(USER, PASSWORD), starttls=trusted.server_context()) as sink:
        env = {
            "DUEQUEUE_SMTP_URL": sink.url,  # smtp+starttls://127.0.0.1:PORT, no user
            "DUEQUEUE_EMAIL_FROM": "r@example.com",
            "SSL_CERT_FILE": str(trusted.ca_file),
        }
        code, check = smtp_check(tmp_path / "dq.db", env)
        assert code == 1
        assert check["ok"] is False
        assert check["detail"].startswith(
            "the server requires a login (AUTH) and no user is set: it answered MAIL with 530"
        )
        assert "DUEQUEUE_SMTP_USER" in check["fix"]
        assert sink.messages == []
        # What doctor foresaw is what a tick then meets.
        with_login = {**env, "DUEQUEUE_SMTP_USER": USER, "DUEQUEUE_SMTP_PASSWORD": PASSWORD}
        code, check = smtp_check(tmp_path / "dq.db", with_login)
        assert (code, check["ok"]) == (0, True), check


def test_doctor_passes_a_starttls_server_that_takes_mail_without_a_login(
    tmp_path: Path, trusted: TestCa
) -> None:
    with SmtpSink(starttls=trusted.server_context()) as sink:
        env = {
            "DUEQUEUE_SMTP_URL": sink.url,
            "DUEQUEUE_EMAIL_FROM": "r@example.com",
            "SSL_CERT_FILE": str(trusted.ca_file),
        }
        code, check = smtp_check(tmp_path / "dq.db", env)
        assert (code, check["ok"]) == (0, True), check
        assert sink.messages == []
