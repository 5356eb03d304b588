"""Tables fit the terminal, stay plain text in a pipe, and never crash on the output charset."""

import fcntl
import os
import pty
import re
import struct
import subprocess
import termios
from datetime import UTC, datetime
from pathlib import Path

import pytest

from duequeue.cli.table import render
from tests.clirunner import Cli
from tests.procs import LIMIT_S, cli_args, cli_env, run_cli

T0 = datetime(2027, 1, 5, 8, 0, tzinfo=UTC)
LONG_HOOK = "https://hooks.example.com/" + "very/long/path/" * 4
BOX = set("─│┃━┏┓┗┛┌┐└┘├┤┬┴┼╭╮╰╯═║")


@pytest.fixture
def cli(db_path: Path) -> Cli:
    c = Cli(db_path, T0)
    c.add(
        "--at",
        "+1h",
        "--email",
        "ann@example.com",
        "--webhook",
        LONG_HOOK,
        "--subject",
        "Pay the rent ✓ (Miete zahlen, payer le loyer) before the first of the month",
    )
    c.add("--cron", "0 9 * * 1-5", "--tz", "Europe/Berlin", "--email", "bob@example.com")
    return c


def column(lines: list[str], n: int) -> list[str]:
    """Return column `n` of the first row, line by line, at the header's positions."""
    starts = [m.start() for m in re.finditer(r"\S+", lines[0])]
    first = next(i for i, line in enumerate(lines) if line.startswith("1 "))
    row = [first, *range(first + 1, len(lines))]
    row = [i for i in row if i == first or not lines[i][: starts[1]].strip()]
    row = row[: next((k for k, i in enumerate(row[1:], 1) if i != row[k - 1] + 1), len(row))]
    return [lines[i][starts[n] : starts[n + 1]].strip() for i in row]


def test_it_wraps_text_columns_to_fit_and_leaves_no_trailing_space() -> None:
    rows = [("1", "a subject long enough to need wrapping twice", "pending")]
    text = render(("id", "subject", "state"), rows, 30, wrap=("subject",))
    lines = text.splitlines()
    assert all(len(line) <= 30 for line in lines)
    assert all(line == line.rstrip() for line in lines)
    assert " ".join(column(lines, 1)) == "a subject long enough to need wrapping twice"


def test_it_counts_wide_characters_as_two_columns() -> None:
    text = render(("subject", "state"), [("家賃", "pending"), ("rent", "done")], None)
    first, second = text.splitlines()[1:]
    assert first.index("pending") == second.index("done") - 2  # 家賃 is 4 columns, 2 chars


def test_a_piped_table_is_plain_one_line_per_row(db_path: Path, cli: Cli) -> None:
    r = run_cli(db_path, "inspect", "--all")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) == 3  # header and one line per reminder, whatever their length
    assert lines[0].split() == [
        "id",
        "subject",
        "targets",
        "rule",
        "state",
        "fire",
        "local",
        "late",
        "errors",
        "last",
        "error",
    ]
    assert not BOX & set(r.stdout)
    assert all(line == line.rstrip() for line in lines)
    assert LONG_HOOK in lines[1]


@pytest.mark.parametrize("columns", [80, 120])
def test_columns_sets_the_width_tables_fit(cli: Cli, columns: int) -> None:
    r = cli("inspect", "--all", env={"COLUMNS": str(columns)})
    assert r.code == 0
    lines = r.out.splitlines()
    assert max(len(line) for line in lines) <= columns
    assert not BOX & set(r.out)
    targets = "".join(column(lines, 2)).replace(" ", "")
    assert targets == f"email:ann@example.com,webhook:{LONG_HOOK}"  # wrapped, never cut


def test_history_fits_the_terminal_too(cli: Cli) -> None:
    out = cli("history", "1", env={"COLUMNS": "60"}).out
    assert out.startswith("reminder 1 ")
    assert max(len(line) for line in out.splitlines()[1:]) <= 60


def test_on_a_terminal_the_table_fits_its_width_without_columns_set(
    db_path: Path, cli: Cli
) -> None:
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    env = {k: v for k, v in cli_env(db_path).items() if k not in ("COLUMNS", "LINES")}
    proc = subprocess.Popen(
        cli_args("inspect", "--all"),
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=follower,
        stderr=subprocess.PIPE,
    )
    os.close(follower)
    out = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        out += chunk
    os.close(leader)
    assert proc.wait(timeout=LIMIT_S) == 0
    lines = out.decode().replace("\r\n", "\n").splitlines()
    assert lines[0].split()[:2] == ["id", "subjec"]  # the 80 columns narrowed it
    assert max(len(line) for line in lines if line.isascii()) <= 80
    assert len(lines) > 3  # the long cells wrapped


def test_inspect_all_on_an_empty_database_says_so_in_words(db_path: Path) -> None:
    cli = Cli(db_path, T0)
    cli.add("--at", "+1h", "--email", "ann@example.com")
    assert cli("cancel", "1").code == 0
    cli.advance(days=2)
    assert cli("prune", "--older-than", "1d").code == 0
    r = cli("inspect", "--all")
    assert (r.code, r.out, r.err) == (0, "no reminders\n", "")
    assert cli("inspect", "--pending").out == "no pending reminders\n"


@pytest.mark.parametrize("encoding", ["latin-1", "ascii"])
def test_an_output_charset_without_the_subjects_characters_degrades_not_crashes(
    db_path: Path, cli: Cli, encoding: str
) -> None:
    for args in (["inspect", "--all"], ["history", "1"], ["inspect", "--all", "--json"]):
        r = run_cli(db_path, *args, env={"PYTHONIOENCODING": encoding})
        assert r.returncode == 0, r.stderr
        assert "UnicodeEncodeError" not in r.stderr
        assert "Pay the rent" in r.stdout
