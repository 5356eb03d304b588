"""serve's small parts: where it may listen, what a Host header names, the charts (SVG that asks
nothing of anyone, readable as text), every value escaped, how deep JSON nests."""

import re
from datetime import UTC, datetime, timedelta

import pytest

from duequeue.errors import BadInputError, ConfigError
from duequeue.web import charts, html
from duequeue.web.auth import Guard, host_name, is_loopback, safe_next
from duequeue.web.inputs import nesting
from duequeue.web.server import check

T0 = datetime(2027, 1, 5, 8, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("host", "loopback"),
    [("127.0.0.1", True), ("127.8.9.10", True), ("::1", True), ("[::1]", True),
     ("localhost", True), ("LOCALHOST", True), ("0.0.0.0", False), ("::", False),
     ("192.168.1.5", False), ("example.com", False), ("localhost.evil.example", False)],
)  # fmt: skip
def test_only_loopback_is_loopback(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def test_a_host_header_is_read_without_its_port() -> None:
    assert host_name("127.0.0.1:8325") == "127.0.0.1"
    assert host_name("[::1]:8325") == "[::1]"
    assert host_name("localhost") == "localhost"


def test_serve_refuses_what_it_must_not_run_with() -> None:
    check("127.0.0.1", 8325, None)
    check("0.0.0.0", 8325, "x" * 16)
    with pytest.raises(BadInputError) as exc:
        check("0.0.0.0", 8325, None)
    assert exc.value.field == "host" and "DUEQUEUE_WEB_TOKEN" in exc.value.detail
    with pytest.raises(ConfigError) as short:
        check("127.0.0.1", 8325, "x" * 15)
    assert short.value.field == "web_token"
    with pytest.raises(BadInputError):
        check("127.0.0.1", 70000, None)


def test_tokens_and_csrf_tokens() -> None:
    guard = Guard("s3cret-token-0123456789", read_token="reader-token-0123456789")
    assert guard.role_of("s3cret-token-0123456789") == "admin"
    assert guard.role_of("reader-token-0123456789") == "read"
    assert guard.role_of("s3cret-token-012345678") is None
    assert guard.role_of("") is None
    assert Guard(None).role_of("") is None
    assert guard.csrf("a") != guard.csrf("b") and guard.csrf("a") == guard.csrf("a")
    assert guard.csrf("a") != Guard("s3cret-token-0123456789").csrf("a")  # a key per process
    assert "s3cret" not in guard.login_value("admin")
    assert guard.login_value("admin") != guard.login_value("read")


def test_the_charts_are_self_contained_svg_with_a_text_equivalent() -> None:
    minutes = tuple((T0 - timedelta(minutes=1439 - i), i % 7, i % 3) for i in range(1440))
    hours = tuple((T0 + timedelta(hours=h), h * 10) for h in range(24))
    for svg in (charts.deliveries(minutes), charts.due(hours)):
        assert svg.startswith("<svg ") and svg.endswith("</svg>")
        assert "href" not in svg and "<script" not in svg and "url(" not in svg
        assert "<title>" in svg and "<desc>" in svg
    assert "max 230" in charts.due(hours)
    assert "in 10 minutes" in charts.deliveries(minutes)
    empty = charts.deliveries(tuple((T0, 0, 0) for _ in range(1440)))
    assert "0 sent and 0 failed" in empty


def test_a_burst_in_one_minute_is_a_bar_of_its_own_against_a_scale() -> None:
    minutes = [(T0 - timedelta(minutes=1439 - i), 0, 0) for i in range(1440)]
    minutes[700] = (minutes[700][0], 480, 20)  # one minute's burst in a quiet day
    assert len(charts.buckets(minutes)) == 144  # 5 px a bar, not 1,440 half-pixel ones
    svg = charts.deliveries(minutes)
    bars = re.findall(r"M([0-9.]+) ([0-9.]+)h([0-9.]+)V", svg)
    assert len(bars) == 2  # the bucket's sent and failed, stacked
    assert all(float(w) >= 4 for _x, _y, w in bars)
    assert min(float(y) for _x, y, _w in bars) == 0.0  # the full height: the scale tops at 500
    assert re.findall(r">(\d+(?:\.\d+)?)</text>", svg)[:3] == ["0", "250", "500"]
    assert "at most 500 in 10 minutes" in svg


def test_the_scale_tops_at_a_round_number() -> None:
    assert [charts.nice(n) for n in (0, 1, 3, 7, 10, 11, 230, 501)] == [
        1,
        1,
        5,
        10,
        10,
        20,
        500,
        1000,
    ]


def test_every_value_is_escaped() -> None:
    assert html.h('<script>"x"</script>') == "&lt;script&gt;&quot;x&quot;&lt;/script&gt;"
    assert html.h(None) == ""
    assert html.url("/reminders", state="dead", search="a&b", before=None) == (
        "/reminders?state=dead&search=a%26b"
    )
    assert html.span(timedelta(milliseconds=250)) == "250 ms"
    assert html.span(None) == "none"


def test_json_nesting_is_counted_without_parsing() -> None:
    assert nesting(b"1") == 0 and nesting(b"[]") == 1 and nesting(b"{}") == 1
    assert nesting(b'{"a": [[1], {"b": 2}]}') == 3
    # Brackets inside strings, escaped quotes included, are text.
    assert nesting(b'{"a": "[[[{{{", "b": ["\\"]]]]", "\\\\"]}') == 2
    assert nesting(b"[" * 100_000) == 100_000  # no recursion, so no RecursionError
    assert nesting(b'[[["unterminated [[[') == 6  # garbage is bounded too, never parsed


@pytest.mark.parametrize(
    ("asked", "back"),
    [
        ("/reminders/5", "/reminders/5"),
        ("/reminders?state=dead&search=rent", "/reminders?state=dead&search=rent"),
        ("//evil.example/x", None),
        ("/\\evil.example", None),
        ("https://evil.example/", None),
        ("javascript:alert(1)", None),
        ("/\t/evil.example", None),
        ("/login", None),
        ("", None),
    ],
)
def test_a_login_returns_only_to_a_path_of_this_site(asked: str, back: str | None) -> None:
    assert safe_next(asked) == back


def test_an_instant_is_shown_in_utc_and_on_the_reminders_clocks() -> None:
    summer = datetime(2027, 7, 1, 7, 0, tzinfo=UTC)
    shown = html.at(summer, "Europe/Paris")
    assert "2027-07-01 07:00:00 UTC" in shown and "(09:00:00 Europe/Paris)" in shown
    late = html.at(datetime(2027, 7, 1, 23, 30, tzinfo=UTC), "Asia/Tokyo")
    assert "(2027-07-02 08:30:00 Asia/Tokyo)" in late  # another day there: the date too
    assert html.at(summer, "UTC") == '<span class="utc">2027-07-01 07:00:00 UTC</span>'
    assert html.at(summer, "<script>") == '<span class="utc">2027-07-01 07:00:00 UTC</span>'
    assert html.at(None, "Europe/Paris") == ""
