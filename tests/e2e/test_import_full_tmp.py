"""`import` whose temporary folder fills up (issue 30, item 10): one `duequeue: error:` line,
exit 1 (the command could not do its job; the input was fine), and nothing written.

The spool of checked lines lives in $TMPDIR. The process test points TMPDIR at a tmpfs of 64 KiB
mounted for it (as root; skipped where mounting is refused), the in-process test at a writer
that answers ENOSPC, so the path runs everywhere.
"""

import errno
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from duequeue import DuequeueError, Queue
from duequeue.operations import import_spool
from tests.procs import run_cli
from tests.stores import reminder_count

LINES = 30_000  # about 3 MB of lines, a few MB spooled: far past the 64 KiB folder


def _write_lines(path: Path) -> Path:
    with path.open("w") as f:
        for i in range(LINES):
            hook = f"https://hooks.example.com/{i}"
            f.write(json.dumps({"at": "2027-01-05T09:00Z", "webhooks": [hook]}) + "\n")
    return path


@pytest.fixture
def full_tmp(tmp_path: Path) -> Iterator[Path]:
    """Yield a folder of 64 KiB (a tmpfs mounted for the test), unmounted afterwards."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(folder)],
        capture_output=True,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", str(folder)], check=True)


def test_an_import_whose_temporary_folder_is_full_says_so_in_one_line_and_writes_nothing(
    db_path: Path, tmp_path: Path, full_tmp: Path
) -> None:
    assert run_cli(db_path, "init").returncode == 0
    lines = _write_lines(tmp_path / "many.jsonl")
    r = run_cli(db_path, "import", str(lines), env={"TMPDIR": str(full_tmp)})
    assert (r.returncode, r.stdout) == (1, "")
    assert r.stderr.count("\n") == 1, r.stderr  # no traceback, chained or not
    assert r.stderr.startswith(
        f"duequeue: error: cannot spool the checked lines in the temporary folder {full_tmp} "
        "(No space left on device); nothing was written"
    )
    assert reminder_count(db_path) == 0
    assert list(full_tmp.iterdir()) == []  # the spool is gone too


def test_an_import_into_a_missing_database_with_a_full_temporary_folder_creates_nothing(
    db_path: Path, tmp_path: Path, full_tmp: Path
) -> None:
    lines = _write_lines(tmp_path / "many.jsonl")
    r = run_cli(db_path, "import", str(lines), env={"TMPDIR": str(full_tmp)})
    assert r.returncode == 1 and r.stderr.startswith("duequeue: error: cannot spool")
    assert not db_path.exists()


class _FullFile:
    """A temporary file on a disk that fills after `room` bytes, as the kernel reports it: the
    write that does not fit fails with ENOSPC, and so does every flush after it (close)."""

    def __init__(self, room: int) -> None:
        self.room = room
        self.closed = False

    def write(self, data: Any) -> int:
        size = len(memoryview(data).cast("B"))
        if size > self.room:
            raise OSError(errno.ENOSPC, "No space left on device")
        self.room -= size
        return size

    def close(self) -> None:
        self.closed = True
        raise OSError(errno.ENOSPC, "No space left on device")


def test_the_api_raises_one_duequeue_error_when_the_spool_cannot_be_written(
    db_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    opened: list[_FullFile] = []

    def full(**_: Any) -> _FullFile:
        opened.append(_FullFile(room=1000))
        return opened[-1]

    monkeypatch.setattr(import_spool.tempfile, "TemporaryFile", full)
    lines = _write_lines(tmp_path / "many.jsonl").read_text().splitlines()
    with Queue(db_path) as q:
        with pytest.raises(DuequeueError) as failed:
            q.import_lines(lines)
        assert q.inspect("all") == []
    assert type(failed.value) is DuequeueError and failed.value.exit_code == 1
    assert "No space left on device" in str(failed.value)
    assert isinstance(failed.value.__cause__, OSError)
    assert failed.value.__context__ is failed.value.__cause__  # nothing failed on the way out
    assert [f.closed for f in opened] == [True]
