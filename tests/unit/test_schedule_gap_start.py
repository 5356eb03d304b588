"""An RRULE whose --at names a wall time skipped by a gap: only that first fire moves.

The rule keeps the wall time it was given (02:30); its first fire is the end of the gap (03:00
EDT), the fire every later day is 02:30 again. Checked on real zones, case by case and against a
brute-force oracle that resolves each day's wall time with zoneinfo alone.
"""

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from duequeue.schedule.rules import Rule, named_wall, parse_at, parse_rule, upcoming

NOW = datetime(2027, 1, 1, tzinfo=UTC)
MINUTE = timedelta(minutes=1)
NY, BERLIN, SANTIAGO = "America/New_York", "Europe/Berlin", "America/Santiago"


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def added(at: str, zone: str, text: str) -> Rule:
    """Return the rule as `duequeue add --at AT --tz ZONE --rrule TEXT` builds it."""
    tz = ZoneInfo(zone)
    return parse_rule("rrule", text, tz, parse_at(at, tz, NOW), named_wall(at, tz, NOW))


def first(rule: Rule, count: int) -> list[str]:
    found = upcoming(rule, rule.dtstart - timedelta(microseconds=1), count)
    return [instant.strftime("%Y-%m-%dT%H:%MZ") for instant in found]


# fmt: off
GAP_STARTS = [
    # New York springs forward 2027-03-14 02:00 EST -> 03:00 EDT (07:00Z).
    ("2027-03-14T02:30", NY, "FREQ=DAILY",
     ["2027-03-14T07:00Z", "2027-03-15T06:30Z", "2027-03-16T06:30Z"]),
    ("2027-03-14T02:30", NY, "FREQ=WEEKLY",
     ["2027-03-14T07:00Z", "2027-03-21T06:30Z", "2027-03-28T06:30Z"]),
    ("2027-03-14T02:30", NY, "FREQ=MONTHLY",
     ["2027-03-14T07:00Z", "2027-04-14T06:30Z", "2027-05-14T06:30Z"]),
    ("2027-03-14T02:30", NY, "FREQ=YEARLY",
     ["2027-03-14T07:00Z", "2028-03-14T06:30Z", "2029-03-14T06:30Z"]),
    ("2027-03-14T02:30", NY, "FREQ=DAILY;BYHOUR=9",
     ["2027-03-14T13:30Z", "2027-03-15T13:30Z"]),  # the minute comes from --at
    ("2027-03-14T02:30", NY, "FREQ=DAILY;COUNT=2",
     ["2027-03-14T07:00Z", "2027-03-15T06:30Z"]),  # the moved fire counts as one
    # Berlin springs forward 2027-03-28 02:00 CET -> 03:00 CEST (01:00Z).
    ("2027-03-28T02:30", BERLIN, "FREQ=DAILY",
     ["2027-03-28T01:00Z", "2027-03-29T00:30Z", "2027-03-30T00:30Z"]),
    ("2027-03-28T02:30", BERLIN, "FREQ=WEEKLY",
     ["2027-03-28T01:00Z", "2027-04-04T00:30Z", "2027-04-11T00:30Z"]),
    # Santiago springs forward 2027-09-05 00:00 -04 -> 01:00 -03 (04:00Z).
    ("2027-09-05T00:30", SANTIAGO, "FREQ=HOURLY;BYMINUTE=30",
     ["2027-09-05T04:00Z", "2027-09-05T04:30Z", "2027-09-05T05:30Z"]),
    ("2027-09-05T00:30", SANTIAGO, "FREQ=DAILY",
     ["2027-09-05T04:00Z", "2027-09-06T03:30Z", "2027-09-07T03:30Z"]),
]
# fmt: on


@pytest.mark.parametrize(("at", "zone", "text", "expected"), GAP_STARTS)
def test_it_moves_only_the_skipped_first_fire_and_keeps_the_wall_time(
    at: str, zone: str, text: str, expected: list[str]
) -> None:
    assert first(added(at, zone, text), len(expected)) == expected


@pytest.mark.parametrize(
    ("at", "zone", "text", "expected"),
    [
        # A start that exists: 03:00 on the gap day, the day before, a repeated hour.
        ("2027-03-14T03:00", NY, "FREQ=DAILY", ["2027-03-14T07:00Z", "2027-03-15T07:00Z"]),
        (
            "2027-03-13T02:30",
            NY,
            "FREQ=DAILY",
            ["2027-03-13T07:30Z", "2027-03-14T07:00Z", "2027-03-15T06:30Z"],
        ),
        ("2027-11-07T01:30", NY, "FREQ=DAILY", ["2027-11-07T05:30Z", "2027-11-08T06:30Z"]),
        ("2027-03-28T03:00", BERLIN, "FREQ=WEEKLY", ["2027-03-28T01:00Z", "2027-04-04T01:00Z"]),
        # With an offset --at is an instant, 01:30 EST here, not a wall time to keep.
        ("2027-03-14T02:30-04:00", NY, "FREQ=DAILY", ["2027-03-14T06:30Z", "2027-03-15T05:30Z"]),
    ],
)
def test_it_leaves_a_start_that_exists_as_it_was(
    at: str, zone: str, text: str, expected: list[str]
) -> None:
    rule = added(at, zone, text)
    assert rule.text == text
    assert first(rule, len(expected)) == expected


def test_it_writes_the_named_wall_time_into_the_stored_rule() -> None:
    assert added("2027-03-14T02:30", NY, "FREQ=DAILY").text == (
        "FREQ=DAILY;BYHOUR=2;BYMINUTE=30;BYSECOND=0"
    )
    assert added("2027-03-14T02:30", NY, "FREQ=WEEKLY;COUNT=3").text == (
        "FREQ=WEEKLY;COUNT=3;BYDAY=SU;BYHOUR=2;BYMINUTE=30;BYSECOND=0"
    )


def test_it_keeps_rule_text_that_the_gap_does_not_change() -> None:
    rule = added("2027-09-05T00:30", SANTIAGO, "FREQ=HOURLY;BYMINUTE=30")
    assert rule.text == "FREQ=HOURLY;BYMINUTE=30"


def test_it_evaluates_the_stored_rule_alike_when_a_tick_rebuilds_it() -> None:
    rule = added("2027-03-14T02:30", NY, "FREQ=DAILY;COUNT=3")
    again = parse_rule("rrule", rule.text, rule.tz, rule.dtstart)
    assert (
        first(again, 5)
        == first(rule, 5)
        == [
            "2027-03-14T07:00Z",
            "2027-03-15T06:30Z",
            "2027-03-16T06:30Z",
        ]
    )


def test_it_counts_an_every_n_hours_rule_from_the_end_of_the_gap() -> None:
    # No wall time to keep: real hours from the first instant that exists.
    rule = added("2027-03-14T02:30", NY, "FREQ=HOURLY")
    assert rule.text == "FREQ=HOURLY"
    assert first(rule, 3) == ["2027-03-14T07:00Z", "2027-03-14T08:00Z", "2027-03-14T09:00Z"]


def test_a_start_at_the_end_of_a_gap_also_fires_the_rule_times_inside_it() -> None:
    # --at 01:00 and --at 00:30 are one instant in Santiago that night: the rule's 00:30 fires
    # there, as it would in a series started the day before.
    rule = added("2027-09-05T01:00", SANTIAGO, "FREQ=HOURLY;BYMINUTE=30")
    assert first(rule, 2) == ["2027-09-05T04:00Z", "2027-09-05T04:30Z"]
    earlier = added("2027-09-04T12:00", SANTIAGO, "FREQ=HOURLY;BYMINUTE=30")
    assert utc("2027-09-05T04:00Z") in upcoming(earlier, utc("2027-09-05T03:00Z"), 3)


# (zone, an instant where its clocks spring forward)
FORWARD = [
    (NY, "2027-03-14T07:00Z"),
    (BERLIN, "2027-03-28T01:00Z"),
    (SANTIAGO, "2027-09-05T04:00Z"),
    ("Australia/Lord_Howe", "2027-10-02T15:30Z"),
    ("Australia/Sydney", "2027-10-02T16:00Z"),
    ("Asia/Pyongyang", "2018-05-04T15:00Z"),
]


def oracle_resolve(wall: datetime, zone: ZoneInfo) -> datetime:
    """Resolve a wall time by scanning real minutes: its first instant, else the gap's end."""
    instant = wall.replace(tzinfo=zone).astimezone(UTC) - timedelta(hours=3)
    while True:
        local = instant.astimezone(zone).replace(tzinfo=None)
        if local >= wall:
            return instant
        instant += MINUTE


@pytest.mark.parametrize(("zone_name", "change"), FORWARD)
@pytest.mark.parametrize("freq", ["DAILY", "WEEKLY"])
def test_it_agrees_with_the_oracle_for_every_start_in_the_gap(
    zone_name: str, change: str, freq: str
) -> None:
    zone = ZoneInfo(zone_name)
    end = utc(change)
    step = timedelta(days=1 if freq == "DAILY" else 7)
    gap_walls = []
    wall = end.astimezone(zone).replace(tzinfo=None) - timedelta(hours=2)
    while wall < end.astimezone(zone).replace(tzinfo=None):
        if oracle_resolve(wall, zone) == end:
            gap_walls.append(wall)
        wall += MINUTE * 5
    assert gap_walls  # the window holds the gap
    for wall in gap_walls:
        rule = added(wall.isoformat(), zone_name, f"FREQ={freq}")
        expected = [end] + [oracle_resolve(wall + step * k, zone) for k in range(1, 5)]
        assert upcoming(rule, rule.dtstart - MINUTE, 5) == expected, wall
