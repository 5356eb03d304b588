"""`add --at` as people say it, end to end (issue 33, item 2): what `--dry-run` and `add` say
they understood, what is stored (the wall time meant), and a key added again from now."""

from datetime import UTC, datetime

import pytest

from tests.clirunner import Cli
from tests.stores import Db

# Tuesday 2027-01-05, 09:30 in Berlin (08:30Z).
T0 = datetime(2027, 1, 5, 8, 30, tzinfo=UTC)
HOOK = "https://hooks.example.com/r"


@pytest.fixture
def cli(db: Db) -> Cli:
    c = Cli(db, T0)
    assert c("init").code == 0
    return c


def test_dry_run_says_how_it_read_the_time_and_writes_nothing(cli: Cli) -> None:
    r = cli("add", "--at", "tomorrow 9am", "--tz", "Europe/Berlin", "--webhook", HOOK, "--dry-run")
    assert r.code == 0, r.err
    assert r.err == (
        "duequeue: note: read 'tomorrow 9am' as 2027-01-06 09:00:00 CET (Europe/Berlin), "
        "2027-01-06T08:00:00.000Z\n"
    )
    assert r.out == "2027-01-06 09:00:00 CET (Europe/Berlin)  2027-01-06T08:00:00.000Z\n"
    assert cli.inspect("--all") == []


def test_a_spoken_day_and_time_is_stored_as_the_wall_time_meant(cli: Cli) -> None:
    r = cli("add", "--at", "monday 08:30", "--tz", "Europe/Berlin", "--webhook", HOOK)
    assert (r.code, r.out) == (0, "1\n"), r.err
    assert "read 'monday 08:30' as 2027-01-11 08:30:00 CET" in r.err
    shown = cli("next", "1", "--json").json()
    assert shown["start_wall"] == "2027-01-11T08:30:00"
    assert shown["fires"][0]["utc"] == "2027-01-11T07:30:00.000Z"


def test_a_rule_starts_at_a_spoken_time(cli: Cli) -> None:
    r = cli(
        "add", "--at", "noon", "--tz", "UTC", "--rrule", "FREQ=DAILY", "--webhook", HOOK,
        "--dry-run",
    )  # fmt: skip
    assert r.code == 0, r.err
    assert r.err == "duequeue: note: read 'noon' as 2027-01-05T12:00:00.000Z\n"
    assert r.out.splitlines()[1] == "2027-01-06 12:00:00 UTC (UTC)  2027-01-06T12:00:00.000Z"


def test_a_spoken_time_a_gap_skips_says_so_too(cli: Cli) -> None:
    cli.now = datetime(2027, 3, 14, 5, 0, tzinfo=UTC)  # 00:00 EST, the night of the gap
    r = cli("add", "--at", "02:30", "--tz", "America/New_York", "--webhook", HOOK, "--dry-run")
    assert r.code == 0, r.err
    assert r.err.splitlines() == [
        "duequeue: note: read '02:30' as 2027-03-14 03:00:00 EDT (America/New_York), "
        "2027-03-14T07:00:00.000Z",
        "duequeue: note: 02:30 does not exist in America/New_York (a DST change skips it): "
        "the first fire is 2027-03-14T03:00:00-04:00, the end of the gap",
    ]


def test_a_bad_spoken_time_is_one_line_exit_2(cli: Cli) -> None:
    r = cli("add", "--at", "tomorrow", "--webhook", HOOK)
    assert (r.code, r.out) == (2, "")
    assert r.err == (
        "duequeue: error: --at: invalid time 'tomorrow': give the time of day too, "
        "e.g. 'tomorrow 9am'\n"
    )


@pytest.mark.parametrize(("first", "again"), [("+2h", "+5h"), ("in 2 hours", "in 5 hours")])
def test_a_key_added_again_from_now_says_it_kept_the_first_time(
    cli: Cli, first: str, again: str
) -> None:
    """Before: `key 'k' exists: reminder 1, with the same content; nothing added`, though the
    second add asked for another time."""
    assert cli.add("--key", "k", "--at", first, "--webhook", HOOK) == 1
    cli.advance(minutes=10)
    r = cli("add", "--key", "k", "--at", again, "--webhook", HOOK)
    assert (r.code, r.out) == (0, "1\n")
    assert r.err == (
        "duequeue: key 'k' exists: reminder 1, with the same content but its first time: it "
        f"keeps 2027-01-05T10:30:00.000Z ('{again}' would be 2027-01-05T13:40:00.000Z); "
        "nothing added (`duequeue reschedule 1 --at ...` moves it)\n"
    )
    same = cli("add", "--key", "k", "--at", "2027-01-05T10:30:00Z", "--webhook", HOOK)
    assert same.err == (
        "duequeue: key 'k' exists: reminder 1, with the same content; nothing added\n"
    )
