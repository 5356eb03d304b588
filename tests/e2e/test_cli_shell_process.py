"""The CLI's frame seen from a real process: help on a bare call, usage errors on one line."""

from pathlib import Path

from tests.procs import run_cli


def test_bare_duequeue_prints_help_on_stdout_and_exits_0(db_path: Path) -> None:
    r = run_cli(db_path)
    assert (r.returncode, r.stderr) == (0, "")
    assert r.stdout.startswith("Usage: duequeue [OPTIONS] COMMAND")
    assert "Commands:" in r.stdout
    assert not db_path.exists()


def test_a_usage_error_from_the_real_process_is_one_line(db_path: Path) -> None:
    r = run_cli(db_path, "add", "--emial", "x@example.com")
    assert r.returncode == 2
    assert r.stderr.splitlines() == [
        "duequeue: error: --emial: no such option (did you mean --email?); see duequeue add --help"
    ]
    assert not db_path.exists()
