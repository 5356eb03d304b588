"""duequeue reads the newer of the system's tz database and the `tzdata` package's.

The end-to-end tests point the system's search path (PYTHONTZPATH) at a directory made here,
whose `Europe/Berlin` is really Tokyo's file: which of the two a real `duequeue add` read shows
in the UTC time it stores for 09:00 in Berlin.
"""

import json
import shutil
from importlib.resources import files
from pathlib import Path

import pytest
import tzdata

from duequeue.schedule.zones import TzData, choose
from tests.procs import run_cli

PACKAGE = tzdata.IANA_VERSION


def fake_system_tz(root: Path, version: str | None) -> Path:
    """A zone dir claiming `version`, whose Europe/Berlin is Tokyo's (and UTC is UTC)."""
    (root / "Europe").mkdir(parents=True)
    zoneinfo = files("tzdata.zoneinfo")
    with (
        (zoneinfo / "Asia" / "Tokyo").open("rb") as src,
        (root / "Europe" / "Berlin").open("wb") as dst,
    ):
        shutil.copyfileobj(src, dst)
    with (zoneinfo / "UTC").open("rb") as src, (root / "UTC").open("wb") as dst:
        shutil.copyfileobj(src, dst)
    if version is not None:
        (root / "tzdata.zi").write_text(f"# version {version}\n# Zone ...\n")
    return root


def test_the_package_wins_when_newer(tmp_path: Path) -> None:
    sys_dir = fake_system_tz(tmp_path / "sys", "2025b")
    choice = choose((str(tmp_path / "missing"), str(sys_dir)), "2026f")
    assert (choice.tzdata, choice.system_dir) == (TzData("2026f", "the tzdata package"), None)


def test_the_system_wins_when_newer_or_equal(tmp_path: Path) -> None:
    sys_dir = fake_system_tz(tmp_path / "sys", "2026f")
    choice = choose((str(sys_dir),), "2026f")
    assert choice.system_dir == str(sys_dir)
    assert choice.tzdata.describe() == f"2026f from the system's {sys_dir}"
    assert choose((str(sys_dir),), "2026e").system_dir == str(sys_dir)


@pytest.mark.parametrize(
    ("older", "newer"), [("2025b", "2026a"), ("2026e", "2026f"), ("2026z", "2026za")]
)
def test_releases_are_ordered_as_iana_names_them(tmp_path: Path, older: str, newer: str) -> None:
    sys_dir = fake_system_tz(tmp_path / "sys", older)
    assert choose((str(sys_dir),), newer).system_dir is None
    assert choose((str(sys_dir),), older).system_dir == str(sys_dir)


def test_a_system_dir_that_does_not_say_its_version_loses_to_the_package(tmp_path: Path) -> None:
    sys_dir = fake_system_tz(tmp_path / "sys", None)
    assert choose((str(sys_dir),), "2026f").system_dir is None
    assert choose((str(sys_dir),), None).system_dir == str(sys_dir)  # but beats nothing


def test_without_either_it_says_so(tmp_path: Path) -> None:
    assert choose((str(tmp_path / "none"),), None).tzdata.version is None


def _berlin_9am(db: Path, tzpath: Path) -> str:
    env = {"PYTHONTZPATH": str(tzpath)}
    r = run_cli(
        db,
        "add",
        "--at",
        "2027-01-05T09:00",
        "--tz",
        "Europe/Berlin",
        "--webhook",
        "https://hooks.example.com/r",
        env=env,
    )
    assert r.returncode == 0, r.stderr
    shown = run_cli(db, "inspect", "--all", "--json", env=env)
    (row,) = json.loads(shown.stdout)
    return str(row["next_fire_at"])


def test_a_real_add_reads_the_package_when_the_system_data_is_older(tmp_path: Path) -> None:
    old = fake_system_tz(tmp_path / "old", "2000a")
    assert _berlin_9am(tmp_path / "dq.db", old) == "2027-01-05T08:00:00.000Z"  # Berlin's rules
    r = run_cli(tmp_path / "dq.db", "config", env={"PYTHONTZPATH": str(old)})
    assert f"# tz data: {PACKAGE} from the tzdata package" in r.stdout.splitlines()


def test_a_real_add_reads_the_system_when_its_data_is_newer(tmp_path: Path) -> None:
    new = fake_system_tz(tmp_path / "new", "2999a")
    assert _berlin_9am(tmp_path / "dq.db", new) == "2027-01-05T00:00:00.000Z"  # the fake: Tokyo
    r = run_cli(tmp_path / "dq.db", "doctor", "--json", env={"PYTHONTZPATH": str(new)})
    (zone,) = [c for c in json.loads(r.stdout)["checks"] if c["name"] == "zone data"]
    assert zone["detail"].endswith(f"tz data 2999a from the system's {new}")
