"""A database that is locked, corrupt, truncated, empty or foreign: one clear line, exit 1, and
the file left as it was."""

import contextlib
import hashlib
import os
import stat
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import apsw
import pytest

from duequeue.errors import StoreError
from duequeue.shared.timefmt import to_ms
from duequeue.store.records import (
    DeliveryRecord,
    NewReminder,
    NewTarget,
    Resolution,
    RowClaim,
    RowState,
)
from duequeue.store.sqlite import connect as open_sqlite
from tests.clirunner import Cli
from tests.procs import run_cli

T0 = datetime(2027, 1, 5, 8, 0, tzinfo=UTC)
NOW = to_ms(T0)
HOOK = "http://127.0.0.1:9/never-called"
FAST_LOCK = {"DUEQUEUE_BUSY_TIMEOUT": "0.2"}


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def reminder_count(db: Path) -> int:
    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    conn.setbusytimeout(5000)  # a reader can meet a writer's brief WAL recovery
    try:
        return int(conn.execute("SELECT count(*) FROM reminders").fetchall()[0][0])
    finally:
        conn.close()


@contextlib.contextmanager
def write_lock(db: Path, *, exclusive_mode: bool = False) -> Iterator[None]:
    """Hold the database's write lock from another connection; with `exclusive_mode`, hold it
    so that nobody can even read (what `PRAGMA locking_mode = EXCLUSIVE` does to a WAL file)."""
    conn = apsw.Connection(str(db))
    if exclusive_mode:
        conn.execute("PRAGMA locking_mode = EXCLUSIVE")
    conn.execute("BEGIN EXCLUSIVE")
    if exclusive_mode:
        conn.execute("UPDATE reminders SET updated_at = updated_at")
    try:
        yield
    finally:
        conn.execute("ROLLBACK")
        conn.close()


def fill(db: Path, n: int, body: str) -> None:
    """Add `n` due one-shot reminders through the library (the CLI is not under test here)."""
    store = open_sqlite(db)
    for i in range(n):
        target = NewTarget("webhook", f"{HOOK}/{i}")
        store.add(NewReminder("s", body, None, "UTC", NOW, NOW, (target,)), NOW)
    store.close()


def assert_one_line_error(code: int, err: str, fragment: str) -> None:
    assert code == 1
    assert err.count("\n") == 1, err
    assert err.startswith("duequeue: error: ")
    assert fragment in err


@pytest.fixture
def cli(db_path: Path) -> Cli:
    return Cli(db_path, T0, FAST_LOCK)


def test_a_held_write_lock_fails_add_and_tick_with_one_line_and_loses_nothing(
    cli: Cli, db_path: Path
) -> None:
    rid = cli.add("--at", "now", "--webhook", HOOK)
    with write_lock(db_path):
        add = cli("add", "--at", "now", "--webhook", HOOK)
        tick = cli("tick")
        reads = cli("inspect", "--all", "--json")  # WAL: readers are not blocked by a writer
    assert_one_line_error(add.code, add.err, f"database {db_path} is locked")
    assert "more than 0.2s (DUEQUEUE_BUSY_TIMEOUT)" in add.err
    assert_one_line_error(tick.code, tick.err, "is locked")
    assert reads.code == 0
    assert [r["id"] for r in reads.json()] == [rid]
    assert reminder_count(db_path) == 1
    assert cli.tick()["claimed"] == 1  # the lock gone, the due row is there to take


def test_a_database_nobody_else_may_even_read_fails_on_open_with_one_line(
    cli: Cli, db_path: Path
) -> None:
    cli.add("--at", "now", "--webhook", HOOK)
    with write_lock(db_path, exclusive_mode=True):
        results = [
            cli(*args)
            for args in (["inspect"], ["tick"], ["add", "--at", "now", "--webhook", HOOK])
        ]
    for r in results:
        assert_one_line_error(r.code, r.err, "is locked")
    assert reminder_count(db_path) == 1


def test_every_store_write_reports_a_held_lock_as_a_store_error(db_path: Path) -> None:
    # A due row, so the claim has something to lease (with nothing due it never writes).
    fill(db_path, 1, "b")
    store = open_sqlite(db_path, busy_timeout_s=0.05)
    record = DeliveryRecord(1, 1, NOW, "sent", None, 1, NOW)
    done = Resolution(RowClaim(1), 1, NOW, "sent", RowState(None, None, 0, None, "done"))
    calls = {
        "claim": lambda: store.claim(NOW, 10, 3, 60_000, "me"),
        "record": lambda: store.commit("me", NOW, [record], [], []),
        "resolve": lambda: store.commit("me", NOW, [], [done], []),
        "release": lambda: store.commit("me", NOW, [], [], [RowClaim(1)]),
        # The operator's writes go through the same guard.
        "add_many": lambda: store.add_many([], NOW),
        "cancel": lambda: store.cancel([1], NOW),
        "retry_dead": lambda: store.retry_dead(None, NOW),
        "prune": lambda: store.prune(NOW),
    }
    with write_lock(db_path):
        for name, call in calls.items():
            with pytest.raises(StoreError, match=r"is locked: .* more than 0\.05s"):
                call()
                pytest.fail(f"{name} did not notice the lock")
    store.close()


def test_a_truncated_duequeue_database_is_refused_and_left_untouched(
    cli: Cli, db_path: Path
) -> None:
    fill(db_path, 300, "x" * 500)
    size = db_path.stat().st_size
    with open(db_path, "r+b") as f:  # a disk-full or a bad copy cut the file short
        f.truncate(size // 3)
    before = digest(db_path)
    for args in (["tick"], ["inspect", "--all"]):
        r = cli(*args)
        assert_one_line_error(r.code, r.err, "corrupt")
    assert digest(db_path) == before


def test_a_database_with_a_scribbled_page_is_refused_and_left_untouched(
    cli: Cli, db_path: Path
) -> None:
    fill(db_path, 100, "y" * 500)
    conn = apsw.Connection(str(db_path))
    ((root,),) = conn.execute("SELECT rootpage FROM sqlite_schema WHERE name = 'reminders'")
    conn.close()
    with open(db_path, "r+b") as f:
        f.seek(4096 * (root - 1))  # the root page of the table every tick reads
        f.write(b"\xde\xad\xbe\xef" * 1024)
    before = digest(db_path)
    r = cli("tick")
    assert_one_line_error(r.code, r.err, "corrupt")
    assert digest(db_path) == before


def test_a_zero_byte_file_is_refused_not_filled_with_a_schema(db_path: Path) -> None:
    db_path.touch()
    r = Cli(db_path, T0)("add", "--at", "now", "--webhook", HOOK)
    assert_one_line_error(r.code, r.err, "is an empty file, not a duequeue database")
    assert db_path.stat().st_size == 0


def test_a_foreign_database_is_not_even_switched_to_wal(db_path: Path) -> None:
    conn = apsw.Connection(str(db_path))
    conn.execute("CREATE TABLE notes (text TEXT); INSERT INTO notes VALUES ('keep me')")
    conn.close()
    before = digest(db_path)
    r = Cli(db_path, T0)("tick")
    assert_one_line_error(r.code, r.err, "not duequeue's")
    assert digest(db_path) == before


def test_the_database_and_its_wal_and_shm_files_are_owner_only_under_a_lax_umask(
    db_path: Path,
) -> None:
    old = os.umask(0)
    try:
        store = open_sqlite(db_path)
        store.claim(NOW, 1, 3, 1000, "me")  # a write, so the -wal and -shm files exist
        modes = {
            p.name: stat.S_IMODE(p.stat().st_mode)
            for p in db_path.parent.iterdir()
            if p.name.startswith(db_path.name)
        }
        store.close()
    finally:
        os.umask(old)
    assert modes == {
        db_path.name: 0o600,
        f"{db_path.name}-wal": 0o600,
        f"{db_path.name}-shm": 0o600,
    }


def test_a_new_database_directory_is_owner_only(tmp_path: Path) -> None:
    db = tmp_path / "fresh" / "dq.db"
    open_sqlite(db).close()
    assert stat.S_IMODE(db.parent.stat().st_mode) == 0o700


def test_a_locked_database_reaches_a_real_process_as_one_line_without_a_traceback(
    db_path: Path,
) -> None:
    open_sqlite(db_path).close()
    with write_lock(db_path):
        r = run_cli(db_path, "add", "--at", "now", "--webhook", HOOK, env=FAST_LOCK)
    assert_one_line_error(r.returncode, r.stderr, "is locked")
    assert "Traceback" not in r.stderr
    assert reminder_count(db_path) == 0
