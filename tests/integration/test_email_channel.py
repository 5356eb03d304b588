"""The email channel against a real loopback SMTP server (aiosmtpd)."""

import asyncio
import socket
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from duequeue.channels.base import Message, Outcome, delivery_id
from duequeue.channels.email_sender import EmailChannel, build_email
from duequeue.channels.smtpurl import SmtpSettings, parse_smtp_url
from duequeue.errors import ConfigError
from duequeue.shared.timefmt import to_ms
from tests.servers import LOOPBACK, SmtpSink, free_port

FIRE_AT = datetime(2024, 3, 1, 9, 30, tzinfo=UTC)
MSG = Message(
    reminder_id=7,
    fire_at=FIRE_AT,
    subject="Pay rent",
    body="Due today.\nTransfer 12 EUR ✓\n",
    data=None,
    delivery_id=delivery_id(7, to_ms(FIRE_AT), 3),
)
SENDER = "Duequeue <reminders@example.org>"
NOW = 1_700_000_000.0

Step = tuple[str, Message] | Callable[[], object]


@pytest.fixture
def smtp() -> Iterator[SmtpSink]:
    with SmtpSink(refuse={"nobody@example.com"}, defer={"later@example.com"}) as sink:
        yield sink


def run(url: str, *steps: Step, **options: Any) -> list[Outcome]:
    """Run steps on one channel: (address, message) sends, or plain callables in between."""
    options.setdefault("sender", SENDER)
    options.setdefault("timeout", 2.0)
    options.setdefault("clock", lambda: NOW)

    async def go() -> list[Outcome]:
        outcomes = []
        async with EmailChannel(smtp_url=url, **options) as channel:
            for step in steps:
                if isinstance(step, tuple):
                    outcomes.append(await channel.send(step[1], step[0]))
                else:
                    step()
        return outcomes

    return asyncio.run(go())


def to(address: str, msg: Message = MSG) -> tuple[str, Message]:
    return (address, msg)


def test_it_delivers_a_message_with_stable_headers(smtp: SmtpSink) -> None:
    assert run(smtp.url, to("alice@example.com")) == [Outcome("sent")]

    [mail] = smtp.messages
    assert mail.mail_from == "reminders@example.org"
    assert mail.rcpt_tos == ["alice@example.com"]
    assert mail["From"] == SENDER
    assert mail["To"] == "alice@example.com"
    assert mail["Subject"] == "Pay rent"
    assert mail["Date"] == "Tue, 14 Nov 2023 22:13:20 +0000"  # NOW, with a real offset
    assert mail["Message-ID"] == f"<{MSG.delivery_id}@example.org>"
    assert mail["X-Duequeue-Reminder-Id"] == "7"
    assert mail["X-Duequeue-Fire-At"] == "2024-03-01T09:30:00.000Z"
    assert mail.get_content_type() == "text/plain"
    assert mail.get_content_charset() == "utf-8"
    assert mail.get_content() == MSG.body


def test_it_keeps_the_message_id_across_retries(smtp: SmtpSink) -> None:
    run(smtp.url, to("alice@example.com"), to("alice@example.com"))

    first, second = smtp.messages
    assert first["Message-ID"] == second["Message-ID"]


def test_it_encodes_a_non_ascii_subject(smtp: SmtpSink) -> None:
    msg = Message(1, FIRE_AT, "Réunion à 9h ☕", "Café", None, "dq_1_0_1")

    assert run(smtp.url, to("alice@example.com", msg)) == [Outcome("sent")]

    [mail] = smtp.messages
    assert mail["Subject"] == "Réunion à 9h ☕"
    assert mail.get_content() == "Café\n"


def test_it_reuses_one_connection_for_several_sends(smtp: SmtpSink) -> None:
    outcomes = run(smtp.url, to("a@example.com"), to("b@example.com"), to("c@example.com"))

    assert outcomes == [Outcome("sent")] * 3
    assert [m.rcpt_tos for m in smtp.messages] == [
        ["a@example.com"],
        ["b@example.com"],
        ["c@example.com"],
    ]
    assert smtp.connections == 1


def test_it_does_not_connect_when_nothing_is_sent(smtp: SmtpSink) -> None:
    assert run(smtp.url) == []

    assert smtp.connections == 0


def test_it_marks_a_refused_recipient_permanent_and_keeps_the_connection(smtp: SmtpSink) -> None:
    refused, sent = run(smtp.url, to("nobody@example.com"), to("alice@example.com"))

    assert refused.status == "permanent"
    assert refused.error == "recipient refused: 550 5.1.1 Mailbox unavailable"
    assert sent == Outcome("sent")
    assert [m.rcpt_tos for m in smtp.messages] == [["alice@example.com"]]
    assert smtp.connections == 1


def test_it_marks_a_451_after_data_as_failed_and_keeps_the_connection(smtp: SmtpSink) -> None:
    deferred, sent = run(smtp.url, to("later@example.com"), to("alice@example.com"))

    assert deferred == Outcome("failed", "message deferred: 451 4.3.0 Try again later")
    assert sent == Outcome("sent")
    assert smtp.connections == 1


def test_it_marks_a_554_after_data_as_permanent() -> None:
    with SmtpSink(reject={"spam@example.com"}) as sink:
        [outcome] = run(sink.url, to("spam@example.com"))

    assert outcome == Outcome("permanent", "message refused: 554 5.6.0 Message rejected")


def test_it_marks_an_empty_address_permanent(smtp: SmtpSink) -> None:
    [outcome] = run(smtp.url, to(""))

    assert outcome.status == "permanent"
    assert smtp.connections == 0


def test_it_fails_when_the_server_is_down() -> None:
    [outcome] = run(f"smtp://{LOOPBACK}:{free_port()}", to("alice@example.com"))

    assert outcome.status == "failed"
    assert outcome.error is not None
    assert outcome.error.startswith("SMTP connection refused")


def test_it_fails_while_the_server_is_down_and_recovers_when_it_is_back(smtp: SmtpSink) -> None:
    outcomes = run(
        smtp.url,
        to("a@example.com"),
        smtp.stop,
        to("b@example.com"),
        smtp.start,
        to("c@example.com"),
    )

    assert [o.status for o in outcomes] == ["sent", "failed", "sent"]
    assert [m.rcpt_tos for m in smtp.messages] == [["a@example.com"], ["c@example.com"]]


def test_it_reconnects_once_when_the_server_dropped_the_idle_connection(smtp: SmtpSink) -> None:
    outcomes = run(smtp.url, to("a@example.com"), smtp.drop_connections, to("b@example.com"))

    assert outcomes == [Outcome("sent"), Outcome("sent")]
    assert len(smtp.messages) == 2
    assert smtp.connections == 2


def test_it_never_resends_after_the_connection_died_during_data() -> None:
    with SmtpSink(hang_up={"lost@example.com"}) as sink:
        lost, sent = run(sink.url, to("lost@example.com"), to("alice@example.com"))

        assert lost.status == "failed"
        assert lost.error is not None
        assert lost.error.endswith("(during DATA; delivery unknown)")
        assert sent == Outcome("sent")
        assert sink.data_attempts == 2  # one transfer each: the lost message was not retried
        assert sink.connections == 2


def test_it_times_out_on_a_server_that_never_greets() -> None:
    # A listening socket nobody accepts from: the TCP handshake succeeds, no banner ever comes.
    with socket.socket() as mute:
        mute.bind((LOOPBACK, 0))
        mute.listen()
        port = mute.getsockname()[1]
        started = time.monotonic()
        [outcome] = run(f"smtp://{LOOPBACK}:{port}", to("alice@example.com"), timeout=0.3)

    assert outcome.status == "failed"
    assert outcome.error == f"SMTP timeout after 0.3s ({LOOPBACK}:{port})"
    assert time.monotonic() - started < 1.5


def test_it_logs_in_with_credentials_from_the_url() -> None:
    with SmtpSink(credentials=("alice", "p@ss/w0rd")) as sink:
        url = f"smtp://alice:p%40ss%2Fw0rd@{LOOPBACK}:{sink.port}"
        assert run(url, to("bob@example.com")) == [Outcome("sent")]
        assert sink.logins == ["alice"]


def test_it_reports_a_refused_login_as_permanent_without_the_password() -> None:
    with SmtpSink(credentials=("alice", "right-password")) as sink:
        url = f"smtp://alice:wrong-password@{LOOPBACK}:{sink.port}"
        [outcome] = run(url, to("bob@example.com"))

    assert outcome.status == "permanent"
    assert outcome.error is not None
    assert outcome.error.startswith("SMTP authentication failed")
    assert "wrong-password" not in outcome.error
    assert sink.messages == []


def test_it_fails_instead_of_raising_outside_async_with() -> None:
    channel = EmailChannel(smtp_url="smtp://127.0.0.1:1", sender=SENDER, timeout=1.0)

    assert asyncio.run(channel.send(MSG, "alice@example.com")).status == "failed"


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("smtp://mail.example.org", SmtpSettings("mail.example.org", 25, "none")),
        ("smtp://mail.example.org:2525/", SmtpSettings("mail.example.org", 2525, "none")),
        ("smtp+starttls://mail.example.org", SmtpSettings("mail.example.org", 587, "starttls")),
        ("smtps://mail.example.org", SmtpSettings("mail.example.org", 465, "tls")),
        ("SMTPS://[::1]:4650", SmtpSettings("::1", 4650, "tls")),
        (
            "smtps://me%40example.org:s%3Acret%2F@mail.example.org",
            SmtpSettings("mail.example.org", 465, "tls", "me@example.org", "s:cret/"),
        ),
    ],
)
def test_it_parses_smtp_urls(url: str, expected: SmtpSettings) -> None:
    assert parse_smtp_url(url) == expected


def test_it_takes_missing_credentials_from_the_user_and_password_settings() -> None:
    login = ("envuser", "envpass")

    assert parse_smtp_url("smtp://h", *login) == SmtpSettings("h", 25, "none", "envuser", "envpass")
    assert parse_smtp_url("smtp://me@h", *login).password == "envpass"
    assert parse_smtp_url("smtp://me:urlpass@h", *login).password == "urlpass"
    assert parse_smtp_url("smtp://h").user is None


def test_it_never_shows_the_password_in_the_settings_repr() -> None:
    settings = parse_smtp_url("smtp://me:hunter2-secret@h")

    assert "hunter2-secret" not in repr(settings)


@pytest.mark.parametrize(
    "url",
    [
        "http://me:hunter2-secret@h",
        "smtp://me:hunter2-secret@h:port",
        "smtp://me:hunter2-secret@h:99999",
        "smtp://me:hunter2-secret@h:0",
        "smtp://me:hunter2/secret@h",
        "smtp://me:hunter2-secret@h/path",
        "smtp://me:hunter2-secret@h?x=1",
        "smtp://:hunter2-secret@h",
        "smtp://me:hunter2-secret@",
        "smtp://me:hunter2-secret@[::1",
        "hunter2-secret",
        "smtp://me:hunter2-secret@ho st:2526",
        "smtp+starttls://me:hunter2-secret%ZZ@h",
        "smtp://me:hunter2-secret%@h",
    ],
)
def test_it_rejects_bad_smtp_urls_without_leaking_the_password(url: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_smtp_url(url)

    message = str(caught.value)
    assert message.startswith("DUEQUEUE_SMTP_URL: ")
    assert "hunter2" not in message
    assert "secret" not in message


def test_it_rejects_a_user_without_any_password() -> None:
    with pytest.raises(ConfigError, match="no password"):
        parse_smtp_url("smtp://me@h")


def test_it_builds_the_message_id_from_the_sender_domain_or_a_fallback() -> None:
    assert build_email(MSG, "a@mail.example.org", "b@x", NOW)["Message-ID"] == (
        f"<{MSG.delivery_id}@mail.example.org>"
    )
    assert build_email(MSG, "duequeue", "b@x", NOW)["Message-ID"] == (
        f"<{MSG.delivery_id}@duequeue.invalid>"
    )


def test_it_flattens_a_multi_line_subject() -> None:
    msg = Message(1, FIRE_AT, "Line one\r\nBcc: victim@example.com", "b", None, "dq_1_0_1")

    mail = build_email(msg, SENDER, "alice@example.com", NOW)

    assert mail["Subject"] == "Line one Bcc: victim@example.com"
    assert mail["Bcc"] is None
