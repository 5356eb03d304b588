"""A running process and new tz data (issue 30 items 5, 6): which copy of a repeated wall time a
row had reached, and noticing that the release on disk changed."""

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from duequeue.schedule import release, zones
from duequeue.schedule.wallclock import resolve_reached, resolve_wall

LA = ZoneInfo("America/Los_Angeles")
WALL = datetime(2026, 11, 1, 1, 30)  # repeated: 08:30Z (PDT), then 09:30Z (PST)
FIRST = datetime(2026, 11, 1, 8, 30, tzinfo=UTC)
SECOND = datetime(2026, 11, 1, 9, 30, tzinfo=UTC)


def test_a_repeated_wall_time_read_before_a_later_fire_is_its_second_copy() -> None:
    assert resolve_wall(WALL, LA) == FIRST  # everywhere else: the first copy
    assert resolve_reached(WALL, LA, datetime(2026, 11, 1, 10, 30, tzinfo=UTC)) == SECOND
    # Read off an instant before the second copy: the first.
    assert resolve_reached(WALL, LA, SECOND) == FIRST
    # Not repeated, or in a gap: as resolve_wall.
    plain = datetime(2026, 11, 2, 1, 30)
    assert resolve_reached(plain, LA, datetime(2027, 1, 1, tzinfo=UTC)) == resolve_wall(plain, LA)
    gap = datetime(2027, 3, 14, 2, 30)
    assert resolve_reached(gap, LA, datetime(2027, 4, 1, tzinfo=UTC)) == resolve_wall(gap, LA)


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    (tmp_path / "tzdata.zi").write_text("# version 2099a\n")
    monkeypatch.setenv("PYTHONTZPATH", str(tmp_path))
    zones.reset()
    yield tmp_path
    monkeypatch.undo()
    zones.reset()


def test_a_changed_release_on_disk_is_noticed_and_nothing_else_is(folder: Path) -> None:
    assert release.changed() is None  # nothing read yet: the first use reads the disk
    assert release.in_use() == "2099a"
    assert release.changed() is None
    (folder / "tzdata.zi").write_text("# version 2099b\n")
    assert release.in_use() == "2099a"  # read once a process...
    assert release.changed() == "2099b"  # ...but a worker asks between ticks
    zones.reset()
    assert (release.in_use(), release.changed()) == ("2099b", None)
