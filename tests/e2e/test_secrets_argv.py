"""A notify URL's token can be kept out of the process list: `add --notify-file -` reads the
URLs from stdin, so /proc/<pid>/cmdline (what `ps` shows) never holds them (issue 24, item 8)."""

import subprocess
from pathlib import Path

from tests.procs import LIMIT_S, cli_args, cli_env, run_cli

TOKEN = "Xyzzy-N0tify-T0ken"
URL = f"json://user:{TOKEN}@127.0.0.1:8000/"


def _cmdline_once_running(proc: subprocess.Popen[str]) -> str:
    """Return the child's command line once it is the duequeue process (after exec)."""
    path = Path(f"/proc/{proc.pid}/cmdline")
    for _ in range(1_000_000):  # bounded; exec happens within a few reads
        text = path.read_bytes().replace(b"\0", b" ").decode()
        if "duequeue" in text:
            return text
    raise AssertionError("the child never became duequeue")


def test_the_token_of_a_notify_file_is_not_in_the_process_list(db_path: Path) -> None:
    assert run_cli(db_path, "init").returncode == 0
    proc = subprocess.Popen(
        cli_args("add", "--at", "+1h", "--notify-file", "-"),
        env=cli_env(db_path),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    # add is waiting for stdin: what `ps` shows now is all it will ever show.
    cmdline = _cmdline_once_running(proc)
    assert "--notify-file -" in cmdline
    assert TOKEN not in cmdline
    out, err = proc.communicate(f"# the team's hook\n{URL}\n", timeout=LIMIT_S)
    assert (proc.returncode, out, err) == (0, "1\n", "")
    shown = run_cli(db_path, "inspect", "--all")
    assert "notify:json://user:****@127.0.0.1:8000" in shown.stdout
    assert TOKEN not in shown.stdout


def test_the_token_given_as_notify_is_in_the_process_list_which_is_why_the_file_exists(
    db_path: Path,
) -> None:
    proc = subprocess.Popen(
        cli_args("add", "--at", "+1h", "--notify", URL, "--notify-file", "-"),
        env=cli_env(db_path),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert TOKEN in _cmdline_once_running(proc)
    proc.communicate("json://127.0.0.1:8001/\n", timeout=LIMIT_S)
    assert proc.returncode == 0


def test_a_notify_file_that_cannot_be_read_is_one_line_and_writes_nothing(
    db_path: Path, tmp_path: Path
) -> None:
    r = run_cli(db_path, "add", "--at", "+1h", "--notify-file", str(tmp_path / "none"))
    assert r.returncode == 2
    assert r.stderr.startswith("duequeue: error: --notify-file: cannot read ")
    assert r.stderr.count("\n") == 1
    assert not db_path.exists()


def test_edit_takes_a_notify_file_too(db_path: Path) -> None:
    assert run_cli(db_path, "add", "--at", "+1h", "--email", "ann@example.com").returncode == 0
    proc = subprocess.Popen(
        cli_args("edit", "1", "--notify-file", "-"),
        env=cli_env(db_path),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert TOKEN not in _cmdline_once_running(proc)
    out, err = proc.communicate(f"{URL}\n", timeout=LIMIT_S)
    assert (proc.returncode, err) == (0, ""), err
    assert out.startswith("edited 1: next fire ")
    shown = run_cli(db_path, "inspect", "--all", "--wide")
    assert "notify:json://user:****@127.0.0.1:8000" in shown.stdout
    assert "ann@example.com" not in shown.stdout  # the target flags give the whole new set
    assert TOKEN not in shown.stdout
