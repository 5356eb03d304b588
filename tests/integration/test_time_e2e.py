"""Time end to end: simulated cron over days, DST, outages, misfire grace, next and --dry-run."""

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

from duequeue.engine.tick import TickOptions, tick
from duequeue.schedule import release
from duequeue.shared.timefmt import iso, to_ms
from duequeue.store.sqlite import connect as open_sqlite
from tests.clirunner import Cli
from tests.servers import HttpSink

NY_START = datetime(2027, 11, 6, 4, 0, tzinfo=UTC)  # 2027-11-06 00:00 EDT; fall back on the 7th
OUTAGE = (datetime(2027, 11, 8, 8, 0, tzinfo=UTC), datetime(2027, 11, 8, 14, 0, tzinfo=UTC))


def fired(http: HttpSink, path: str) -> list[str]:
    return [json.loads(r.body)["data"]["fire_at"] for r in http.requests_for(path)]


def simulate_cron(db: Path, start: datetime, end: datetime, down: tuple[datetime, datetime]) -> int:
    """Tick once a minute from start to end, except while cron is down; return ticks run."""
    store = open_sqlite(db)
    options = TickOptions(channel_timeout=5)
    ran = 0
    now = start
    try:
        while now < end:
            if not down[0] <= now < down[1]:
                at = to_ms(now)
                tick(store, at, options, clock=lambda at=at: at)
                ran += 1
            now += timedelta(minutes=1)
    finally:
        store.close()
    return ran


def test_three_days_of_minute_ticks_across_fall_back_and_an_outage_deliver_exactly_the_fires(
    db_path: Path, http: HttpSink
) -> None:
    cli = Cli(db_path, NY_START)
    ny = ("--tz", "America/New_York")
    cli.add("--cron", "*/15 * * * *", *ny, "--webhook", http.url("/quarter"))
    cli.add("--at", "2027-11-06T01:30", "--rrule", "FREQ=DAILY", *ny, "--webhook", http.url("/d"))
    cli.add("--cron", "30 2 * * *", *ny, "--webhook", http.url("/cron230"))
    end = NY_START + timedelta(days=3, hours=1)

    assert simulate_cron(db_path, NY_START, end, OUTAGE) == 73 * 60 - 6 * 60

    # Every 15 real minutes, both copies of the repeated hour included; the six-hour outage
    # collapses into one late delivery of its first missed fire, nothing burst afterwards.
    quarter = [NY_START + timedelta(minutes=15 * i) for i in range(73 * 4)]
    expected = [iso(to_ms(q)) for q in quarter if not OUTAGE[0] < q <= OUTAGE[1]]
    assert fired(http, "/quarter") == expected
    # 01:30 daily: on the fall-back night only its first occurrence (EDT).
    assert fired(http, "/d") == [
        "2027-11-06T05:30:00.000Z",
        "2027-11-07T05:30:00.000Z",
        "2027-11-08T06:30:00.000Z",
    ]
    # 02:30 daily: exists once on the fall-back night (after the repeated hour), EST.
    assert fired(http, "/cron230") == [
        "2027-11-06T06:30:00.000Z",
        "2027-11-07T07:30:00.000Z",
        "2027-11-08T07:30:00.000Z",
    ]
    ids = [r.headers["webhook-id"] for r in http.requests]
    assert len(ids) == len(set(ids))
    (quarterly,) = [r for r in cli.inspect("--all") if r["cron"] == "*/15 * * * *"]
    assert quarterly["skipped_fires"] == 24


def test_spring_forward_fires_a_skipped_wall_time_once_after_the_gap(
    db_path: Path, http: HttpSink
) -> None:
    start = datetime(2027, 3, 13, 5, 0, tzinfo=UTC)  # 2027-03-13 00:00 EST
    cli = Cli(db_path, start)
    cli.add(
        "--at",
        "2027-03-13T02:30",
        "--tz",
        "America/New_York",
        "--rrule",
        "FREQ=DAILY",
        "--webhook",
        http.url("/r"),
    )
    cli.add("--cron", "30 2 * * *", "--tz", "America/New_York", "--webhook", http.url("/c"))
    cli.add("--cron", "*/30 * * * *", "--tz", "America/New_York", "--webhook", http.url("/every"))
    end = start + timedelta(days=3)
    simulate_cron(db_path, start, end, (end, end))
    daily = ["2027-03-13T07:30:00.000Z", "2027-03-14T07:00:00.000Z", "2027-03-15T06:30:00.000Z"]
    assert fired(http, "/r") == daily
    assert fired(http, "/c") == daily
    every = fired(http, "/every")
    assert len(every) == 3 * 48  # real elapsed time: nothing lost in the gap
    assert every == [iso(to_ms(start + timedelta(minutes=30 * i))) for i in range(3 * 48)]


def test_a_start_inside_the_gap_fires_at_its_end_and_then_keeps_its_wall_time(
    db_path: Path, http: HttpSink
) -> None:
    cli = Cli(db_path, datetime(2027, 3, 13, 12, 0, tzinfo=UTC))
    args = ("--at", "2027-03-14T02:30", "--tz", "America/New_York", "--rrule", "FREQ=DAILY")
    preview = cli("add", *args, "--webhook", http.url("/gap"), "--dry-run")
    assert preview.out.splitlines()[:3] == [
        "2027-03-14 03:00:00 EDT (America/New_York)  2027-03-14T07:00:00.000Z",
        "2027-03-15 02:30:00 EDT (America/New_York)  2027-03-15T06:30:00.000Z",
        "2027-03-16 02:30:00 EDT (America/New_York)  2027-03-16T06:30:00.000Z",
    ]
    rid = cli.add(*args, "--webhook", http.url("/gap"))
    assert cli.row(rid)["rrule"] == "FREQ=DAILY;BYHOUR=2;BYMINUTE=30;BYSECOND=0"
    for moment in (
        "2027-03-14T06:59Z",
        "2027-03-14T07:00Z",
        "2027-03-15T06:29Z",
        "2027-03-15T06:30Z",
    ):
        cli.now = datetime.fromisoformat(moment.replace("Z", "+00:00"))
        cli.tick()
    assert fired(http, "/gap") == ["2027-03-14T07:00:00.000Z", "2027-03-15T06:30:00.000Z"]
    assert cli("next", str(rid), "--count", "1").out == (
        "2027-03-16 02:30:00 EDT (America/New_York)  2027-03-16T06:30:00.000Z\n"
    )


def test_an_every_3_hours_cron_fires_the_match_a_gap_skipped_after_the_gap(
    db_path: Path, http: HttpSink
) -> None:
    # Santiago springs forward 2027-09-05 00:00 -04 -> 01:00 -03 (04:00Z).
    cli = Cli(db_path, datetime(2027, 9, 4, 23, 30, tzinfo=UTC))
    cli.add("--cron", "0 */3 * * *", "--tz", "America/Santiago", "--webhook", http.url("/c"))
    for moment in ("01:00", "03:59", "04:00", "05:59", "06:00"):
        cli.now = datetime.fromisoformat(f"2027-09-05T{moment}+00:00")
        cli.tick()
    assert fired(http, "/c") == [
        "2027-09-05T01:00:00.000Z",  # 21:00 -04
        "2027-09-05T04:00:00.000Z",  # the skipped 00:00 -04, 01:00 -03
        "2027-09-05T06:00:00.000Z",  # 03:00 -03
    ]


def test_misfire_grace_skips_the_late_backlog_but_delivers_a_fire_still_within_it(
    db_path: Path, http: HttpSink
) -> None:
    start = datetime(2027, 1, 5, 0, 0, tzinfo=UTC)
    cli = Cli(db_path, start)
    rid = cli.add(
        "--at",
        "now",
        "--rrule",
        "FREQ=HOURLY",
        "--misfire-grace",
        "10m",
        "--webhook",
        http.url("/h"),
    )
    down = (start + timedelta(hours=2), start + timedelta(hours=5, minutes=5))
    simulate_cron(db_path, start, start + timedelta(hours=7), down)
    assert fired(http, "/h") == [
        "2027-01-05T00:00:00.000Z",
        "2027-01-05T01:00:00.000Z",
        # 02:00, 03:00 and 04:00 were more than 10 minutes late when cron came back at 05:05;
        # 05:00 was 5 minutes late, within the grace, and went out.
        "2027-01-05T05:00:00.000Z",
        "2027-01-05T06:00:00.000Z",
    ]
    cli.now = start + timedelta(hours=7)
    assert cli.row(rid)["skipped_fires"] == 3


def test_a_one_shot_past_its_misfire_grace_is_skipped_and_finished(
    db_path: Path, http: HttpSink
) -> None:
    start = datetime(2027, 1, 5, 0, 0, tzinfo=UTC)
    cli = Cli(db_path, start)
    rid = cli.add("--at", "+1m", "--misfire-grace", "5m", "--webhook", http.url("/once"))
    cli.advance(hours=1)
    assert cli.tick()["skipped"] == 1
    row = cli.row(rid)
    assert (row["state"], row["skipped_fires"]) == ("done", 1)
    assert row["last_error"].startswith("skipped: 3540s late")
    assert http.requests == []


def test_a_rule_that_ends_finishes_the_row_after_its_last_fire(
    db_path: Path, http: HttpSink
) -> None:
    start = datetime(2027, 1, 5, 9, 0, tzinfo=UTC)
    cli = Cli(db_path, start)
    rid = cli.add("--at", "now", "--rrule", "FREQ=DAILY;COUNT=2", "--webhook", http.url("/c"))
    assert cli.tick()["sent"] == 1
    assert cli.row(rid)["state"] == "pending"
    cli.advance(days=1)
    assert cli.tick()["sent"] == 1
    row = cli.row(rid)
    assert (row["state"], row["next_fire_at"]) == ("done", None)
    cli.advance(days=5)
    assert cli.tick()["claimed"] == 0


def test_next_prints_upcoming_fires_in_the_zone_and_in_utc(db_path: Path) -> None:
    cli = Cli(db_path, datetime(2027, 3, 12, 12, 0, tzinfo=UTC))
    rid = cli.add(
        "--at",
        "2027-03-13T02:30",
        "--tz",
        "America/New_York",
        "--rrule",
        "FREQ=DAILY",
        "--webhook",
        "https://h.example/x",
    )
    r = cli("next", str(rid), "--count", "3")
    assert r.code == 0
    assert r.out.splitlines() == [
        "2027-03-13 02:30:00 EST (America/New_York)  2027-03-13T07:30:00.000Z",
        "2027-03-14 03:00:00 EDT (America/New_York)  2027-03-14T07:00:00.000Z",
        "2027-03-15 02:30:00 EDT (America/New_York)  2027-03-15T06:30:00.000Z",
    ]
    data = cli("next", str(rid), "--count", "2", "--json").json()
    assert data == {
        "id": rid,
        "tz": "America/New_York",
        "state": "pending",
        "fires": [
            {"local": "2027-03-13T02:30:00-05:00", "utc": "2027-03-13T07:30:00.000Z"},
            {"local": "2027-03-14T03:00:00-04:00", "utc": "2027-03-14T07:00:00.000Z"},
        ],
        "start_wall": "2027-03-13T02:30:00",  # what the user meant, kept for new zone rules
        "fire_release": release.in_use(),
        "tz_release": release.in_use(),
    }


def test_next_of_a_finished_or_unknown_reminder(db_path: Path, http: HttpSink) -> None:
    cli = Cli(db_path, datetime(2027, 1, 5, tzinfo=UTC))
    rid = cli.add("--at", "now", "--webhook", http.url("/x"))
    assert cli("next", str(rid)).out.endswith("2027-01-05T00:00:00.000Z\n")
    cli.tick()
    assert cli("next", str(rid)).out == f"reminder {rid} is done: no further fires\n"
    missing = cli("next", "999")
    assert (missing.code, missing.err) == (2, "duequeue: error: ID: no reminder with id 999\n")


def test_add_dry_run_shows_fires_and_writes_nothing(db_path: Path) -> None:
    cli = Cli(db_path, datetime(2027, 1, 5, tzinfo=UTC))
    r = cli(
        "add",
        "--cron",
        "0 9 * * mon-fri",
        "--tz",
        "Europe/Berlin",
        "--email",
        "a@example.com",
        "--dry-run",
    )
    assert r.code == 0
    assert r.out.splitlines() == [
        f"2027-01-{d:02d} 09:00:00 CET (Europe/Berlin)  2027-01-{d:02d}T08:00:00.000Z"
        for d in (5, 6, 7, 8, 11)
    ]
    assert not db_path.exists()


def test_a_stored_rule_that_can_no_longer_be_evaluated_is_parked_not_retried_forever(
    db_path: Path, http: HttpSink
) -> None:
    import apsw

    cli = Cli(db_path, datetime(2027, 1, 5, tzinfo=UTC))
    rid = cli.add("--at", "now", "--rrule", "FREQ=DAILY", "--webhook", http.url("/x"))
    ok = cli.add("--at", "now", "--webhook", http.url("/y"))
    conn = apsw.Connection(str(db_path))  # as if the host's tz database lost the zone
    conn.execute("UPDATE reminders SET tz = 'Gone/Zone' WHERE id = ?", (rid,))
    conn.close()
    summary = cli.tick()
    assert (summary["sent"], summary["dead"]) == (1, 1)
    (dead,) = cli.inspect("--dead")
    assert dead["id"] == rid
    assert "cannot compute the next fire" in dead["last_error"]
    assert cli.row(ok)["state"] == "done"
    cli.advance(days=2)
    assert cli.tick()["claimed"] == 0
