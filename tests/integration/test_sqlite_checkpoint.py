"""A draining connection's checkpoints on their own thread (store/sqlite_checkpoint.py)."""

import threading
from pathlib import Path

import apsw
import pytest

from duequeue.store import sqlite_checkpoint
from duequeue.store.sqlite import SQLiteBackend, connect

PAGE = 4096  # the file's page size


def _write_pages(backend: SQLiteBackend, commits: int, blob: int = 8 * PAGE) -> None:
    # Each commit adds a few pages to the log, as a batch of write-backs does.
    for _ in range(commits):
        backend.transact(
            lambda run: run("INSERT INTO scratch VALUES (randomblob(:n))", {"n": blob}),
            what="scratch",
            write=True,
        )


def _log_frames(backend: SQLiteBackend) -> int:
    # The frames in the log now (the -wal file keeps its largest size when the log starts
    # over), asked on the writer's connection at the end of a test: asking checkpoints.
    busy, frames, _ = backend.conn.execute("PRAGMA wal_checkpoint(PASSIVE)").get
    assert busy == 0
    return int(frames)


@pytest.fixture
def backend(tmp_path: Path) -> SQLiteBackend:
    store = connect(tmp_path / "q.db")
    b = store.backend
    assert isinstance(b, SQLiteBackend)
    b.conn.execute("CREATE TABLE scratch (b BLOB)")
    return b


def _drained(backend: SQLiteBackend) -> sqlite_checkpoint.Checkpointer:
    backend.drain()
    checkpointer = backend._checkpointer
    assert checkpointer is not None
    return checkpointer


def test_commits_wake_the_thread_that_checkpoints(backend: SQLiteBackend, tmp_path: Path) -> None:
    checkpointer = _drained(backend)
    assert int(backend.conn.execute("PRAGMA cache_size").get) == -32 * 1024
    _write_pages(backend, 1500)  # ~13,500 pages through the log
    backend.close()
    assert checkpointer.runs >= 1  # the thread checkpointed, not only the writer's fallback
    assert not any(t.name == "duequeue-checkpoint" for t in threading.enumerate())
    conn = apsw.Connection(str(tmp_path / "q.db"))
    assert conn.execute("SELECT count(*) FROM scratch").get == 1500
    conn.close()


def test_a_checkpointer_behind_leaves_the_writer_to_checkpoint_itself(
    backend: SQLiteBackend, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The thread checkpoints nothing here (as when it cannot keep up): past FALLBACK x PAGES
    # frames the writer checkpoints, and the log starts over instead of growing without end.
    monkeypatch.setattr(sqlite_checkpoint, "PAGES", 20)
    monkeypatch.setattr(sqlite_checkpoint, "FALLBACK", 4)
    monkeypatch.setattr(sqlite_checkpoint.Checkpointer, "_run", _held_up)
    checkpointer = _drained(backend)
    _write_pages(backend, 80)
    assert checkpointer.runs == 0
    # 80 commits of about 9 pages: 720 and more without the fallback.
    assert 0 < _log_frames(backend) <= 4 * 20 + 2 * 9
    backend.close()


def _held_up(self: sqlite_checkpoint.Checkpointer) -> None:
    while not self._stopping:
        self._wake.wait()
        self._wake.clear()


def test_close_gives_the_writer_back_its_own_checkpoints(
    backend: SQLiteBackend, tmp_path: Path
) -> None:
    checkpointer = _drained(backend)
    checkpointer.close()
    backend._checkpointer = None
    _write_pages(backend, 300)  # ~2,700 pages: SQLite's autocheckpoint at 1,000 restarts the log
    assert 0 < _log_frames(backend) <= 1000 + 9
    backend.close()


class _Busy:
    def wal_checkpoint(self, name: str) -> None:
        raise apsw.BusyError("database is locked")


def test_a_busy_fallback_never_fails_the_commit_that_ran_it(backend: SQLiteBackend) -> None:
    # The hook runs after the commit: an error from it would make COMMIT report a failure of
    # a transaction that is in the log, and the tick would take its batch for lost.
    checkpointer = _drained(backend)
    pages = sqlite_checkpoint.PAGES * sqlite_checkpoint.FALLBACK
    assert checkpointer._committed(_Busy(), "main", pages) == apsw.SQLITE_OK  # type: ignore[arg-type]
    backend.close()
