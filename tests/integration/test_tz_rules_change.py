"""Zone rules change after reminders were stored (issue 23): they follow the new rules.

Two releases of the same zones are built with `zic` (tests/tzfolders.py) and duequeue is
pointed at one, then the other, the way docs/time.md tells an operator to (PYTHONTZPATH).
Reminders are added and ticked under release A, the folder is swapped for release B, and ticks
go on with a faked clock against a loopback receiver: every fire is delivered once, at the wall
time the user named, read under the rules of the tick that delivers it.
"""

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import apsw
import pytest

from duequeue.engine import recompute, settle
from duequeue.engine.tick import TickOptions, tick
from duequeue.schedule import zones
from duequeue.shared.timefmt import from_ms, to_ms
from duequeue.store import open_store
from duequeue.store.store import Store
from tests.clirunner import Cli
from tests.paths import DATA
from tests.servers import HttpSink
from tests.stores import Db
from tests.tzfolders import build

ADDED = datetime(2027, 3, 13, 12, 0, tzinfo=UTC)  # 04:00 PST in Test/Zone
SWAP = datetime(2027, 3, 14, 4, 0, tzinfo=UTC)  # 2027-03-13 20:00 local: before the gap night
END = datetime(2027, 3, 16, 20, 0, tzinfo=UTC)
SWAP_FIRE = datetime(2027, 3, 14, 16, 0, tzinfo=UTC)  # 09:00 PDT under A, 08:00 PST under B


class Folders:
    """Release A's and release B's zone folders, and which one duequeue reads."""

    def __init__(self, root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.a = build(root, "2099a")
        self.b = build(root, "2099b")
        self.monkeypatch = monkeypatch

    def use(self, folder: Path) -> None:
        self.monkeypatch.setenv("PYTHONTZPATH", str(folder))
        zones.reset()

    def local(self, fire_at: str, tz: str) -> str:
        """Return the wall time of an ISO instant in tz under the rules in use."""
        instant = datetime.fromisoformat(fire_at.replace("Z", "+00:00"))
        return instant.astimezone(zones.zone(tz)).strftime("%m-%d %H:%M")


@pytest.fixture
def tz(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Folders]:
    folders = Folders(tmp_path / "zones", monkeypatch)
    yield folders
    monkeypatch.undo()
    zones.reset()


def ticks(db: Db, start: datetime, end: datetime, step: timedelta = timedelta(minutes=10)) -> None:
    store = open_store(str(db))
    try:
        now = start
        while now < end:
            at = to_ms(now)
            tick(store, at, TickOptions(channel_timeout=5), clock=lambda at=at: at)
            now += step
    finally:
        store.close()


def fired(http: HttpSink, path: str) -> list[str]:
    return [json.loads(r.body)["data"]["fire_at"] for r in http.requests_for(path)]


ZONE = ("--tz", "Test/Zone")
HOOK = "http://127.0.0.1:9/never-called"
# (path, add arguments, tz, local wall times delivered: 13th and 14th under A until the swap)
TABLE = [
    ("/cron", ("--cron", "0 9 * * *", *ZONE), "Test/Zone"),
    ("/daily-before", ("--rrule", "FREQ=DAILY", "--at", "2027-03-10T09:00", *ZONE), "Test/Zone"),
    (
        "/byhour",
        ("--rrule", "FREQ=DAILY;BYHOUR=9;BYMINUTE=0", "--at", "2027-03-13T00:00", *ZONE),
        "Test/Zone",
    ),
    ("/daily-on", ("--rrule", "FREQ=DAILY", "--at", "2027-03-14T09:00", *ZONE), "Test/Zone"),
    ("/once", ("--at", "2027-03-14T09:00", *ZONE), "Test/Zone"),
]


def test_the_issues_table_fires_at_0900_local_once_a_day_after_the_rules_change(
    db: Db, http: HttpSink, tz: Folders
) -> None:
    tz.use(tz.a)
    cli = Cli(db, ADDED)
    for path, args, _zone in TABLE:
        cli.add(*args, "--webhook", http.url(path))
    ticks(db, ADDED, SWAP)
    tz.use(tz.b)
    ticks(db, SWAP, END)
    days = ["03-13 09:00", "03-14 09:00", "03-15 09:00", "03-16 09:00"]
    seen = {path: [tz.local(f, zone) for f in fired(http, path)] for path, _a, zone in TABLE}
    assert seen == {
        "/cron": days,
        "/daily-before": ["03-10 09:00", *days],
        "/byhour": days,
        "/daily-on": days[1:],
        "/once": ["03-14 09:00"],
    }
    # Each moved fire is in history, with both releases; stats counts them.
    history = cli("history", "4", "--json").json()
    assert [
        (m["old_fire_at"], m["new_fire_at"], m["old_release"], m["new_release"])
        for m in history["moved_fires"]
    ] == [("2027-03-14T16:00:00.000Z", "2027-03-14T17:00:00.000Z", "2099a", "2099b")]
    assert cli("stats", "--json").json()["moved_fires"] == 5


def test_a_rule_started_in_winter_keeps_0900_when_a_zone_stays_on_daylight_time(
    db: Db, http: HttpSink, tz: Folders
) -> None:
    # 2026f's Vancouver: a FREQ=DAILY stored under older data (09:00 PST = 17:00Z) showed 10:00
    # every day once daylight time stayed.
    tz.use(tz.a)
    cli = Cli(db, ADDED)
    van = ("--tz", "Test/Vancouver")
    cli.add("--rrule", "FREQ=DAILY", "--at", "2027-03-01T09:00", *van, "--webhook", http.url("/v"))
    tz.use(tz.b)
    ticks(db, ADDED, END)
    assert [tz.local(f, "Test/Vancouver") for f in fired(http, "/v")] == [
        "03-01 09:00",  # its first fire, in the past when added: at the first tick
        "03-13 09:00",
        "03-14 09:00",
        "03-15 09:00",
        "03-16 09:00",
    ]


def test_a_one_shot_given_in_utc_or_with_an_offset_stays_that_instant(
    db: Db, http: HttpSink, tz: Folders
) -> None:
    tz.use(tz.a)
    cli = Cli(db, ADDED)
    cli.add("--at", "2027-03-14T16:00Z", *ZONE, "--webhook", http.url("/utc"))
    cli.add("--at", "2027-03-14T09:00-07:00", *ZONE, "--webhook", http.url("/offset"))
    tz.use(tz.b)
    ticks(db, ADDED, END)
    assert fired(http, "/utc") == fired(http, "/offset") == ["2027-03-14T16:00:00.000Z"]
    assert cli("stats", "--json").json()["moved_fires"] == 0


def test_a_change_that_adds_a_gap_fires_the_skipped_time_once_after_it(
    db: Db, http: HttpSink, tz: Folders
) -> None:
    tz.use(tz.a)
    cli = Cli(db, ADDED)
    gap = ("--tz", "Test/Gap")
    cli.add("--rrule", "FREQ=DAILY", "--at", "2027-03-13T02:30", *gap, "--webhook", http.url("/g"))
    ticks(db, ADDED, SWAP)
    tz.use(tz.b)
    ticks(db, SWAP, END)
    assert [tz.local(f, "Test/Gap") for f in fired(http, "/g")] == [
        "03-13 02:30",
        "03-14 03:00",  # 02:30 does not exist that night under B: the first instant after
        "03-15 02:30",
        "03-16 02:30",
    ]


def test_a_change_that_removes_a_gap_fires_at_the_named_time_again(
    db: Db, http: HttpSink, tz: Folders
) -> None:
    tz.use(tz.a)
    cli = Cli(db, ADDED)
    cli.add("--rrule", "FREQ=DAILY", "--at", "2027-03-13T02:30", *ZONE, "--webhook", http.url("/r"))
    ticks(db, ADDED, SWAP)
    tz.use(tz.b)
    ticks(db, SWAP, END)
    assert [tz.local(f, "Test/Zone") for f in fired(http, "/r")] == [
        "03-13 02:30",
        "03-14 02:30",  # A had a gap here (03:00 PDT); B has none
        "03-15 02:30",
        "03-16 02:30",
    ]


def _hold(store: Store, now: datetime) -> tuple[settle.Fire, str]:
    owner = "held-by-a-tick-under-a"
    (fire,) = store.claim(to_ms(now), 10, 3, 600_000, owner)
    return fire, owner


def test_a_change_landing_while_a_tick_holds_the_row_neither_doubles_nor_loses_a_fire(
    db: Db, http: HttpSink, tz: Folders
) -> None:
    tz.use(tz.a)
    cli = Cli(db, ADDED)
    rid = cli.add("--cron", "0 9 * * *", *ZONE, "--webhook", http.url("/held"))
    ticks(db, ADDED, SWAP)
    held_at = datetime(2027, 3, 14, 16, 0, tzinfo=UTC)  # 09:00 PDT under A
    store = open_store(str(db))
    try:
        # A tick reading release A claims the 14th's fire and settles it (sent)...
        fire, owner = _hold(store, held_at)
        assert from_ms(fire.fire_at) == held_at
        resolution = settle.settle(fire, [settle.SENT], to_ms(held_at), to_ms(held_at), str)
        assert resolution is not None and resolution.row is not None
        # ...while the folder changes and another tick, reading B, runs: it leaves the row.
        tz.use(tz.b)
        ticks(db, held_at, held_at + timedelta(minutes=1))
        (row,) = [r for r in cli.inspect() if r["id"] == rid]
        assert row["fire_at"] == "2027-03-14T16:00:00.000Z"
        # The holder writes back its next fire computed under A; the next tick under B moves it.
        committed = store.commit(owner, to_ms(held_at), [], [resolution], [])
        assert len(committed.applied) == 1
    finally:
        store.close()
    ticks(db, held_at + timedelta(minutes=1), END)
    assert [tz.local(f, "Test/Zone") for f in fired(http, "/held")] == [
        "03-13 09:00",
        "03-15 09:00",
        "03-16 09:00",
    ]
    # The 14th went out once, by the holder (nothing sent it again at 09:00 under B).
    moves = cli("history", str(rid), "--json").json()["moved_fires"]
    assert [(m["old_fire_at"], m["new_fire_at"]) for m in moves] == [
        ("2027-03-15T16:00:00.000Z", "2027-03-15T17:00:00.000Z")
    ]


@pytest.mark.sqlite_only
def test_a_version_6_database_is_upgraded_in_place_without_moving_a_fire(
    db_path: Path, http: HttpSink, tz: Folders
) -> None:
    # A row as version 6 stored it: FREQ=DAILY from 09:00 local on the 13th, its pending fire
    # the 14th's 09:00 PDT (16:00Z) under release A; no walls, no release.
    conn = apsw.Connection(str(db_path))
    conn.execute((DATA / "schema_v6.sql").read_text(encoding="utf-8"))
    conn.execute(
        """INSERT INTO reminders (subject, body, rule_kind, rule, tz, dtstart, fire_at,
               next_fire_at, created_at, updated_at)
           VALUES ('kept', '', 'rrule', 'FREQ=DAILY', 'Test/Zone', :start, :fire, :fire, 0, 0)""",
        {"start": to_ms(datetime(2027, 3, 13, 17, tzinfo=UTC)), "fire": to_ms(SWAP_FIRE)},
    )
    conn.execute(
        "INSERT INTO targets (reminder_id, channel, address) VALUES (1, 'webhook', :url)",
        {"url": http.url("/old")},
    )
    conn.close()
    tz.use(tz.a)
    cli = Cli(db_path, ADDED)
    ticks(db_path, ADDED, ADDED + timedelta(minutes=1))  # upgrades, then backfills
    conn = apsw.Connection(str(db_path))
    row = conn.execute(
        "SELECT fire_at, start_wall, after_wall, fire_release FROM reminders WHERE id = 1"
    ).fetchall()
    assert row == [(to_ms(SWAP_FIRE), "2027-03-13T09:00:00", "2027-03-14T08:59:59.999000", "2099a")]
    assert conn.execute("SELECT value FROM queue_meta WHERE name = 'tz_release'").fetchall() == [
        ("2099a",)
    ]
    conn.close()
    assert cli("stats", "--json").json()["moved_fires"] == 0
    # Newer rules then move it as they would a row stored by this version.
    tz.use(tz.b)
    ticks(db_path, SWAP, END)
    assert [tz.local(f, "Test/Zone") for f in fired(http, "/old")] == [
        "03-14 09:00",
        "03-15 09:00",
        "03-16 09:00",
    ]


def test_rows_of_a_zone_the_update_did_not_change_are_not_computed_again(
    db: Db, http: HttpSink, tz: Folders, monkeypatch: pytest.MonkeyPatch
) -> None:
    tz.use(tz.a)
    cli = Cli(db, ADDED)
    same = [
        cli.add("--cron", f"{i} 9 * * *", "--tz", "Test/Same", "--webhook", http.url("/s"))
        for i in range(5)
    ]
    moved = cli.add("--at", "2027-03-14T09:00", *ZONE, "--webhook", http.url("/m"))
    ticks(db, ADDED, ADDED + timedelta(minutes=1))  # records the zones' digests under A
    tz.use(tz.b)
    computed: list[int] = []
    real = recompute.refire
    monkeypatch.setattr(
        recompute, "refire", lambda row: computed.append(row.reminder_id) or real(row)
    )
    done = cli("recompute", "--json").json()
    assert (done["checked"], done["moved"], computed) == (6, 1, [moved])
    assert {r["fire_release"] for r in cli.inspect() if r["id"] in same} == {"2099b"}


def test_recompute_dry_run_lists_the_moves_and_writes_nothing_then_recompute_moves_them(
    db: Db, http: HttpSink, tz: Folders
) -> None:
    tz.use(tz.a)
    cli = Cli(db, ADDED)
    daily = cli.add("--rrule", "FREQ=DAILY", "--at", "2027-03-14T09:00", *ZONE, "--webhook", HOOK)
    cli.add("--at", "2027-03-14T16:00Z", *ZONE, "--webhook", HOOK)  # an instant: never moves
    tz.use(tz.b)
    dry = cli("recompute", "--dry-run", "--json").json()
    assert dry == {
        "release": "2099b",
        "dry_run": True,
        "checked": 2,
        "moved": 1,
        "moves": [
            {
                "id": daily,
                "old_fire_at": "2027-03-14T16:00:00.000Z",
                "new_fire_at": "2027-03-14T17:00:00.000Z",
                "old_release": "2099a",
            }
        ],
    }
    assert cli("history", str(daily), "--json").json()["moved_fires"] == []
    text = cli("recompute").out
    assert (
        text.splitlines()[-1] == "moved 1 of 2 pending fires computed by tz data older than 2099b"
    )
    (row,) = [r for r in cli.inspect() if r["id"] == daily]
    assert (row["fire_at"], row["local_fire_at"], row["fire_release"]) == (
        "2027-03-14T17:00:00.000Z",
        "2027-03-14T09:00:00-08:00",
        "2099b",
    )
    assert cli("recompute", "--dry-run", "--json").json()["checked"] == 0


def test_a_rescheduled_reminder_follows_its_new_time_through_a_rules_change(
    db: Db, http: HttpSink, tz: Folders
) -> None:
    # The wall time kept for a rules change is the new --at's, not the one first added: else the
    # recompute would put the fire back where it was before the reschedule.
    tz.use(tz.a)
    cli = Cli(db, ADDED)
    rid = cli.add("--at", "2027-03-14T09:00", *ZONE, "--webhook", http.url("/moved"))
    r = cli("reschedule", str(rid), "--at", "2027-03-15T09:00", *ZONE)
    assert r.code == 0, r.err
    ticks(db, ADDED, SWAP)
    tz.use(tz.b)
    ticks(db, SWAP, END)
    assert [tz.local(f, "Test/Zone") for f in fired(http, "/moved")] == ["03-15 09:00"]


# 2026-11-01 in Test/Zone: 01:00-02:00 is repeated (08:00-09:00Z at UTC-7, then 09:00-10:00Z at
# UTC-8). Release B changes the zone only from 2027 on, so its rules for that night are A's, but
# its digest differs: a tick under B computes the pending fire again.
FALL = datetime(2026, 11, 1, 6, 55, tzinfo=UTC)  # 23:55 PDT, Oct 31


def _half_past(hour: int, minute: int = 30) -> str:
    return f"2026-11-01T{hour:02d}:{minute:02d}:00.000Z"


def test_a_fire_passed_over_in_the_repeated_hour_is_not_delivered_by_a_later_update(
    db: Db, http: HttpSink, tz: Folders
) -> None:
    # Ticks stop after 00:40 PDT and come back at 01:50 PST (the second copy): the backlog is
    # coalesced (the first copy of 01:30 goes out late, the second is passed over) and the row
    # moves on to 02:30 PST. New zone data arrives at 02:15 PST, after the hour.
    tz.use(tz.a)
    cli = Cli(db, FALL)
    rid = cli.add("--cron", "30 * * * *", *ZONE, "--webhook", http.url("/h"))
    ticks(db, FALL, datetime(2026, 11, 1, 7, 45, tzinfo=UTC))
    ticks(db, datetime(2026, 11, 1, 9, 50, tzinfo=UTC), datetime(2026, 11, 1, 9, 51, tzinfo=UTC))
    tz.use(tz.b)
    ticks(db, datetime(2026, 11, 1, 10, 15, tzinfo=UTC), datetime(2026, 11, 1, 11, 0, tzinfo=UTC))
    # Not the second copy of 01:30 (09:30Z) 45 minutes late: it was passed over.
    assert fired(http, "/h") == [_half_past(7), _half_past(8), _half_past(10)]
    assert cli("history", str(rid), "--json").json()["moved_fires"] == []
    assert cli("stats", "--json").json()["moved_fires"] == 0


def test_a_fire_sent_in_the_repeated_hour_is_not_moved_back_to_by_a_later_update(
    db: Db, http: HttpSink, tz: Folders
) -> None:
    # Ticks every 10 minutes deliver both copies of 01:30; the update lands at 02:15 PST. The
    # row's pending 02:30 PST stays: no moved fire, no late tick of the 01:30 already sent.
    tz.use(tz.a)
    cli = Cli(db, FALL)
    rid = cli.add("--cron", "30 * * * *", *ZONE, "--webhook", http.url("/h"))
    ticks(db, FALL, datetime(2026, 11, 1, 10, 5, tzinfo=UTC))
    tz.use(tz.b)
    store = open_store(str(db))
    try:
        at = to_ms(datetime(2026, 11, 1, 10, 15, tzinfo=UTC))
        summary = tick(store, at, TickOptions(channel_timeout=5), clock=lambda: at)
    finally:
        store.close()
    assert summary.claimed == 0
    ticks(db, datetime(2026, 11, 1, 10, 25, tzinfo=UTC), datetime(2026, 11, 1, 11, 0, tzinfo=UTC))
    assert fired(http, "/h") == [_half_past(h) for h in (7, 8, 9, 10)]
    assert cli("history", str(rid), "--json").json()["moved_fires"] == []
    assert cli("stats", "--json").json()["moved_fires"] == 0
