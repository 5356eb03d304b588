"""`--at` as people say it (issue 33, item 2): docs/time.md's table of cases, run as a table at
a fixed `now`, the DST cases on real zones, and properties of the next-occurrence rule."""

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from duequeue.errors import BadInputError
from duequeue.schedule.rules import is_from_now, named_wall, parse_at
from duequeue.schedule.wallclock import resolve_wall, to_wall

BERLIN = ZoneInfo("Europe/Berlin")
NEW_YORK = ZoneInfo("America/New_York")
# Tuesday 2027-01-05, 10:30 in Berlin (09:30Z).
NOW = datetime(2027, 1, 5, 9, 30, tzinfo=UTC)


def at(text: str, tz: ZoneInfo = BERLIN, now: datetime = NOW) -> str:
    """Return what `text` means as the zone's wall clock shows it, with the offset."""
    return parse_at(text, tz, now).astimezone(tz).isoformat()


# docs/time.md's table, seen from Tuesday 2027-01-05 10:30 in Berlin.
@pytest.mark.parametrize(
    ("text", "meant"),
    [
        ("09:00", "2027-01-06T09:00:00+01:00"),  # passed today: tomorrow's
        ("17:00", "2027-01-05T17:00:00+01:00"),  # still ahead today: today's
        ("9:05", "2027-01-06T09:05:00+01:00"),
        ("17:00:30", "2027-01-05T17:00:30+01:00"),
        ("5pm", "2027-01-05T17:00:00+01:00"),
        ("5 PM", "2027-01-05T17:00:00+01:00"),
        ("9:30am", "2027-01-06T09:30:00+01:00"),
        ("9 a.m.", "2027-01-06T09:00:00+01:00"),
        ("12am", "2027-01-06T00:00:00+01:00"),
        ("12pm", "2027-01-05T12:00:00+01:00"),
        ("noon", "2027-01-05T12:00:00+01:00"),
        ("midnight", "2027-01-06T00:00:00+01:00"),
        ("tomorrow 9am", "2027-01-06T09:00:00+01:00"),
        ("tomorrow at 9am", "2027-01-06T09:00:00+01:00"),
        ("9am tomorrow", "2027-01-06T09:00:00+01:00"),
        ("Tomorrow Noon", "2027-01-06T12:00:00+01:00"),
        ("today 17:00", "2027-01-05T17:00:00+01:00"),
        ("today 9am", "2027-01-05T09:00:00+01:00"),  # past: goes out at the next tick
        ("monday 08:30", "2027-01-11T08:30:00+01:00"),
        ("mon 8:30am", "2027-01-11T08:30:00+01:00"),
        ("tuesday 11:00", "2027-01-05T11:00:00+01:00"),  # today, still ahead
        ("tue 10:00", "2027-01-12T10:00:00+01:00"),  # today, passed: next week's
        ("friday, 5pm", "2027-01-08T17:00:00+01:00"),
        ("thurs noon", "2027-01-07T12:00:00+01:00"),
        ("2027-02-01 9am", "2027-02-01T09:00:00+01:00"),
        ("in 2 hours", "2027-01-05T12:30:00+01:00"),
        ("in 90 minutes", "2027-01-05T12:00:00+01:00"),
        ("in an hour", "2027-01-05T11:30:00+01:00"),
        ("in 2h", "2027-01-05T12:30:00+01:00"),
        ("in 1 day", "2027-01-06T10:30:00+01:00"),
        ("in 3 weeks", "2027-01-26T10:30:00+01:00"),
        ("in 30 secs", "2027-01-05T10:30:30+01:00"),
    ],
)
def test_it_reads_each_form_of_the_table(text: str, meant: str) -> None:
    assert at(text) == meant


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("tomorrow", "give the time of day too, e.g. 'tomorrow 9am'"),
        ("monday", "give the time of day too, e.g. 'tomorrow 9am'"),
        ("next monday 9am", "'next' is ambiguous; a weekday alone ('monday') is the coming one"),
        ("tonight", "say the time instead ('tonight' has none), e.g. 'today 21:00'"),
        ("tomorrow 9am 10am", "two times of day"),
        ("monday tuesday 9am", "two days"),
        ("tomorrow 9am please", "unknown word 'please'"),
        ("in 2 fortnights", "expected 'in', a number and a unit (seconds to weeks), e.g. "
         "'in 2 hours'"),
        ("in two hours", "expected 'in', a number and a unit (seconds to weeks), e.g. "
         "'in 2 hours'"),
        ("in 2", "expected 'in', a number and a unit, e.g. 'in 2 hours'"),
        ("in 999999 weeks", "too far ahead"),
    ],
)  # fmt: skip
def test_it_refuses_a_spoken_form_that_says_too_little_or_too_much(text: str, why: str) -> None:
    with pytest.raises(BadInputError) as bad:
        parse_at(text, BERLIN, NOW)
    assert bad.value.field == "at"
    assert bad.value.detail == f"invalid time {text!r}: {why}"


@pytest.mark.parametrize(
    ("text", "detail"),
    [
        ("25:00", "invalid time of day '25:00'"),
        ("13pm", "invalid time '13pm': am/pm hours run 1 to 12"),
        ("2027-02-30 9am", "invalid date '2027-02-30'"),
    ],
)
def test_it_refuses_a_time_or_date_that_does_not_exist(text: str, detail: str) -> None:
    with pytest.raises(BadInputError) as bad:
        parse_at(text, BERLIN, NOW)
    assert bad.value.detail == detail


def test_text_that_is_no_form_at_all_lists_the_forms() -> None:
    with pytest.raises(BadInputError) as bad:
        parse_at("soon", BERLIN, NOW)
    assert bad.value.detail == (
        "invalid time 'soon': expected 'now', '+15m', 'in 2 hours', 'tomorrow 9am', "
        "'monday 08:30', '17:00', 'noon' or ISO 8601 such as 2027-01-05T09:00 or ...+01:00"
    )


def test_iso_8601_keeps_its_meaning() -> None:
    assert at("2027-01-05") == "2027-01-05T00:00:00+01:00"
    assert at("2027-01-05 09:00") == "2027-01-05T09:00:00+01:00"
    assert at("2027-01-05T09:00Z") == "2027-01-05T10:00:00+01:00"


# -- daylight-saving changes: docs/time.md's rules, on New York's clocks -----------------------


def test_a_time_a_gap_skips_is_the_first_instant_after_the_gap() -> None:
    # 2027-03-14: 02:00 EST jumps to 03:00 EDT; at 00:30 EST, 02:30 tonight does not exist.
    before = datetime(2027, 3, 14, 5, 30, tzinfo=UTC)
    assert at("02:30", NEW_YORK, before) == "2027-03-14T03:00:00-04:00"
    assert at("tomorrow 02:30", NEW_YORK, before - timedelta(days=1)) == (
        "2027-03-14T03:00:00-04:00"
    )
    # What the user meant is kept: the wall time, which newer zone rules may place again.
    assert named_wall("02:30", NEW_YORK, before) == datetime(2027, 3, 14, 2, 30)


def test_a_repeated_time_is_its_first_occurrence_and_once_passed_is_tomorrows() -> None:
    # 2027-11-07: 02:00 EDT falls back to 01:00 EST; 01:30 happens twice.
    evening = datetime(2027, 11, 7, 3, 0, tzinfo=UTC)  # 23:00 EDT the day before
    assert at("01:30", NEW_YORK, evening) == "2027-11-07T01:30:00-04:00"
    # At 01:45 EDT the first 01:30 is past; the second (EST) is not another chance.
    between = datetime(2027, 11, 7, 5, 45, tzinfo=UTC)
    assert at("01:30", NEW_YORK, between) == "2027-11-08T01:30:00-05:00"


def test_in_n_units_is_real_elapsed_time_and_a_day_is_the_same_wall_time() -> None:
    before = datetime(2027, 3, 13, 14, 0, tzinfo=UTC)  # 09:00 EST, the day before the gap
    assert at("in 1 day", NEW_YORK, before) == "2027-03-14T10:00:00-04:00"  # 24 hours
    assert at("tomorrow 9am", NEW_YORK, before) == "2027-03-14T09:00:00-04:00"  # 23 hours
    assert is_from_now("in 1 day") and is_from_now("+1d") and is_from_now("now")
    assert not is_from_now("tomorrow 9am")
    assert named_wall("in 1 day", NEW_YORK, before) is None  # an instant, not a wall time


# -- properties --------------------------------------------------------------------------------

ZONES = ["Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "America/Santiago"]
INSTANTS = st.datetimes(
    min_value=datetime(2026, 1, 1), max_value=datetime(2029, 1, 1), timezones=st.just(UTC)
)


@settings(max_examples=300, deadline=None, database=None)
@given(
    now=INSTANTS,
    zone=st.sampled_from(ZONES),
    hour=st.integers(0, 23),
    minute=st.integers(0, 59),
)
def test_a_time_alone_is_its_next_occurrence(
    now: datetime, zone: str, hour: int, minute: int
) -> None:
    tz = ZoneInfo(zone)
    found = parse_at(f"{hour:02d}:{minute:02d}", tz, now)
    wall = named_wall(f"{hour:02d}:{minute:02d}", tz, now)
    assert wall is not None and (wall.hour, wall.minute) == (hour, minute)
    assert found == resolve_wall(wall, tz)
    assert found >= now  # never in the past
    # ... and the first such: the same wall time a day earlier has passed (or is not ahead).
    assert resolve_wall(wall - timedelta(days=1), tz) < now
    assert found - now <= timedelta(hours=27)  # a day, and at most a gap's worth more


@settings(max_examples=300, deadline=None, database=None)
@given(now=INSTANTS, zone=st.sampled_from(ZONES), day=st.integers(0, 6), hour=st.integers(0, 23))
def test_a_weekday_is_the_coming_one(now: datetime, zone: str, day: int, hour: int) -> None:
    tz = ZoneInfo(zone)
    name = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")[day]
    found = parse_at(f"{name} {hour}:00", tz, now)
    wall = named_wall(f"{name} {hour}:00", tz, now)
    assert wall is not None and wall.weekday() == day and wall.hour == hour
    assert found >= now
    assert resolve_wall(wall - timedelta(weeks=1), tz) < now
    assert to_wall(now, tz).date() <= wall.date() <= to_wall(now, tz).date() + timedelta(days=7)


@settings(max_examples=200, deadline=None, database=None)
@given(now=INSTANTS, zone=st.sampled_from(ZONES), hours=st.integers(0, 10_000))
def test_in_n_hours_is_plus_n_hours(now: datetime, zone: str, hours: int) -> None:
    tz = ZoneInfo(zone)
    assert parse_at(f"in {hours} hours", tz, now) == parse_at(f"+{hours}h", tz, now)
