"""`duequeue import` records on its rows what `add` records (issue 30 item 4): the wall time the
user meant and the tz release that computed each fire, so the first ticks after an import have
nothing to compute again (and nothing to hold for it)."""

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from duequeue.schedule import release
from tests.clirunner import Cli
from tests.stores import Db

T0 = datetime(2027, 1, 5, 8, 0, tzinfo=UTC)
HOOK = "https://hooks.example.com/r"
LINE = {"at": "2027-01-06T09:00", "tz": "Europe/Berlin", "rrule": "FREQ=DAILY", "webhooks": HOOK}


@pytest.fixture
def cli(db: Db) -> Cli:
    return Cli(db, T0)


def test_import_records_the_release_and_the_wall_time_add_records(cli: Cli, tmp_path: Path) -> None:
    mine = release.in_use()
    assert mine  # tzdata's release, read from the package the tests run with
    cli.add("--at", LINE["at"], "--tz", LINE["tz"], "--rrule", LINE["rrule"], "--webhook", HOOK)
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps(LINE) + "\n")
    r = cli("import", str(path))
    assert r.code == 0, r.err
    added, imported = cli.inspect("--all")
    keys = ("fire_release", "start_wall", "fire_at", "local_fire_at")
    assert {k: imported[k] for k in keys} == {k: added[k] for k in keys}
    # Before: the spool dropped both, and the first ticks computed every imported row again.
    assert (imported["fire_release"], imported["start_wall"]) == (mine, "2027-01-06T09:00:00")
    # Nothing for the tick's tz check to find: it claims at once.
    summary = cli.tick()
    assert summary["claimed"] == 0  # due tomorrow
    assert cli.inspect("--all")[1]["fire_release"] == mine
