"""What cron text means: nicknames, day-of-month with day-of-week, L, LW, #, 7 and named hours.

Real zones, a fixed start, exact instants; each rule next to one that must read differently.
"""

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from duequeue.schedule.rules import parse_rule, upcoming

BERLIN = ZoneInfo("Europe/Berlin")
NY = ZoneInfo("America/New_York")
START = datetime(2027, 1, 1, tzinfo=UTC)  # a Friday


def local_fires(text: str, count: int, zone: ZoneInfo = BERLIN) -> list[str]:
    rule = parse_rule("cron", text, zone, START)
    found = upcoming(rule, START, count)
    return [fire.astimezone(zone).strftime("%a %m-%d %H:%M") for fire in found]


@pytest.mark.parametrize(
    ("nickname", "stored"),
    [
        ("@yearly", "0 0 1 1 *"),
        ("@annually", "0 0 1 1 *"),
        ("@monthly", "0 0 1 * *"),
        ("@weekly", "0 0 * * 0"),
        ("@daily", "0 0 * * *"),
        ("@midnight", "0 0 * * *"),
        ("@hourly", "0 * * * *"),
        (" @Daily ", "0 0 * * *"),
    ],
)
def test_it_accepts_a_nickname_and_stores_what_it_stands_for(nickname: str, stored: str) -> None:
    rule = parse_rule("cron", nickname, BERLIN, START)
    assert rule.text == stored
    assert upcoming(rule, START, 3) == upcoming(parse_rule("cron", stored, BERLIN, START), START, 3)


def test_it_fires_nicknames_at_their_times() -> None:
    assert local_fires("@weekly", 2) == ["Sun 01-03 00:00", "Sun 01-10 00:00"]
    assert local_fires("@monthly", 2) == ["Mon 02-01 00:00", "Mon 03-01 00:00"]
    assert local_fires("@hourly", 2) == ["Fri 01-01 02:00", "Fri 01-01 03:00"]


def test_hourly_follows_real_time_and_daily_the_wall_clock_across_a_change() -> None:
    # New York falls back 2027-11-07 02:00 EDT -> 01:00 EST (06:00Z).
    after = datetime(2027, 11, 7, 4, 30, tzinfo=UTC)
    hourly = parse_rule("cron", "@hourly", NY, START)
    assert [f.strftime("%H:%MZ") for f in upcoming(hourly, after, 3)] == [
        "05:00Z",  # 01:00 EDT
        "06:00Z",  # 01:00 EST
        "07:00Z",
    ]
    # Santiago springs forward 2027-09-05 00:00 -04 -> 01:00 -03 (04:00Z): midnight is skipped.
    santiago = ZoneInfo("America/Santiago")
    daily = parse_rule("cron", "@midnight", santiago, START)
    fires = upcoming(daily, datetime(2027, 9, 4, 12, 0, tzinfo=UTC), 2)
    assert fires == [
        datetime(2027, 9, 5, 4, 0, tzinfo=UTC),  # 01:00 -03, the first instant after the gap
        datetime(2027, 9, 6, 3, 0, tzinfo=UTC),
    ]


def test_a_starred_day_field_makes_both_day_fields_required() -> None:
    # '*/2' starts with '*': odd-numbered days that are Saturdays (Vixie, Debian, cronie).
    assert local_fires("0 16 */2 * sat", 3) == [
        "Sat 01-09 16:00",
        "Sat 01-23 16:00",
        "Sat 02-13 16:00",
    ]


def test_two_restricted_day_fields_match_when_either_does() -> None:
    assert local_fires("0 16 1-31/2 * sat", 4) == [
        "Fri 01-01 16:00",
        "Sat 01-02 16:00",
        "Sun 01-03 16:00",
        "Tue 01-05 16:00",
    ]
    assert local_fires("0 9 15 * mon", 3) == [
        "Mon 01-04 09:00",
        "Mon 01-11 09:00",
        "Fri 01-15 09:00",
    ]


def test_a_plain_star_leaves_the_other_day_field_to_decide() -> None:
    assert local_fires("0 9 * * mon", 2) == ["Mon 01-04 09:00", "Mon 01-11 09:00"]
    assert local_fires("0 9 15 * *", 2) == ["Fri 01-15 09:00", "Mon 02-15 09:00"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0 9 L * *", ["Sun 01-31 09:00", "Sun 02-28 09:00", "Wed 03-31 09:00"]),
        ("0 9 LW * *", ["Fri 01-29 09:00", "Fri 02-26 09:00", "Wed 03-31 09:00"]),
        ("0 9 * * 5L", ["Fri 01-29 09:00", "Fri 02-26 09:00", "Fri 03-26 09:00"]),
        ("0 9 * * 1#2", ["Mon 01-11 09:00", "Mon 02-08 09:00", "Mon 03-08 09:00"]),
        ("0 9 * * 1#5", ["Mon 03-29 09:00", "Mon 05-31 09:00", "Mon 08-30 09:00"]),
        ("0 9 * * sun#1", ["Sun 01-03 09:00", "Sun 02-07 09:00", "Sun 03-07 09:00"]),
        ("0 9 * * 7", ["Sun 01-03 09:00", "Sun 01-10 09:00", "Sun 01-17 09:00"]),
        ("0 9 * * 0", ["Sun 01-03 09:00", "Sun 01-10 09:00", "Sun 01-17 09:00"]),
        ("0 9 1 jan,jul *", ["Fri 01-01 09:00", "Thu 07-01 09:00", "Sat 01-01 09:00"]),
    ],
)
def test_it_reads_last_days_nth_weekdays_sunday_as_7_and_names(
    text: str, expected: list[str]
) -> None:
    assert local_fires(text, len(expected)) == expected


def test_a_fixed_hour_with_a_starred_minute_is_a_named_time() -> None:
    # Debian cron would treat '*/30 2' as a wildcard job: skip it in the gap, run it twice in a
    # repeated hour. duequeue decides by the hour field, so each wall time fires exactly once.
    spring = parse_rule("cron", "*/30 2 * * *", NY, START)
    after = datetime(2027, 3, 13, 12, 0, tzinfo=UTC)
    assert [f.strftime("%m-%dT%H:%MZ") for f in upcoming(spring, after, 3)] == [
        "03-14T07:00Z",  # 02:00 and 02:30 fire once together at 03:00 EDT
        "03-15T06:00Z",
        "03-15T06:30Z",
    ]
    fall = parse_rule("cron", "*/30 1 * * *", NY, START)
    after = datetime(2027, 11, 7, 4, 0, tzinfo=UTC)
    assert [f.strftime("%m-%dT%H:%MZ") for f in upcoming(fall, after, 3)] == [
        "11-07T05:00Z",  # 01:00 EDT
        "11-07T05:30Z",  # 01:30 EDT; not again in the EST copy of the hour
        "11-08T06:00Z",
    ]
