"""Fire times across real DST and offset changes, for RRULE and cron, as exact UTC instants.

Each row: zone, RRULE text, cron text (either may be None when the two differ on purpose),
rule start, the instant to look after, and the expected fires. Local times in the comments.
"""

from datetime import datetime, timedelta
from typing import NamedTuple
from zoneinfo import ZoneInfo

import pytest

from duequeue.schedule.rules import RuleKind, next_fire, parse_rule, upcoming


class Case(NamedTuple):
    zone: str
    rrule: str | None
    cron: str | None
    start: str
    after: str
    expected: list[str]


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


NY, BERLIN, LORD_HOWE = "America/New_York", "Europe/Berlin", "Australia/Lord_Howe"
SANTIAGO, SYDNEY = "America/Santiago", "Australia/Sydney"
HOURLY, EVERY_15 = "FREQ=HOURLY", "FREQ=MINUTELY;INTERVAL=15"

# fmt: off
CASES = {
    # New York springs forward 2027-03-14 02:00 EST -> 03:00 EDT (07:00Z).
    "ny-spring-daily-0230": Case(
        NY, "FREQ=DAILY", "30 2 * * *", "2027-03-10T07:30Z", "2027-03-12T12:00Z",
        ["2027-03-13T07:30Z", "2027-03-14T07:00Z", "2027-03-15T06:30Z"],
    ),  # 02:30 EST, skipped 02:30 -> 03:00 EDT, 02:30 EDT
    "ny-spring-daily-0800-stays-local": Case(
        NY, "FREQ=DAILY;BYHOUR=8;BYMINUTE=0", "0 8 * * *", "2027-03-01T00:00Z",
        "2027-03-12T14:00Z", ["2027-03-13T13:00Z", "2027-03-14T12:00Z", "2027-03-15T12:00Z"],
    ),
    "ny-spring-weekly": Case(
        NY, "FREQ=WEEKLY;BYDAY=SU;BYHOUR=2;BYMINUTE=15", "15 2 * * 0", "2027-03-01T00:00Z",
        "2027-03-01T00:00Z", ["2027-03-07T07:15Z", "2027-03-14T07:00Z", "2027-03-21T06:15Z"],
    ),
    "ny-spring-hourly": Case(
        NY, HOURLY, "0 * * * *", "2027-03-13T05:00Z", "2027-03-14T05:30Z",
        ["2027-03-14T06:00Z", "2027-03-14T07:00Z", "2027-03-14T08:00Z"],
    ),  # 01:00 EST, 03:00 EDT, 04:00 EDT: one real hour apart
    "ny-spring-every-15": Case(
        NY, EVERY_15, "*/15 * * * *", "2027-03-13T05:00Z", "2027-03-14T06:30Z",
        ["2027-03-14T06:45Z", "2027-03-14T07:00Z", "2027-03-14T07:15Z"],
    ),
    "ny-spring-gap-start": Case(
        NY, "FREQ=DAILY;BYHOUR=2;BYMINUTE=0", "0 2 * * *", "2027-03-01T00:00Z",
        "2027-03-13T12:00Z", ["2027-03-14T07:00Z", "2027-03-15T06:00Z"],
    ),
    "ny-spring-gap-last-minute": Case(
        NY, "FREQ=DAILY;BYHOUR=2;BYMINUTE=59", "59 2 * * *", "2027-03-01T00:00Z",
        "2027-03-13T12:00Z", ["2027-03-14T07:00Z", "2027-03-15T06:59Z"],
    ),
    "ny-spring-just-before-gap": Case(
        NY, "FREQ=DAILY;BYHOUR=1;BYMINUTE=59", "59 1 * * *", "2027-03-01T00:00Z",
        "2027-03-13T12:00Z", ["2027-03-14T06:59Z", "2027-03-15T05:59Z"],
    ),
    "ny-spring-gap-end": Case(
        NY, "FREQ=DAILY;BYHOUR=3;BYMINUTE=0", "0 3 * * *", "2027-03-01T00:00Z",
        "2027-03-13T12:00Z", ["2027-03-14T07:00Z", "2027-03-15T07:00Z"],
    ),
    # Several wall times in one gap collapse into one fire, never a burst.
    "ny-spring-gap-collapses": Case(
        NY, "FREQ=DAILY;BYHOUR=2;BYMINUTE=0,15", "0,15 2 * * *", "2027-03-01T00:00Z",
        "2027-03-13T12:00Z", ["2027-03-14T07:00Z", "2027-03-15T06:00Z", "2027-03-15T06:15Z"],
    ),
    "ny-spring-fixed-hour-every-15": Case(
        NY, "FREQ=MINUTELY;INTERVAL=15;BYHOUR=2", "*/15 2 * * *", "2027-03-01T00:00Z",
        "2027-03-13T12:00Z", ["2027-03-14T07:00Z", "2027-03-15T06:00Z", "2027-03-15T06:15Z"],
    ),
    # New York falls back 2027-11-07 02:00 EDT -> 01:00 EST (06:00Z): 01:00-02:00 twice.
    "ny-fall-daily-0130": Case(
        NY, "FREQ=DAILY;BYHOUR=1;BYMINUTE=30", "30 1 * * *", "2027-11-01T00:00Z",
        "2027-11-05T12:00Z", ["2027-11-06T05:30Z", "2027-11-07T05:30Z", "2027-11-08T06:30Z"],
    ),  # 01:30 EDT, first 01:30 (EDT) only, 01:30 EST
    "ny-fall-daily-0230": Case(
        NY, "FREQ=DAILY;BYHOUR=2;BYMINUTE=30", "30 2 * * *", "2027-11-01T00:00Z",
        "2027-11-05T12:00Z", ["2027-11-06T06:30Z", "2027-11-07T07:30Z", "2027-11-08T07:30Z"],
    ),
    "ny-fall-weekly": Case(
        NY, "FREQ=WEEKLY;BYDAY=SU;BYHOUR=1;BYMINUTE=30", "30 1 * * 0", "2027-10-25T00:00Z",
        "2027-10-25T00:00Z", ["2027-10-31T05:30Z", "2027-11-07T05:30Z", "2027-11-14T06:30Z"],
    ),
    "ny-fall-hourly": Case(
        NY, HOURLY, "0 * * * *", "2027-11-06T04:00Z", "2027-11-07T04:30Z",
        ["2027-11-07T05:00Z", "2027-11-07T06:00Z", "2027-11-07T07:00Z", "2027-11-07T08:00Z"],
    ),  # 01:00 EDT, 01:00 EST, 02:00 EST, 03:00 EST
    "ny-fall-every-15": Case(
        NY, EVERY_15, "*/15 * * * *", "2027-11-06T04:00Z", "2027-11-07T05:30Z",
        [f"2027-11-07T{hm}Z" for hm in ("05:45", "06:00", "06:15", "06:30", "06:45", "07:00")],
    ),
    "ny-fall-fixed-hour-every-15": Case(
        NY, "FREQ=MINUTELY;INTERVAL=15;BYHOUR=1", "*/15 1 * * *", "2027-11-01T00:00Z",
        "2027-11-07T04:50Z",
        [f"2027-11-07T05:{m}Z" for m in ("00", "15", "30", "45")] + ["2027-11-08T06:00Z"],
    ),
    "ny-fall-after-in-second-copy": Case(
        NY, "FREQ=DAILY;BYHOUR=1;BYMINUTE=30", "30 1 * * *", "2027-11-01T00:00Z",
        "2027-11-07T06:10Z", ["2027-11-08T06:30Z"],
    ),  # after = 01:10 EST: today's 01:30 already fired at 01:30 EDT
    # Berlin: 2027-03-28 02:00 CET -> 03:00 CEST and 2027-10-31 03:00 CEST -> 02:00 CET (01:00Z).
    "berlin-spring-daily-0230": Case(
        BERLIN, "FREQ=DAILY;BYHOUR=2;BYMINUTE=30", "30 2 * * *", "2027-03-20T00:00Z",
        "2027-03-26T12:00Z", ["2027-03-27T01:30Z", "2027-03-28T01:00Z", "2027-03-29T00:30Z"],
    ),
    "berlin-fall-daily-0230": Case(
        BERLIN, "FREQ=DAILY;BYHOUR=2;BYMINUTE=30", "30 2 * * *", "2027-10-20T00:00Z",
        "2027-10-29T12:00Z", ["2027-10-30T00:30Z", "2027-10-31T00:30Z", "2027-11-01T01:30Z"],
    ),
    "berlin-spring-weekly": Case(
        BERLIN, "FREQ=WEEKLY;BYDAY=SU;BYHOUR=2;BYMINUTE=30", "30 2 * * SUN", "2027-03-15T00:00Z",
        "2027-03-20T00:00Z", ["2027-03-21T01:30Z", "2027-03-28T01:00Z", "2027-04-04T00:30Z"],
    ),
    "berlin-fall-hourly": Case(
        BERLIN, HOURLY, "0 * * * *", "2027-10-30T00:00Z", "2027-10-30T23:30Z",
        ["2027-10-31T00:00Z", "2027-10-31T01:00Z", "2027-10-31T02:00Z"],
    ),  # 02:00 CEST, 02:00 CET, 03:00 CET
    "berlin-spring-every-15": Case(
        BERLIN, EVERY_15, "*/15 * * * *", "2027-03-27T00:00Z", "2027-03-28T00:30Z",
        ["2027-03-28T00:45Z", "2027-03-28T01:00Z", "2027-03-28T01:15Z"],
    ),
    # Lord Howe shifts by 30 minutes: 2027-04-04 02:00 +11 -> 01:30 +10:30 (04-03 15:00Z) and
    # 2027-10-03 02:00 +10:30 -> 02:30 +11 (10-02 15:30Z).
    "lord-howe-spring-daily-0215": Case(
        LORD_HOWE, "FREQ=DAILY;BYHOUR=2;BYMINUTE=15", "15 2 * * *", "2027-09-25T00:00Z",
        "2027-10-01T00:00Z", ["2027-10-01T15:45Z", "2027-10-02T15:30Z", "2027-10-03T15:15Z"],
    ),  # 02:15 +10:30, skipped 02:15 -> 02:30 +11, 02:15 +11
    "lord-howe-fall-daily-0145": Case(
        LORD_HOWE, "FREQ=DAILY;BYHOUR=1;BYMINUTE=45", "45 1 * * *", "2027-03-25T00:00Z",
        "2027-04-02T00:00Z", ["2027-04-02T14:45Z", "2027-04-03T14:45Z", "2027-04-04T15:15Z"],
    ),
    "lord-howe-spring-weekly": Case(
        LORD_HOWE, "FREQ=WEEKLY;BYDAY=SU;BYHOUR=2;BYMINUTE=15", "15 2 * * 0", "2027-09-15T00:00Z",
        "2027-09-20T00:00Z", ["2027-09-25T15:45Z", "2027-10-02T15:30Z", "2027-10-09T15:15Z"],
    ),
    # An hourly RRULE keeps real hours, so its wall minute moves by the 30-minute shift ...
    "lord-howe-spring-hourly-rrule": Case(
        LORD_HOWE, HOURLY, None, "2027-10-02T13:30Z", "2027-10-02T13:30Z",
        ["2027-10-02T14:30Z", "2027-10-02T15:30Z", "2027-10-02T16:30Z"],
    ),  # 01:00 +10:30, 02:30 +11, 03:30 +11
    "lord-howe-fall-hourly-rrule": Case(
        LORD_HOWE, HOURLY, None, "2027-04-03T13:00Z", "2027-04-03T13:00Z",
        ["2027-04-03T14:00Z", "2027-04-03T15:00Z", "2027-04-03T16:00Z"],
    ),  # 01:00 +11, 01:30 +10:30, 02:30 +10:30
    # ... while cron's minute field is read on the wall clock: the skipped 02:00 fires at the
    # instant the old offset gives it, 02:30 +11, and 03:00 follows on the wall clock.
    "lord-howe-spring-hourly-cron": Case(
        LORD_HOWE, None, "0 * * * *", "2027-10-01T00:00Z", "2027-10-02T13:30Z",
        ["2027-10-02T14:30Z", "2027-10-02T15:30Z", "2027-10-02T16:00Z", "2027-10-02T17:00Z"],
    ),  # 01:00 +10:30, 02:00 +10:30 = 02:30 +11, 03:00 +11, 04:00 +11
    "lord-howe-fall-hourly-cron": Case(
        LORD_HOWE, None, "0 * * * *", "2027-04-01T00:00Z", "2027-04-03T13:00Z",
        ["2027-04-03T14:00Z", "2027-04-03T15:30Z", "2027-04-03T16:30Z"],
    ),  # 01:00 +11, 02:00 +10:30, 03:00 +10:30
    "lord-howe-spring-every-15": Case(
        LORD_HOWE, EVERY_15, "*/15 * * * *", "2027-10-02T13:30Z", "2027-10-02T15:00Z",
        ["2027-10-02T15:15Z", "2027-10-02T15:30Z", "2027-10-02T15:45Z"],
    ),  # 01:45 +10:30, 02:30 +11, 02:45 +11
    "lord-howe-fall-every-15": Case(
        LORD_HOWE, EVERY_15, "*/15 * * * *", "2027-04-03T13:00Z", "2027-04-03T14:30Z",
        ["2027-04-03T14:45Z", "2027-04-03T15:00Z", "2027-04-03T15:15Z", "2027-04-03T15:30Z"],
    ),  # 01:45 +11, 01:30 +10:30, 01:45 +10:30, 02:00 +10:30
    # cronsim 2.8 alone jumps from 01:45 to 06:00 here.
    "lord-howe-spring-every-3-hours-cron": Case(
        LORD_HOWE, None, "0 */3 * * *", "2027-10-01T00:00Z", "2027-10-02T15:15Z",
        ["2027-10-02T16:00Z", "2027-10-02T19:00Z"],
    ),  # 03:00 +11, 06:00 +11
    # Santiago (southern hemisphere, changes at midnight): 2027-04-04 00:00 -03 -> 04-03 23:00 -04
    # (03:00Z) and 2027-09-05 00:00 -04 -> 01:00 -03 (04:00Z).
    "santiago-spring-daily-0030": Case(
        SANTIAGO, "FREQ=DAILY;BYHOUR=0;BYMINUTE=30", "30 0 * * *", "2027-08-30T00:00Z",
        "2027-09-03T12:00Z", ["2027-09-04T04:30Z", "2027-09-05T04:00Z", "2027-09-06T03:30Z"],
    ),
    "santiago-spring-midnight": Case(
        SANTIAGO, "FREQ=DAILY;BYHOUR=0;BYMINUTE=0", "0 0 * * *", "2027-08-30T00:00Z",
        "2027-09-03T12:00Z", ["2027-09-04T04:00Z", "2027-09-05T04:00Z", "2027-09-06T03:00Z"],
    ),
    "santiago-fall-daily-2330": Case(
        SANTIAGO, "FREQ=DAILY;BYHOUR=23;BYMINUTE=30", "30 23 * * *", "2027-03-25T00:00Z",
        "2027-04-02T12:00Z", ["2027-04-03T02:30Z", "2027-04-04T02:30Z", "2027-04-05T03:30Z"],
    ),
    "santiago-spring-weekly": Case(
        SANTIAGO, "FREQ=WEEKLY;BYDAY=SU;BYHOUR=0;BYMINUTE=30", "30 0 * * 0", "2027-08-20T00:00Z",
        "2027-08-25T00:00Z", ["2027-08-29T04:30Z", "2027-09-05T04:00Z", "2027-09-12T03:30Z"],
    ),
    # Every three hours: the 00:00 the gap skips fires at 01:00 -03 (00:00 read at -04), not lost.
    "santiago-spring-every-3-hours-cron": Case(
        SANTIAGO, None, "0 */3 * * *", "2027-09-01T00:00Z", "2027-09-04T23:30Z",
        ["2027-09-05T01:00Z", "2027-09-05T04:00Z", "2027-09-05T06:00Z", "2027-09-05T09:00Z"],
    ),  # 21:00 -04, 00:00 -04 = 01:00 -03, 03:00 -03, 06:00 -03
    "santiago-fall-every-3-hours-cron": Case(
        SANTIAGO, None, "0 */3 * * *", "2027-04-01T00:00Z", "2027-04-03T23:30Z",
        ["2027-04-04T00:00Z", "2027-04-04T04:00Z", "2027-04-04T07:00Z"],
    ),  # 21:00 -03, 00:00 -04, 03:00 -04: the repeated 23:00 hour matches nothing
    # A skipped minute that the hour after the gap has too fires once: 02:30 EST is 03:30 EDT.
    "ny-spring-hourly-at-30-cron": Case(
        NY, None, "30 * * * *", "2027-03-01T00:00Z", "2027-03-14T06:00Z",
        ["2027-03-14T06:30Z", "2027-03-14T07:30Z", "2027-03-14T08:30Z"],
    ),  # 01:30 EST, 03:30 EDT, 04:30 EDT
    "santiago-fall-hourly": Case(
        SANTIAGO, HOURLY, "0 * * * *", "2027-04-03T00:00Z", "2027-04-04T01:30Z",
        ["2027-04-04T02:00Z", "2027-04-04T03:00Z", "2027-04-04T04:00Z"],
    ),  # 23:00 -03, 23:00 -04, 00:00 -04
    "santiago-spring-every-15": Case(
        SANTIAGO, EVERY_15, "*/15 * * * *", "2027-09-04T00:00Z", "2027-09-05T03:30Z",
        ["2027-09-05T03:45Z", "2027-09-05T04:00Z", "2027-09-05T04:15Z"],
    ),  # 23:45 -04, 01:00 -03, 01:15 -03
    # Sydney: 2027-04-04 03:00 +11 -> 02:00 +10 and 2027-10-03 02:00 +10 -> 03:00 +11 (16:00Z).
    "sydney-spring-daily-0230": Case(
        SYDNEY, "FREQ=DAILY;BYHOUR=2;BYMINUTE=30", "30 2 * * *", "2027-09-25T00:00Z",
        "2027-10-01T00:00Z", ["2027-10-01T16:30Z", "2027-10-02T16:00Z", "2027-10-03T15:30Z"],
    ),
    "sydney-fall-daily-0230": Case(
        SYDNEY, "FREQ=DAILY;BYHOUR=2;BYMINUTE=30", "30 2 * * *", "2027-03-25T00:00Z",
        "2027-04-02T00:00Z", ["2027-04-02T15:30Z", "2027-04-03T15:30Z", "2027-04-04T16:30Z"],
    ),
    # Offset changes without DST. Volgograd 2020-12-27 02:00 +04 -> 01:00 +03 (12-26 22:00Z).
    "volgograd-daily-0130": Case(
        "Europe/Volgograd", "FREQ=DAILY;BYHOUR=1;BYMINUTE=30", "30 1 * * *",
        "2020-12-20T00:00Z", "2020-12-25T00:00Z",
        ["2020-12-25T21:30Z", "2020-12-26T21:30Z", "2020-12-27T22:30Z"],
    ),
    "volgograd-hourly": Case(
        "Europe/Volgograd", HOURLY, "0 * * * *", "2020-12-26T00:00Z", "2020-12-26T20:30Z",
        ["2020-12-26T21:00Z", "2020-12-26T22:00Z", "2020-12-26T23:00Z"],
    ),
    "volgograd-every-15": Case(
        "Europe/Volgograd", EVERY_15, "*/15 * * * *", "2020-12-26T00:00Z", "2020-12-26T21:30Z",
        ["2020-12-26T21:45Z", "2020-12-26T22:00Z", "2020-12-26T22:15Z"],
    ),
    # Pyongyang 2018-05-04 23:30 +08:30 -> 05-05 00:00 +09 (15:00Z): a gap across midnight.
    "pyongyang-daily-2345": Case(
        "Asia/Pyongyang", "FREQ=DAILY;BYHOUR=23;BYMINUTE=45", "45 23 * * *",
        "2018-04-30T00:00Z", "2018-05-03T00:00Z",
        ["2018-05-03T15:15Z", "2018-05-04T15:00Z", "2018-05-05T14:45Z"],
    ),
    "pyongyang-hourly-cron": Case(
        "Asia/Pyongyang", None, "0 * * * *", "2018-05-01T00:00Z", "2018-05-04T14:15Z",
        ["2018-05-04T14:30Z", "2018-05-04T15:00Z", "2018-05-04T16:00Z"],
    ),  # 23:00 +08:30, 00:00 +09, 01:00 +09
    "pyongyang-hourly-rrule": Case(
        "Asia/Pyongyang", HOURLY, None, "2018-05-04T12:30Z", "2018-05-04T14:15Z",
        ["2018-05-04T14:30Z", "2018-05-04T15:30Z", "2018-05-04T16:30Z"],
    ),  # 23:00 +08:30, 00:30 +09, 01:30 +09
    # Caracas 2016-05-01 02:30 -04:30 -> 03:00 -04 (07:00Z).
    "caracas-daily-0245": Case(
        "America/Caracas", "FREQ=DAILY;BYHOUR=2;BYMINUTE=45", "45 2 * * *",
        "2016-04-25T00:00Z", "2016-04-29T12:00Z",
        ["2016-04-30T07:15Z", "2016-05-01T07:00Z", "2016-05-02T06:45Z"],
    ),
}
# fmt: on


def params() -> list[object]:
    rows: list[object] = []
    for name, case in CASES.items():
        for kind, text in (("rrule", case.rrule), ("cron", case.cron)):
            if text is not None:
                rows.append(pytest.param(kind, text, case, id=f"{name}-{kind}"))
    return rows


def fires(kind: RuleKind, text: str, case: Case) -> list[str]:
    rule = parse_rule(kind, text, ZoneInfo(case.zone), utc(case.start))
    found = upcoming(rule, utc(case.after), len(case.expected))
    return [instant.strftime("%Y-%m-%dT%H:%MZ") for instant in found]


@pytest.mark.parametrize(("kind", "text", "case"), params())
def test_it_fires_at_the_exact_instants_across_the_change(
    kind: RuleKind, text: str, case: Case
) -> None:
    assert fires(kind, text, case) == case.expected


@pytest.mark.parametrize(("kind", "text", "case"), params())
def test_it_finds_each_fire_again_from_just_before_it(
    kind: RuleKind, text: str, case: Case
) -> None:
    rule = parse_rule(kind, text, ZoneInfo(case.zone), utc(case.start))
    for expected in map(utc, case.expected):
        assert next_fire(rule, expected - timedelta(seconds=1)) == expected
