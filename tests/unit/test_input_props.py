"""Properties of what untrusted text turns into: add's parsing and the webhook/email builders.

- `add` parsing of any text either yields a reminder that passes every documented limit or
  raises BadInputError: never another exception, so the CLI never shows a traceback.
- a webhook payload is always valid JSON carrying the reminder's fields unchanged.
- an email never carries a header the input smuggled in, whatever the subject holds.
"""

import email
import email.policy
import json
from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from duequeue.channels.base import Message
from duequeue.channels.email_sender import build_email
from duequeue.channels.webhook_sender import build_payload
from duequeue.errors import BadInputError
from duequeue.operations.add import AddRequest, build_reminder
from duequeue.rules import validate

NOW = datetime(2027, 1, 5, 8, 0, tzinfo=UTC)
# Every code point, lone surrogates (what non-UTF-8 argv becomes) and NUL included.
ANY_TEXT = st.text(st.characters(codec=None, categories=None), max_size=40)
FRAGMENTS = st.sampled_from(
    [
        "now", "+15m", "+1d", "2027-01-05T09:00", "2027-02-30", "Z", "+01:00", "Europe/Berlin",
        "UTC", "FREQ=DAILY", ";COUNT=3", "BYDAY=MO", "0 9 * * 1-5", "*/5", "https://", "http://",
        "a@example.com", "hooks.example.com", "/r", ":8080", "[::1]", "user:pw@", "\r\n", "\x00",
        "\udcff", "{", "}", '"x"', "[1]", "1e999", "NaN", "xn--", "ü", " ", "99999999999",
    ]
)  # fmt: skip
TEXT = st.one_of(ANY_TEXT, st.lists(FRAGMENTS, max_size=5).map("".join))
# JSON text as a user could write it: Python's json reads all of it, receivers not all of it.
JSON_PARTS = st.sampled_from(
    [
        "1e400", "-1e999", "1.7976931348623157e308", "2e308", "NaN", "-Infinity", "1" * 30,
        '"\\ud800"', '"\\udfff\\ud800"', '"\\ud83d\\ude00"', '"\\u0000"', '"ok"', "null", "[]",
        "{}",
    ]
)  # fmt: skip
JSON_TEXT = st.recursive(
    JSON_PARTS,
    lambda inner: st.one_of(
        st.lists(inner, min_size=1, max_size=3).map(lambda xs: "[" + ",".join(xs) + "]"),
        st.tuples(JSON_PARTS.filter(lambda p: p.startswith('"')), inner).map(
            lambda kv: "{" + kv[0] + ":" + kv[1] + "}"
        ),
        st.integers(60, 70).flatmap(lambda n: inner.map(lambda x: "[" * n + x + "]" * n)),
    ),
    max_leaves=6,
)
OPTIONAL = st.none() | TEXT


def mostly(*valid: str | None) -> st.SearchStrategy[str | None]:
    """A usually valid value, sometimes hostile text: so every later check gets reached too."""
    return st.one_of(st.sampled_from(valid), st.sampled_from(valid), st.sampled_from(valid), TEXT)


@st.composite
def add_requests(draw: st.DrawFn) -> AddRequest:
    rule = draw(st.sampled_from(["rrule", "cron", None]))
    return AddRequest(
        at=draw(mostly("now", "+15m", "2027-01-05T09:00", "2027-03-28T02:30", None)),
        tz=draw(mostly(None, "UTC", "Europe/Berlin", "America/New_York")),
        rrule=draw(mostly("FREQ=DAILY", "FREQ=HOURLY;COUNT=3")) if rule == "rrule" else None,
        cron=draw(mostly("0 9 * * 1-5", "*/5 * * * *")) if rule == "cron" else None,
        emails=tuple(draw(st.lists(mostly("a@example.com", "b.c+d@mail.example"), max_size=2))),
        webhooks=tuple(
            draw(st.lists(mostly("https://h.example/r", "http://10.0.0.1:81/"), max_size=2))
        ),
        subject=draw(mostly("Pay rent", "Zahlung fällig")) or "",
        body=draw(mostly("", "Due today\n\tline two")) or "",
        data_json=draw(st.one_of(mostly(None, '{"flat": 3}', "[1, 2.5, null]"), JSON_TEXT)),
        key=draw(mostly(None, "rent-2027-01")),
        misfire_grace=draw(mostly(None, "1h", "90s")),
    )


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(add_requests())
@example(AddRequest(at="now", webhooks=("https://exa\udcffmple.com/",)))
@example(AddRequest(at="now", webhooks=("https://a.example/",), data_json="[" * 3000 + "]" * 3000))
@example(AddRequest(at="now", webhooks=("https://a.example/",), data_json="[1e400]"))
@example(AddRequest(at="now", webhooks=("https://a.example/",), data_json='{"x":"\\ud800"}'))
def test_add_parsing_yields_a_valid_reminder_or_bad_input_never_a_crash(req: AddRequest) -> None:
    try:
        reminder = build_reminder(req, "UTC", NOW)
    except BadInputError as exc:
        assert exc.field is not None  # names the field
        assert str(exc).startswith(f"{'/'.join(exc.fields)}: ")
        assert "\n" not in str(exc)
        event(f"refused: {str(exc).split(':')[0]}")
        return
    event("a valid reminder")
    assert 1 <= len(reminder.targets) <= validate.MAX_TARGETS
    assert len(reminder.subject) <= validate.MAX_SUBJECT
    assert len(reminder.body.encode("utf-8")) <= validate.MAX_BODY
    if reminder.data is not None:
        assert len(reminder.data.encode("utf-8")) <= validate.MAX_DATA
        value = json.loads(reminder.data, parse_constant=validate.reject_constant)
        build_payload(message(reminder.subject, reminder.body, value))  # every send can encode it
    for text in (
        reminder.subject,
        reminder.body,
        reminder.tz,
        *[t.address for t in reminder.targets],
    ):
        text.encode("utf-8")  # storable and sendable


@settings(max_examples=400, deadline=None)
@given(st.one_of(JSON_TEXT, TEXT))
@example("[1e400]")
@example('{"x":"\\ud800"}')
@example("[" * 65 + "]" * 65)
def test_data_add_takes_is_data_every_send_can_encode(text: str) -> None:
    try:
        compact = validate.data(text)
    except BadInputError as exc:
        assert (exc.field, str(exc)) == ("data", f"data: {exc.detail}")
        event(f"refused: {exc.detail[:22]}")
        return
    event("taken")
    assert compact is not None
    value = json.loads(compact, parse_constant=validate.reject_constant)
    assert value == json.loads(text)
    sent = json.loads(build_payload(message("s", "b", value)))
    assert sent["data"]["data"] == value


UTF8_TEXT = st.text(st.characters(codec="utf-8"), max_size=40)  # what validation lets through
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    | UTF8_TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(UTF8_TEXT, inner, max_size=3),
    max_leaves=10,
)  # fmt: skip


def message(subject: str, body: str, data: Any = None) -> Message:
    fire = NOW + timedelta(minutes=1)
    return Message(42, fire, subject, body, data, "dq_42_1798185660000_7")


@settings(max_examples=300, deadline=None)
@given(UTF8_TEXT, UTF8_TEXT, JSON)
def test_a_webhook_payload_is_always_json_with_the_reminders_fields(
    subject: str, body: str, data: Any
) -> None:
    event = json.loads(build_payload(message(subject, body, data)))
    assert event["type"] == "reminder.fired"
    assert event["data"] == {
        "reminder_id": 42,
        "fire_at": "2027-01-05T08:01:00.000Z",
        "subject": subject,
        "body": body,
        "data": data,
    }


@settings(max_examples=300, deadline=None)
@given(UTF8_TEXT, UTF8_TEXT, JSON)
def test_a_webhook_payload_is_the_canonical_compact_encoding_of_its_event(
    subject: str, body: str, data: Any
) -> None:
    # build_payload assembles the body from encoded parts; it must stay byte for byte what the
    # json module gives, since receivers may check signatures or deduplicate on the content.
    event = {
        "type": "reminder.fired",
        "timestamp": "2027-01-05T08:01:00.000Z",
        "data": {
            "reminder_id": 42,
            "fire_at": "2027-01-05T08:01:00.000Z",
            "subject": subject,
            "body": body,
            "data": data,
        },
    }
    expected = json.dumps(event, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    assert build_payload(message(subject, body, data)) == expected.encode()


HEADERS = {"From", "To", "Subject", "Date", "Message-ID", "X-Duequeue-Reminder-Id"}
HEADERS |= {"X-Duequeue-Fire-At", "Content-Type", "Content-Transfer-Encoding", "MIME-Version"}


INJECTIONS = FRAGMENTS | st.just("Bcc: eve@example.com") | st.just("\r\n\r\n")


@settings(max_examples=300, deadline=None)
@given(st.one_of(ANY_TEXT, st.lists(INJECTIONS, max_size=6).map("".join)), ANY_TEXT)
@example("Hi\r\nBcc: eve@example.com", "body")
@example("Hi\nBcc: eve@example.com\n\nfake body", "\r\n.\r\nMAIL FROM:<x@y>")
def test_an_email_never_carries_a_header_the_input_smuggled_in(subject: str, body: str) -> None:
    try:
        mail = build_email(message(subject, body), "reminders@example.com", "ann@example.com", 0)
        raw = mail.as_bytes(policy=email.policy.SMTP)
    except (TypeError, ValueError):
        return  # the channel records these as permanent failures; nothing is sent
    parsed = email.message_from_bytes(raw, policy=email.policy.default)
    assert set(parsed.keys()) <= HEADERS
    assert parsed.get_all("To") == ["ann@example.com"]
    assert "\n" not in str(parsed["Subject"])
