"""Parsing due times, zones and rules, and the RRULE features the scheduler relies on."""

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from duequeue.errors import BadInputError
from duequeue.schedule.rules import (
    Rule,
    count_fires,
    first_fire,
    next_fire,
    parse_at,
    parse_rule,
    parse_zone,
    upcoming,
)
from duequeue.shared.timefmt import parse_duration

NY = ZoneInfo("America/New_York")
BERLIN = ZoneInfo("Europe/Berlin")
NOW = datetime(2027, 3, 13, 12, 0, tzinfo=UTC)


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def iso(instants: list[datetime]) -> list[str]:
    return [instant.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ") for instant in instants]


def iso1(instant: datetime | None) -> str | None:
    return None if instant is None else iso([instant])[0]


def assert_one_line_naming(exc: BadInputError, field: str, text: str) -> None:
    message = str(exc)
    assert message.startswith(f"{field}: ")
    assert exc.field == field
    assert "\n" not in message
    assert repr(text) in message
    assert exc.exit_code == 2


# parse_zone


def test_it_returns_the_named_zone() -> None:
    # By key: zoneinfo compares zones by identity, and a test that swaps zone folders
    # (zones.reset) leaves a new object for the same zone.
    zone = parse_zone("Europe/Berlin")
    assert zone.key == BERLIN.key == "Europe/Berlin"
    assert zone.utcoffset(datetime(2027, 7, 1)) == timedelta(hours=2)


@pytest.mark.parametrize(
    "name", ["Mars/Base", "", "America", "../etc/passwd", "/etc/localtime", " UTC", "localtime"]
)
def test_it_rejects_an_unknown_zone_naming_the_field(name: str) -> None:
    with pytest.raises(BadInputError) as caught:
        parse_zone(name)
    assert str(caught.value) == f"tz: unknown time zone {name!r}"
    assert caught.value.field == "tz"


# parse_duration


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("90s", timedelta(seconds=90)),
        ("15m", timedelta(minutes=15)),
        ("2h", timedelta(hours=2)),
        ("1d", timedelta(days=1)),
        ("1w", timedelta(weeks=1)),
        (" 5m ", timedelta(minutes=5)),
    ],
)
def test_it_parses_a_duration(text: str, expected: timedelta) -> None:
    assert parse_duration(text) == expected


@pytest.mark.parametrize("text", ["0m", "15", "m", "-5m", "1.5h", "15M", "1y", "", "9" * 30 + "w"])
def test_it_rejects_a_bad_duration_naming_the_field(text: str) -> None:
    with pytest.raises(BadInputError) as caught:
        parse_duration(text, "lease")
    assert_one_line_naming(caught.value, "lease", text)


# parse_at


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2027-01-05T09:00:00+01:00", "2027-01-05T08:00:00Z"),
        ("2027-01-05T08:00Z", "2027-01-05T08:00:00Z"),
        ("2027-01-05T09:00", "2027-01-05T14:00:00Z"),
        ("2027-01-05 09:00", "2027-01-05T14:00:00Z"),
        ("2027-01-05", "2027-01-05T05:00:00Z"),
        ("2027-07-05T09:00", "2027-07-05T13:00:00Z"),
        # 02:30 does not exist on the spring-forward day: the first instant after the gap.
        ("2027-03-14T02:30", "2027-03-14T07:00:00Z"),
        ("2027-03-14T02:00", "2027-03-14T07:00:00Z"),
        ("2027-03-14T03:00", "2027-03-14T07:00:00Z"),
        ("2027-03-14T01:59", "2027-03-14T06:59:00Z"),
        # 01:30 happens twice on the fall-back day: the first occurrence, EDT.
        ("2027-11-07T01:30", "2027-11-07T05:30:00Z"),
        ("2027-11-07T00:59", "2027-11-07T04:59:00Z"),
        ("2027-11-07T02:00", "2027-11-07T07:00:00Z"),
    ],
)
def test_it_reads_an_absolute_time(text: str, expected: str) -> None:
    assert iso([parse_at(text, NY, NOW)]) == [expected]


def test_it_returns_an_aware_utc_instant() -> None:
    assert parse_at("2027-01-05T09:00", NY, NOW).tzinfo is UTC


def test_it_resolves_a_gap_of_thirty_minutes_to_its_end() -> None:
    lord_howe = ZoneInfo("Australia/Lord_Howe")
    assert iso([parse_at("2027-10-03T02:15", lord_howe, NOW)]) == ["2027-10-02T15:30:00Z"]


@pytest.mark.parametrize(
    ("text", "delta"),
    [
        ("+90s", timedelta(seconds=90)),
        ("+15m", timedelta(minutes=15)),
        ("+2h", timedelta(hours=2)),
        ("+1d", timedelta(days=1)),
        ("+1w", timedelta(weeks=1)),
    ],
)
def test_it_reads_a_relative_time(text: str, delta: timedelta) -> None:
    assert parse_at(text, NY, NOW) == NOW + delta


def test_it_counts_a_relative_day_across_spring_forward_as_24_real_hours() -> None:
    now = datetime(2027, 3, 13, 7, 0, tzinfo=NY)
    assert iso([parse_at("+1d", NY, now)]) == ["2027-03-14T12:00:00Z"]


def test_it_reads_now_as_now_in_utc() -> None:
    now = datetime(2027, 3, 13, 7, 0, 30, 123, tzinfo=NY)
    assert parse_at("now", NY, now) == now
    assert parse_at(" NOW ", NY, now).tzinfo is UTC


@pytest.mark.parametrize("text", ["+0m", "+0s", "+00h"])
def test_it_reads_a_zero_offset_as_now(text: str) -> None:
    assert parse_at(text, NY, NOW) == parse_at("now", NY, NOW)


@pytest.mark.parametrize(
    "text", ["2027-02-30", "2027-02-30T09:00", "garbage", "", "+-1m", "+5y", "+15", "tomorrow", "+"]
)
def test_it_rejects_a_bad_time_naming_the_field_and_echoing_it(text: str) -> None:
    with pytest.raises(BadInputError) as caught:
        parse_at(text, NY, NOW)
    assert_one_line_naming(caught.value, "at", text)


def test_it_explains_an_impossible_date() -> None:
    with pytest.raises(BadInputError, match="day is out of range"):
        parse_at("2027-02-30", NY, NOW)


def test_it_rejects_a_naive_now() -> None:
    with pytest.raises(ValueError, match="aware"):
        parse_at("now", NY, datetime(2027, 1, 1))


# parse_rule: errors

START = utc("2027-01-04T08:00Z")  # Monday 09:00 in Berlin


@pytest.mark.parametrize(
    "text",
    [
        "FREQ=SOMETIMES",
        "BYDAY=MO",
        "",
        "FREQ=DAILY;INTERVAL=0",
        "FREQ=DAILY;COUNT=-1",
        "FREQ=DAILY;COUNT=3;UNTIL=20270110T000000Z",
        "FREQ=MONTHLY;BYMONTHDAY=0",
        "FREQ=MONTHLY;BYMONTHDAY=32",
        "FREQ=HOURLY;BYHOUR=25",
        "FREQ=WEEKLY;BYDAY=XX",
        "FREQ=DAILY;FOO=1",
        "FREQ=DAILY;UNTIL=tomorrow",
        "FREQ=DAILY;UNTIL=20270230T000000Z",
        "FREQ=DAILY;FREQ=WEEKLY",
        "FREQ=DAILY;WKST=XX",
        "FREQ=DAILY;;BYHOUR",
        # Valid syntax, but nothing ever matches or everything ends before the start.
        "FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=30",
        "FREQ=MONTHLY;BYMONTH=4,6;BYMONTHDAY=31",
        "FREQ=DAILY;UNTIL=20261231T000000Z",
    ],
)
def test_it_rejects_a_bad_rrule_naming_the_field(text: str) -> None:
    with pytest.raises(BadInputError) as caught:
        parse_rule("rrule", text, BERLIN, START)
    message = str(caught.value)
    assert message.startswith("rrule: ")
    assert caught.value.field == "rrule"
    assert "\n" not in message
    assert caught.value.exit_code == 2


@pytest.mark.parametrize(
    "text",
    [
        "DTSTART:20270101T090000Z\nRRULE:FREQ=DAILY",
        "FREQ=DAILY;DTSTART=20270101T090000Z",
        "dtstart:20270101T090000Z",
    ],
)
def test_it_rejects_dtstart_inside_the_rule(text: str) -> None:
    with pytest.raises(BadInputError, match=r"^rrule: DTSTART is not allowed"):
        parse_rule("rrule", text, BERLIN, START)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("0 9 * * * *", "expected 5 fields"),
        ("0 9 * *", "expected 5 fields"),
        ("", "expected 5 fields"),
        ("@reboot", "names no time"),
        ("@fortnightly", "unknown nickname"),
        ("0 9 15W * *", "bad day-of-month"),
        ("0 9 ? * MON", "bad day-of-month"),
        ("0 9 * * 5#6", "bad day-of-week"),
        ("61 * * * *", "bad minute"),
        ("0 25 * * *", "bad hour"),
        ("0 9 * * MON-XYZ", "bad day-of-week"),
        ("0 9 32 * *", "bad day-of-month"),
        ("0 9 * 13 *", "bad month"),
        ("0 0 30 2 *", "bad day-of-month"),
        ("*/0 * * * *", "bad minute"),
    ],
)
def test_it_rejects_a_bad_cron_naming_the_field(text: str, reason: str) -> None:
    with pytest.raises(BadInputError) as caught:
        parse_rule("cron", text, BERLIN, START)
    message = str(caught.value)
    assert message.startswith("cron: ")
    assert caught.value.field == "cron"
    assert reason in message
    assert repr(text) in message
    assert "\n" not in message


# parse_rule: what a Rule holds


def test_it_stores_rrule_text_without_the_prefix_in_upper_case() -> None:
    rule = parse_rule("rrule", " rrule:freq=daily;count=2; ", BERLIN, START)
    assert rule == Rule("rrule", "FREQ=DAILY;COUNT=2", BERLIN, START)


def test_it_stores_cron_text_with_single_spaces() -> None:
    assert parse_rule("cron", " 0  9 * *   1-5 ", BERLIN, START).text == "0 9 * * 1-5"


def test_it_keeps_the_start_as_utc_whole_seconds() -> None:
    start = datetime(2027, 1, 4, 9, 0, 0, 500_000, tzinfo=BERLIN)
    rule = parse_rule("rrule", "FREQ=DAILY", BERLIN, start)
    assert rule.dtstart == START
    assert rule.dtstart.tzinfo is UTC
    assert first_fire(rule) == START


def test_it_rejects_a_naive_start() -> None:
    with pytest.raises(ValueError, match="aware"):
        parse_rule("cron", "0 9 * * *", BERLIN, datetime(2027, 1, 4, 9))


# RRULE features


def rrule_fires(text: str, count: int = 10, start: datetime = START) -> list[str]:
    rule = parse_rule("rrule", text, BERLIN, start)
    return iso(upcoming(rule, start - timedelta(seconds=1), count))


def test_it_fires_an_rrule_at_dtstart_when_dtstart_matches() -> None:
    rule = parse_rule("rrule", "FREQ=DAILY", BERLIN, START)
    assert first_fire(rule) == START


def test_it_fires_an_rrule_first_at_its_first_match_after_dtstart() -> None:
    rule = parse_rule("rrule", "FREQ=WEEKLY;BYDAY=WE;BYHOUR=7;BYMINUTE=30", BERLIN, START)
    assert iso1(first_fire(rule)) == "2027-01-06T06:30:00Z"


def test_it_honours_count() -> None:
    assert rrule_fires("FREQ=DAILY;COUNT=3") == [
        "2027-01-04T08:00:00Z",
        "2027-01-05T08:00:00Z",
        "2027-01-06T08:00:00Z",
    ]


def test_it_returns_none_once_count_is_used_up_even_long_after() -> None:
    rule = parse_rule("rrule", "FREQ=HOURLY;COUNT=5", BERLIN, START)
    assert next_fire(rule, utc("2027-01-04T11:30Z")) == utc("2027-01-04T12:00Z")
    assert next_fire(rule, utc("2027-01-04T12:00Z")) is None
    assert next_fire(rule, utc("2031-06-01T00:00Z")) is None


@pytest.mark.parametrize(
    ("until", "fires"),
    [
        ("20270106T080000Z", 3),
        ("20270106T075959Z", 2),
        ("20270106T090000", 3),
        ("20270106T085959", 2),
        ("20270106", 3),
        ("20270105", 2),
    ],
)
def test_it_honours_until_in_utc_local_or_as_a_date(until: str, fires: int) -> None:
    expected = ["2027-01-04T08:00:00Z", "2027-01-05T08:00:00Z", "2027-01-06T08:00:00Z"]
    assert rrule_fires(f"FREQ=DAILY;UNTIL={until}") == expected[:fires]


def test_it_returns_none_after_until() -> None:
    rule = parse_rule("rrule", "FREQ=DAILY;UNTIL=20270106T080000Z", BERLIN, START)
    assert next_fire(rule, utc("2027-01-06T08:00Z")) is None


def test_it_honours_byday() -> None:
    assert rrule_fires("FREQ=WEEKLY;BYDAY=MO,WE,FR", 4) == [
        "2027-01-04T08:00:00Z",
        "2027-01-06T08:00:00Z",
        "2027-01-08T08:00:00Z",
        "2027-01-11T08:00:00Z",
    ]


def test_it_honours_bymonthday_counting_from_the_end() -> None:
    # 31 March is summer time in Berlin: 09:00 CEST is 07:00Z.
    assert rrule_fires("FREQ=MONTHLY;BYMONTHDAY=-1", 3) == [
        "2027-01-31T08:00:00Z",
        "2027-02-28T08:00:00Z",
        "2027-03-31T07:00:00Z",
    ]


def test_it_honours_bysetpos_for_the_last_weekday_of_the_month() -> None:
    assert rrule_fires("FREQ=MONTHLY;BYDAY=MO,TU,WE,TH,FR;BYSETPOS=-1", 3) == [
        "2027-01-29T08:00:00Z",
        "2027-02-26T08:00:00Z",
        "2027-03-31T07:00:00Z",
    ]


def test_it_honours_interval() -> None:
    assert rrule_fires("FREQ=WEEKLY;INTERVAL=2;BYDAY=TU", 3) == [
        "2027-01-05T08:00:00Z",
        "2027-01-19T08:00:00Z",
        "2027-02-02T08:00:00Z",
    ]


def test_it_keeps_the_interval_phase_years_after_the_start() -> None:
    rule = parse_rule("rrule", "FREQ=DAILY;INTERVAL=3", BERLIN, START)
    # 2030-01-01 is 1093 days after the start, so 1095 (a multiple of 3) is 2030-01-03.
    assert iso1(next_fire(rule, utc("2030-01-01T00:00Z"))) == "2030-01-03T08:00:00Z"


def test_it_keeps_count_years_after_the_start() -> None:
    rule = parse_rule("rrule", "FREQ=MINUTELY;INTERVAL=15;COUNT=100000", BERLIN, START)
    last = START + 99_999 * timedelta(minutes=15)
    assert next_fire(rule, last - timedelta(minutes=1)) == last
    assert next_fire(rule, last) is None


# next_fire, upcoming and count_fires


def test_it_fires_strictly_after_the_given_instant() -> None:
    rule = parse_rule("rrule", "FREQ=DAILY", BERLIN, START)
    assert next_fire(rule, START) == START + timedelta(days=1)


def test_it_never_fires_before_the_start() -> None:
    rule = parse_rule("cron", "0 9 * * *", BERLIN, START)
    assert next_fire(rule, utc("2026-06-01T00:00Z")) == START


def test_it_fires_cron_first_at_its_first_match_at_or_after_dtstart() -> None:
    assert first_fire(parse_rule("cron", "0 9 * * *", BERLIN, START)) == START
    later = parse_rule("cron", "0 9 * * *", BERLIN, START + timedelta(seconds=1))
    assert first_fire(later) == START + timedelta(days=1)


def test_it_accepts_after_in_any_zone_and_answers_in_utc() -> None:
    rule = parse_rule("cron", "0 9 * * *", BERLIN, START)
    fire = next_fire(rule, datetime(2027, 1, 5, 3, 0, tzinfo=NY))
    assert fire == utc("2027-01-06T08:00Z")
    assert fire is not None and fire.tzinfo is UTC


def test_it_rejects_a_naive_after() -> None:
    rule = parse_rule("cron", "0 9 * * *", BERLIN, START)
    with pytest.raises(ValueError, match="aware"):
        next_fire(rule, datetime(2027, 1, 5))


def test_it_lists_upcoming_fires() -> None:
    rule = parse_rule("cron", "0 9 * * 1-5", BERLIN, START)
    assert iso(upcoming(rule, START, 5)) == [
        "2027-01-05T08:00:00Z",
        "2027-01-06T08:00:00Z",
        "2027-01-07T08:00:00Z",
        "2027-01-08T08:00:00Z",
        "2027-01-11T08:00:00Z",
    ]
    assert upcoming(rule, START, 0) == []


def test_it_lists_fewer_upcoming_fires_when_the_rule_ends() -> None:
    rule = parse_rule("rrule", "FREQ=DAILY;COUNT=2", BERLIN, START)
    assert len(upcoming(rule, START - timedelta(days=1), 10)) == 2


def test_it_counts_the_fires_a_backlog_skipped() -> None:
    rule = parse_rule("cron", "*/15 * * * *", BERLIN, START)
    after, until = utc("2027-01-04T10:00Z"), utc("2027-01-04T12:00Z")
    assert count_fires(rule, after, until) == 8  # (10:00, 12:00], both ends on the grid
    assert count_fires(rule, after, until, cap=3) == 3
    assert count_fires(rule, until, after) == 0


def test_it_counts_only_the_fires_left_before_the_rule_ends() -> None:
    rule = parse_rule("rrule", "FREQ=DAILY;COUNT=3", BERLIN, START)
    assert count_fires(rule, START - timedelta(days=1), START + timedelta(days=30)) == 3


def test_it_fires_a_start_in_the_repeated_hour_at_the_start_itself() -> None:
    # DTSTART is 01:30 EST, the second 01:30 of the fall-back night: RFC 5545 makes it the first
    # instance, although the rule's later 01:30s are first occurrences.
    start = utc("2027-11-07T06:30Z")
    rule = parse_rule("rrule", "FREQ=DAILY", NY, start)
    assert iso(upcoming(rule, start - timedelta(seconds=1), 2)) == [
        "2027-11-07T06:30:00Z",
        "2027-11-08T06:30:00Z",
    ]


def test_it_evaluates_a_rule_built_directly_from_stored_fields() -> None:
    rule = Rule("rrule", "RRULE:FREQ=DAILY;COUNT=2", BERLIN, datetime(2027, 1, 4, 9, tzinfo=BERLIN))
    assert rule.dtstart == START
    assert iso(upcoming(rule, START - timedelta(days=1), 5)) == [
        "2027-01-04T08:00:00Z",
        "2027-01-05T08:00:00Z",
    ]
