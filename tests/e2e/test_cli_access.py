"""Read-only commands never create a database; a path the user cannot use is one clear line."""

import grp
import os
import shutil
import tempfile
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.clirunner import Cli
from tests.procs import run_cli, run_cli_unprivileged

T0 = datetime(2027, 1, 5, 8, 0, tzinfo=UTC)
READ_ONLY = [
    ["inspect"],
    ["inspect", "--all"],
    ["stats"],
    ["history", "1"],
    ["next", "1"],
    ["retry", "--all-dead"],
    ["retry", "1"],
    ["cancel", "1"],
    ["prune", "--older-than", "1d", "--dry-run"],
    ["prune", "--older-than", "1d"],
]


@pytest.fixture
def shared() -> Iterator[Path]:
    """A directory every user can enter (pytest's tmp_path is root's alone)."""
    base = Path(tempfile.mkdtemp(prefix="dq-access-"))
    base.chmod(0o755)
    # Config and data dirs the other user can look into (and find empty), as in real life.
    with pytest.MonkeyPatch.context() as env:
        env.setenv("XDG_CONFIG_HOME", str(base / "xdg-config"))
        env.setenv("XDG_DATA_HOME", str(base / "xdg-data"))
        yield base
    for path in [base, *base.rglob("*")]:
        if path.is_dir() and not path.is_symlink():
            path.chmod(0o700)
    shutil.rmtree(base)


@pytest.mark.parametrize("args", READ_ONLY, ids=" ".join)
def test_a_read_only_command_on_a_missing_database_fails_and_creates_nothing(
    tmp_path: Path, args: list[str]
) -> None:
    typo = tmp_path / "dq.dbb"
    r = Cli(typo, T0)(*args)
    assert (r.code, r.out) == (1, "")
    assert r.err == (
        f"duequeue: error: database {typo} does not exist (check --db / DUEQUEUE_DB; "
        "`duequeue init` creates it, as do `add` and `import`)\n"
    )
    assert list(tmp_path.iterdir()) == []


def test_stats_prometheus_on_a_mistyped_path_publishes_nothing(tmp_path: Path) -> None:
    prom = tmp_path / "duequeue.prom"
    r = run_cli(tmp_path / "typo.db", "stats", "--prometheus", str(prom))
    assert r.returncode == 1
    assert r.stderr.splitlines() == [
        f"duequeue: error: database {tmp_path / 'typo.db'} does not exist (check --db / "
        "DUEQUEUE_DB; `duequeue init` creates it, as do `add` and `import`)"
    ]
    assert list(tmp_path.iterdir()) == []


def test_doctor_on_a_missing_database_reports_it_and_creates_nothing(tmp_path: Path) -> None:
    r = Cli(tmp_path / "nope.db", T0)("doctor")
    assert r.code == 1
    assert f"PROBLEM  database: {tmp_path / 'nope.db'} does not exist" in r.out
    assert list(tmp_path.iterdir()) == []


def test_add_still_creates_the_database(tmp_path: Path) -> None:
    assert Cli(tmp_path / "new.db", T0).add("--at", "+1h", "--email", "a@example.com") == 1
    assert (tmp_path / "new.db").is_file()


def _one_clean_line(err: str) -> str:
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    assert "Errno" not in err
    assert ".new" not in err  # the temporary file of a first add is no concern of the user's
    return lines[0]


def _database(shared: Path) -> Path:
    db = shared / "dq.db"
    Cli(db, T0).add("--at", "+1h", "--email", "ann@example.com")
    return db


def test_a_database_file_the_user_cannot_read_names_path_owner_mode_and_fix(
    shared: Path,
) -> None:
    db = _database(shared)
    db.chmod(0o000)
    for args in (["inspect"], ["stats"], ["add", "--at", "+1h", "--email", "b@example.com"]):
        r = run_cli_unprivileged(db, *args, cwd=shared)
        assert r.returncode == 1
        line = _one_clean_line(r.stderr)
        assert line.startswith(f"duequeue: error: cannot open database {db}: database file {db}")
        assert "with mode 0000" in line
        assert "cannot read it" in line
        assert "chown" in line or "chmod u+r" in line


def test_a_read_only_database_file_says_it_cannot_be_written(shared: Path) -> None:
    db = _database(shared)
    db.chmod(0o444)
    r = run_cli_unprivileged(db, "add", "--at", "+1h", "--email", "b@example.com", cwd=shared)
    assert r.returncode == 1
    line = _one_clean_line(r.stderr)
    assert f"database file {db} is owned by" in line
    assert "mode 0444" in line
    assert "cannot write it" in line


def test_a_database_the_user_may_only_read_is_read_by_the_commands_that_read(
    shared: Path,
) -> None:
    db = _database(shared)
    db.chmod(0o644)  # root's queue, which another user may look at (the directory is root's)
    before = db.read_bytes()
    inspect = run_cli_unprivileged(db, "inspect", "--all", "--json", cwd=shared)
    assert (inspect.returncode, inspect.stderr) == (0, ""), inspect.stderr
    assert '"subject": "Reminder"' in inspect.stdout
    for args in (["stats"], ["history", "1"], ["next", "1"]):
        r = run_cli_unprivileged(db, *args, cwd=shared)
        assert (r.returncode, r.stderr) == (0, ""), (args, r.stderr)
    cancel = run_cli_unprivileged(db, "cancel", "1", cwd=shared)  # a write says why not
    assert cancel.returncode == 1
    assert "cannot write it" in _one_clean_line(cancel.stderr)
    assert db.read_bytes() == before
    assert sorted(p.name for p in shared.iterdir() if p.name.startswith("dq.db")) == ["dq.db"]


def test_a_directory_the_user_cannot_write_is_named_not_the_temporary_file(
    shared: Path,
) -> None:
    closed = shared / "closed"
    closed.mkdir(mode=0o555)
    closed.chmod(0o555)
    db = closed / "dq.db"
    r = run_cli_unprivileged(db, "add", "--at", "+1h", "--email", "b@example.com", cwd=shared)
    assert r.returncode == 1
    line = _one_clean_line(r.stderr)
    assert f"directory {closed} is owned by" in line
    assert "mode 0555" in line
    assert "cannot create dq.db in it" in line
    assert list(closed.iterdir()) == []


def test_a_directory_the_user_cannot_enter_is_one_line_and_doctor_does_not_crash(
    shared: Path,
) -> None:
    locked = shared / "locked"
    locked.mkdir()
    db = _database(locked)
    locked.chmod(0o000)
    r = run_cli_unprivileged(db, "inspect", cwd=shared)
    assert r.returncode == 1
    assert f"directory {locked} is owned by" in _one_clean_line(r.stderr)
    doctor = run_cli_unprivileged(db, "doctor", cwd=shared)
    assert doctor.returncode == 1
    assert "Traceback" not in doctor.stderr
    assert f"PROBLEM  database: cannot open database {db}: directory {locked}" in doctor.stdout
    assert "cannot enter it" in doctor.stdout


def test_a_database_path_under_a_file_is_one_line_without_errno(shared: Path) -> None:
    afile = shared / "notes.txt"
    afile.write_text("not a directory\n")
    r = run_cli_unprivileged(
        afile / "dq.db", "add", "--at", "+1h", "--email", "b@example.com", cwd=shared
    )
    assert r.returncode == 1
    assert f"{afile} is a file, not a directory" in _one_clean_line(r.stderr)


def test_a_config_file_the_user_cannot_read_is_one_line_naming_owner_mode_and_fix(
    shared: Path,
) -> None:
    config = shared / "config.toml"
    config.write_text("tick_limit = 50\n")
    config.chmod(0o640)  # root:root, as /etc/duequeue/config.toml is before its chgrp
    r = run_cli_unprivileged(
        shared / "dq.db", "tick", cwd=shared, env={"DUEQUEUE_CONFIG": str(config)}
    )
    assert r.returncode == 1
    line = _one_clean_line(r.stderr)
    assert f"config file {config} is " in line
    assert "with mode 0640, so " in line
    assert f"`chmod g+r {config}`" in line
    assert not (shared / "dq.db").exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="making a file root:<the user's group> takes root")
def test_a_config_file_of_the_users_own_group_says_chmod_not_add_to_the_group(
    shared: Path,
) -> None:
    # Issue 24: the config made 0600 ("secure my secrets"); the user is in its group already.
    config = shared / "config.toml"
    config.write_text("tick_limit = 50\n")
    os.chown(config, 0, grp.getgrnam("nogroup").gr_gid)  # run_cli_unprivileged's group
    config.chmod(0o600)
    r = run_cli_unprivileged(
        shared / "dq.db", "tick", cwd=shared, env={"DUEQUEUE_CONFIG": str(config)}
    )
    assert r.returncode == 1
    line = _one_clean_line(r.stderr)
    assert f"config file {config} is root:nogroup with mode 0600, so nobody (in group " in line
    assert f"cannot read it: `chmod g+r {config}`, or run duequeue as root" in line
    assert "add nobody to group" not in line
