"""The CLI's frame seen from a real process: help on a bare call, usage errors on one line."""

import shlex
import subprocess
from pathlib import Path

from tests.procs import LIMIT_S, cli_args, cli_env, run_cli


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


def test_global_options_after_the_command_are_taken(db_path: Path, tmp_path: Path) -> None:
    other = tmp_path / "e.db"
    added = run_cli(
        db_path, "add", "--db", str(other), "--at", "+1h", "--webhook", "https://e.example/"
    )
    assert (added.returncode, added.stdout) == (0, "1\n"), added.stderr
    assert other.exists() and not db_path.exists()
    shown = run_cli(db_path, "inspect", "--all", "--json", f"--db={other}")
    assert shown.returncode == 0, shown.stderr
    assert '"id": 1' in shown.stdout
    tick = run_cli(db_path, "tick", "--db", str(other), "--config", "/dev/null")  # cron's fast path
    assert (tick.returncode, tick.stderr) == (0, ""), tick.stderr
    assert not db_path.exists()


def test_an_options_value_that_looks_like_db_stays_its_value(db_path: Path) -> None:
    added = run_cli(
        db_path, "add", "--subject", "--db", "--at", "+1h", "--webhook", "https://e.example/"
    )
    assert added.returncode == 0, added.stderr
    shown = run_cli(db_path, "inspect", "--all", "--json")
    assert '"subject": "--db"' in shown.stdout


def test_db_after_the_command_without_a_value_is_one_line(db_path: Path) -> None:
    r = run_cli(db_path, "inspect", "--db")
    assert (r.returncode, r.stderr) == (
        2,
        "duequeue: error: --db: needs a value; see duequeue inspect --help\n",
    )


def test_v_prints_the_version(db_path: Path) -> None:
    r = run_cli(db_path, "-V")
    assert (r.returncode, r.stderr) == (0, "")
    assert r.stdout.startswith("duequeue ")


def test_the_shell_completes_commands_and_options(db_path: Path) -> None:
    env = {"_DUEQUEUE_COMPLETE": "complete_bash", "COMP_WORDS": "duequeue ins", "COMP_CWORD": "1"}
    assert run_cli(db_path, env=env).stdout.split() == ["inspect"]
    env |= {"COMP_WORDS": "duequeue inspect --wi", "COMP_CWORD": "2"}
    assert run_cli(db_path, env=env).stdout.split() == ["--wide"]
    # Typer finds the shell among the command's parent processes, as when a user types it in
    # bash: run it from bash (not exec'd by it: `; exit`), not from this test's process, whose
    # parents are whatever ran the suite.
    line = shlex.join(str(a) for a in cli_args("--show-completion"))
    script = subprocess.run(
        ["bash", "-c", f"{line}; exit $?"],
        env=cli_env(db_path, {"SHELL": "/bin/bash"}),
        capture_output=True,
        text=True,
        timeout=LIMIT_S,
        check=False,
    )
    assert script.returncode == 0, script.stderr
    assert "_duequeue_completion" in script.stdout
