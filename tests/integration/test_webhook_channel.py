"""The webhook channel against real loopback HTTP servers (tests/servers.py, tests/rawserver.py).

Only name lookup is scripted (`resolver=`): no name but localhost resolves here without
reaching beyond loopback.
"""

import asyncio
import base64
import json
import time
from datetime import UTC, datetime
from email.utils import formatdate
from typing import Any

import pytest
from standardwebhooks.webhooks import Webhook

from duequeue import __version__
from duequeue.channels.base import Message, Outcome, delivery_id
from duequeue.channels.signing import Signer, parse_secret, sign
from duequeue.channels.webhook_sender import WebhookChannel, build_payload, parse_retry_after
from duequeue.errors import ConfigError
from duequeue.shared.timefmt import to_ms
from tests import rawserver
from tests.resolver import ScriptedResolver
from tests.servers import HttpSink, Reply, free_port

FIRE_AT = datetime(2024, 3, 1, 9, 30, tzinfo=UTC)
MSG = Message(
    reminder_id=7,
    fire_at=FIRE_AT,
    subject="Pay rent",
    body="Due today ✓",
    data={"amount": 12, "tags": ["home"]},
    delivery_id=delivery_id(7, to_ms(FIRE_AT), 3),
)
KEY = b"duequeue-test-key-0123456789abcdef"
SECRET = "whsec_" + base64.b64encode(KEY).decode()
NOW = 1_700_000_000.75


def send(url: str, msg: Message = MSG, **options: Any) -> Outcome:
    """Send one message through a fresh channel and return the outcome."""
    return send_all(url, [msg], **options)[0]


def send_all(url: str, msgs: list[Message], **options: Any) -> list[Outcome]:
    """Send messages one after another through one channel."""
    options.setdefault("secret", SECRET)
    options.setdefault("timeout", 2.0)

    async def run() -> list[Outcome]:
        async with WebhookChannel(**options) as channel:
            return [await channel.send(msg, url) for msg in msgs]

    return asyncio.run(run())


def test_it_posts_the_reminder_as_compact_json(http: HttpSink) -> None:
    outcome = send(http.url("/hook"), clock=lambda: NOW)

    assert outcome == Outcome("sent")
    [request] = http.requests_for("/hook")
    assert request.method == "POST"
    assert request.body == build_payload(MSG)
    compact = json.dumps(json.loads(request.body), ensure_ascii=False, separators=(",", ":"))
    assert request.body == compact.encode()
    assert json.loads(request.body) == {
        "type": "reminder.fired",
        "timestamp": "2024-03-01T09:30:00.000Z",
        "data": {
            "reminder_id": 7,
            "fire_at": "2024-03-01T09:30:00.000Z",
            "subject": "Pay rent",
            "body": "Due today ✓",
            "data": {"amount": 12, "tags": ["home"]},
        },
    }


def test_it_sends_standard_webhooks_headers(http: HttpSink) -> None:
    send(http.url("/hook"), clock=lambda: NOW)

    headers = http.requests_for("/hook")[0].headers
    assert headers["content-type"] == "application/json"
    assert headers["user-agent"] == f"duequeue/{__version__}"
    assert headers["webhook-id"] == MSG.delivery_id
    assert headers["webhook-timestamp"] == "1700000000"
    assert headers["webhook-signature"] == sign(
        SECRET, MSG.delivery_id, 1700000000, build_payload(MSG)
    )
    # Exactly these: the client adds nothing of its own (no compressed answers, for one).
    assert (headers["accept"], headers["accept-encoding"]) == ("*/*", "identity")
    assert set(headers) == {
        "host",
        "content-length",
        "content-type",
        "user-agent",
        "accept",
        "accept-encoding",
        "webhook-id",
        "webhook-timestamp",
        "webhook-signature",
    }


def test_it_signs_so_that_the_standardwebhooks_library_verifies_it(http: HttpSink) -> None:
    send(http.url("/hook"))  # the real clock: the verifier rejects stale timestamps

    [request] = http.requests_for("/hook")
    payload = Webhook(SECRET).verify(request.body, request.headers)
    assert payload["data"]["reminder_id"] == 7


def test_it_signs_exactly_like_the_reference_implementation() -> None:
    body = build_payload(MSG)
    reference = Webhook(SECRET).sign(
        MSG.delivery_id, datetime.fromtimestamp(1700000000, UTC), body.decode()
    )
    assert sign(SECRET, MSG.delivery_id, 1700000000, body) == reference


def test_its_signer_signs_message_after_message_like_the_reference_implementation() -> None:
    signer = Signer((parse_secret(SECRET),))  # one keyed state, copied per message
    for n, body in enumerate([build_payload(MSG), b"{}", build_payload(MSG)]):
        at = 1700000000 + n
        reference = Webhook(SECRET).sign(f"dq_{n}", datetime.fromtimestamp(at, UTC), body.decode())
        assert signer.sign(f"dq_{n}", at, body) == reference


def test_it_sends_id_and_timestamp_but_no_signature_without_a_secret(http: HttpSink) -> None:
    send(http.url("/hook"), secret=None, clock=lambda: NOW)

    headers = http.requests_for("/hook")[0].headers
    assert headers["webhook-id"] == MSG.delivery_id
    assert headers["webhook-timestamp"] == "1700000000"
    assert "webhook-signature" not in headers


def test_it_uses_the_delivery_id_as_webhook_id_on_every_retry(http: HttpSink) -> None:
    http.respond("/hook", Reply(500), Reply(200))

    outcomes = send_all(http.url("/hook"), [MSG, MSG])

    assert [o.status for o in outcomes] == ["failed", "sent"]
    first, second = http.requests_for("/hook")
    assert first.headers["webhook-id"] == second.headers["webhook-id"] == MSG.delivery_id
    assert first.body == second.body


def test_it_reuses_one_pooled_connection(http: HttpSink) -> None:
    outcomes = send_all(http.url("/hook"), [MSG] * 5)

    assert {o.status for o in outcomes} == {"sent"}
    assert len({r.client_port for r in http.requests}) == 1


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        (200, "sent"),
        (201, "sent"),
        (204, "sent"),
        (301, "failed"),
        (302, "failed"),
        (307, "failed"),
        (400, "permanent"),
        (401, "permanent"),
        (403, "permanent"),
        (404, "permanent"),
        (410, "permanent"),
        (422, "permanent"),
        (408, "failed"),
        (425, "failed"),
        (429, "failed"),
        (500, "failed"),
        (502, "failed"),
        (503, "failed"),
        (504, "failed"),
    ],
)
def test_it_classifies_the_http_status(http: HttpSink, status: int, expected: str) -> None:
    http.respond("/hook", Reply(status))

    outcome = send(http.url("/hook"))

    assert outcome.status == expected
    if expected == "sent":
        assert outcome.error is None
    else:
        assert outcome.error is not None
        assert outcome.error.startswith(f"HTTP {status}")


def test_it_does_not_follow_a_redirect(http: HttpSink) -> None:
    http.respond("/hook", Reply(302, headers={"Location": http.url("/elsewhere")}))

    outcome = send(http.url("/hook"))

    assert outcome == Outcome("failed", "HTTP 302 redirect not followed")
    assert len(http.requests_for("/hook")) == 1
    assert http.requests_for("/elsewhere") == []


def test_it_quotes_a_short_single_line_snippet_of_the_error_body(http: HttpSink) -> None:
    http.respond("/hook", Reply(500, body=b"database\n\tdown\x00 " + b"x" * 1000))

    outcome = send(http.url("/hook"))

    assert outcome.error is not None
    assert outcome.error.startswith("HTTP 500: database down x")
    assert outcome.error.endswith("...")
    assert len(outcome.error) < 220


@pytest.mark.parametrize("status", [429, 503])
@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ("120", 120.0),
        ("0", 0.0),
        (formatdate(NOW + 90.25, usegmt=True), 90.25),  # whole seconds: 1700000091
        (formatdate(NOW - 3600, usegmt=True), 0.0),
        ("soon", None),
        ("-5", None),
    ],
)
def test_it_reports_retry_after_in_seconds(
    http: HttpSink, status: int, header: str, expected: float | None
) -> None:
    http.respond("/hook", Reply(status, headers={"Retry-After": header}))

    outcome = send(http.url("/hook"), clock=lambda: NOW)

    assert outcome.status == "failed"
    assert outcome.retry_after == expected


def test_it_ignores_retry_after_on_other_statuses(http: HttpSink) -> None:
    http.respond("/hook", Reply(500, headers={"Retry-After": "120"}))

    assert send(http.url("/hook")).retry_after is None


def test_it_parses_retry_after_forms() -> None:
    assert parse_retry_after(" 30 ", NOW) == 30.0
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", 1445412480.0) == 0.0
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", 1445412470.0) == 10.0
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 -0000", 1445412470.0) == 10.0
    assert parse_retry_after("", NOW) is None
    assert parse_retry_after("1.5", NOW) is None
    assert parse_retry_after("9" * 400, NOW) == 1e9


def test_it_cuts_a_hanging_server_at_the_timeout(http: HttpSink) -> None:
    http.respond("/hook", Reply(hang=True))

    started = time.monotonic()
    outcome = send(http.url("/hook"), timeout=0.3)

    assert outcome == Outcome("failed", "response timeout after 0.3s (delivery unknown)")
    assert time.monotonic() - started < 1.5


def test_it_tells_a_connect_timeout_from_a_response_timeout() -> None:
    with rawserver.never_accepts() as url:
        outcome = send(url, timeout=0.3)

    assert outcome == Outcome("failed", "connect timeout after 0.3s (nothing sent)")


def test_it_cuts_an_error_response_that_stalls_mid_body(http: HttpSink) -> None:
    http.respond("/hook", Reply(500, body=b"partial", hang_mid_body=True))

    outcome = send(http.url("/hook"), timeout=0.3)

    assert outcome == Outcome("failed", "response timeout after 0.3s (delivery unknown)")


def test_it_counts_a_2xx_whose_body_stalls_as_sent(http: HttpSink) -> None:
    # The receiver accepted the event; failing it would only cause a duplicate on retry.
    http.respond("/hook", Reply(200, body=b"ok", hang_mid_body=True))

    assert send(http.url("/hook"), timeout=0.3) == Outcome("sent")


def test_it_cuts_an_error_body_dripped_a_byte_at_a_time_at_the_whole_attempt_timeout() -> None:
    # Every read succeeds (a byte every 20 ms); only a whole-attempt timeout ends it.
    head = b"HTTP/1.1 500 Oops\r\nContent-Length: 100000\r\n\r\n"
    with rawserver.RawServer(rawserver.drip(head, b"x" * 100, 0.02)) as server:
        started = time.monotonic()
        outcome = send(server.url(), timeout=0.3)

    assert outcome == Outcome("failed", "response timeout after 0.3s (delivery unknown)")
    assert time.monotonic() - started < 1.0


def test_it_counts_a_2xx_whose_body_drips_as_sent() -> None:
    head = b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n"
    with rawserver.RawServer(rawserver.drip(head, b"x" * 100, 0.02)) as server:
        outcome = send(server.url(), timeout=0.3)

    assert outcome == Outcome("sent")


def test_it_reads_an_endless_error_body_only_up_to_the_cap() -> None:
    head = b"HTTP/1.1 500 Oops\r\nContent-Type: text/plain\r\n\r\n"  # no length: endless
    with rawserver.RawServer(rawserver.endless(head)) as server:
        outcome = send(server.url(), max_response_bytes=10_000, timeout=5)

    assert outcome.status == "failed"
    assert outcome.error is not None
    assert outcome.error.startswith("HTTP 500: xxxx")
    assert len(outcome.error) < 220


def test_it_survives_a_huge_error_body_from_a_real_server(http: HttpSink) -> None:
    http.respond("/hook", Reply(500, body=b"z" * 5_000_000))

    started = time.monotonic()
    outcome = send(http.url("/hook"), max_response_bytes=1024)

    assert outcome.status == "failed"
    assert outcome.error is not None
    assert len(outcome.error) < 220
    assert time.monotonic() - started < 1.0


def test_it_reports_connection_refused_on_a_closed_port() -> None:
    outcome = send(f"http://127.0.0.1:{free_port()}/hook")

    assert outcome == Outcome("failed", "connection refused")


def test_words_of_the_url_path_are_not_blanked_out_of_the_error() -> None:
    # Redaction hides the URL's path as a token; it must not hit the same word in the message.
    outcome = send(f"http://127.0.0.1:{free_port()}/refused")

    assert outcome == Outcome("failed", "connection refused")


def test_it_reports_a_dns_failure_briefly() -> None:
    outcome = send("http://hooks.test/", resolver=lambda: ScriptedResolver({}))

    assert outcome == Outcome("failed", "DNS lookup failed: [Errno -2] Name or service not known")


def test_it_posts_to_the_address_a_name_resolves_to(http: HttpSink) -> None:
    url = http.url("/hook").replace("127.0.0.1", "hooks.test")

    outcome = send(url, resolver=lambda: ScriptedResolver({"hooks.test": ["127.0.0.1"]}))

    assert outcome == Outcome("sent")
    assert len(http.requests_for("/hook")) == 1


def test_it_marks_an_unusable_url_permanent() -> None:
    outcome = send("ftp://127.0.0.1/hook")

    assert outcome.status == "permanent"
    assert outcome.error is not None
    assert outcome.error.startswith("invalid webhook URL")


def test_it_turns_an_unexpected_exception_into_a_failure_without_the_url_token() -> None:
    url = "http://hooks.test/hooks/T0KEN-s3cr3t?sig=abcdef123456"
    boom = RuntimeError(f"boom while calling {url}")

    outcome = send(url, resolver=lambda: ScriptedResolver({}, error=boom))

    assert outcome.status == "failed"
    assert outcome.error is not None
    assert outcome.error.startswith("RuntimeError: boom while calling")
    assert "T0KEN" not in outcome.error
    assert "abcdef123456" not in outcome.error


def test_it_marks_data_that_cannot_be_serialised_permanent() -> None:
    msg = Message(7, FIRE_AT, "s", "b", {"when": object()}, "dq_7_0_1")

    outcome = send("http://hooks.test/", msg)

    assert outcome.status == "permanent"


def test_it_fails_instead_of_raising_outside_async_with() -> None:
    channel = WebhookChannel(secret=SECRET, timeout=1.0)

    outcome = asyncio.run(channel.send(MSG, "http://hooks.test/"))

    assert outcome.status == "failed"


def test_it_parses_a_whsec_secret_with_or_without_padding() -> None:
    assert parse_secret(SECRET) == KEY
    assert parse_secret(SECRET.rstrip("=")) == KEY


@pytest.mark.parametrize(
    "secret", ["c2VjcmV0LXZhbHVlLXh5eg==", "whsec_not*base64!value", "whsec_", "WHSEC_c2VjcmV0"]
)
def test_it_rejects_a_malformed_secret_without_echoing_it(secret: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_secret(secret)

    message = str(caught.value)
    assert message.startswith("DUEQUEUE_WEBHOOK_SECRET: ")
    assert secret.removeprefix("whsec_") not in message or not secret.removeprefix("whsec_")


def test_it_rejects_a_malformed_secret_when_built() -> None:
    with pytest.raises(ConfigError):
        WebhookChannel(secret="nope", timeout=1.0)
