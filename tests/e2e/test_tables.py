"""Tables: one line per row fitted to a terminal (gh's rule), tab-separated in a pipe, --wide for
everything, and never a crash on the output charset."""

import fcntl
import os
import pty
import struct
import subprocess
import termios
from datetime import UTC, datetime
from pathlib import Path

import pytest

from duequeue.api.results import Target
from duequeue.cli.output import reason_first
from duequeue.cli.table import render
from tests.clirunner import Cli
from tests.procs import LIMIT_S, cli_args, cli_env, run_cli
from tests.servers import free_port

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


def test_it_shortens_the_widest_text_cell_with_an_ellipsis_and_leaves_no_trailing_space() -> None:
    rows = [("1", "a subject long enough to need shortening twice", "pending")]
    text = render(("id", "subject", "state"), rows, 30, shorten=("subject",)).text
    lines = text.splitlines()
    assert len(lines) == 2  # one line per row
    assert all(len(line) <= 30 for line in lines)
    assert all(line == line.rstrip() for line in lines)
    assert lines[1].split()[0] == "1" and lines[1].endswith("pending")  # never cut
    assert "…" in lines[1] or "..." in lines[1]


def test_it_leaves_out_the_least_useful_column_when_even_shortening_cannot_fit() -> None:
    headers = ("id", "subject", "rule", "state")
    rows = [("1", "x" * 40, "FREQ=DAILY;BYHOUR=9;BYMINUTE=30", "pending")]
    table = render(headers, rows, 34, shorten=("subject", "rule"), keep=("id", "subject", "state"))
    assert table.left_out == ("rule",)
    assert table.text.splitlines()[0].split() == ["id", "subject", "state"]
    assert "--wide" in table.with_note().splitlines()[-1]


def test_it_counts_wide_characters_as_two_columns() -> None:
    text = render(("subject", "state"), [("家賃", "pending"), ("rent", "done")], 80).text
    first, second = text.splitlines()[1:]
    assert first.index("pending") == second.index("done") - 2  # 家賃 is 4 columns, 2 chars


def test_a_piped_table_is_tab_separated_one_line_per_row(db_path: Path, cli: Cli) -> None:
    r = run_cli(db_path, "inspect", "--all")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) == 3  # header and one line per reminder, whatever their length
    header = lines[0].split("\t")
    assert header == [
        "id",
        "subject",
        "targets",
        "rule",
        "state",
        "fire",
        "local",
        "late",
        "errors",
        "last error",
    ]
    assert all(len(line.split("\t")) == len(header) for line in lines)
    assert not BOX & set(r.stdout)
    assert "  " not in r.stdout  # no padding: cut -f works
    assert lines[1].split("\t")[2] == f"email:ann@example.com, webhook:{LONG_HOOK}"


@pytest.mark.parametrize("columns", [80, 120])
def test_a_forced_terminal_width_gives_one_line_per_row_within_it(cli: Cli, columns: int) -> None:
    r = cli("inspect", "--all", env={"DUEQUEUE_FORCE_TTY": str(columns)})
    assert r.code == 0
    lines = r.out.splitlines()
    assert max(len(line) for line in lines) <= columns
    assert not BOX & set(r.out)
    assert [line.split()[0] for line in lines[1:3]] == ["1", "2"]  # one line per row
    assert "…" in lines[1]  # the long subject and hook were shortened, not wrapped
    assert "pending" in lines[1] and "2027-01-05T09:00:00Z" in lines[1]  # never cut


def test_wide_shows_every_column_uncut(cli: Cli) -> None:
    r = cli("inspect", "--all", "--wide", env={"DUEQUEUE_FORCE_TTY": "80"})
    lines = r.out.splitlines()
    assert len(lines) == 3
    assert LONG_HOOK in lines[1] and "cron: 0 9 * * 1-5 (Europe/Berlin)" in lines[2]
    assert "…" not in r.out


def test_history_fits_the_terminal_too(cli: Cli) -> None:
    out = cli("history", "1", env={"DUEQUEUE_FORCE_TTY": "60"}).out
    assert out.startswith("reminder 1 ")
    assert max(len(line) for line in out.splitlines()[1:]) <= 60


def _on_a_pty(db_path: Path, *args: str, columns: int = 80) -> list[str]:
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    env = {
        k: v
        for k, v in cli_env(db_path).items()
        if k not in ("COLUMNS", "LINES", "DUEQUEUE_FORCE_TTY")
    }
    proc = subprocess.Popen(
        cli_args(*args),
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
    return out.decode().replace("\r\n", "\n").splitlines()


def test_on_an_80_column_terminal_each_reminder_is_one_line(db_path: Path, cli: Cli) -> None:
    lines = _on_a_pty(db_path, "inspect", "--all")
    assert lines[0].split()[:3] == ["id", "subject", "targets"]
    assert [line.split()[0] for line in lines[1:3]] == ["1", "2"]
    assert max(len(line) for line in lines) <= 80
    assert lines[3].startswith("(") and "--wide" in lines[3]  # says what it left out
    assert "Pay the rent" in lines[1] and "…" in lines[1]


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


def test_an_ascii_terminal_shortens_with_three_dots(db_path: Path, cli: Cli) -> None:
    env = {"PYTHONIOENCODING": "ascii", "DUEQUEUE_FORCE_TTY": "80"}
    r = run_cli(db_path, "inspect", "--all", env=env)
    assert r.returncode == 0, r.stderr
    assert "..." in r.stdout.splitlines()[1]


def test_inspect_limit_says_when_rows_were_left_out(cli: Cli) -> None:
    r = cli("inspect", "--all", "--limit", "1", "--json")
    assert (r.code, [row["id"] for row in r.json()]) == (0, [1])
    assert r.err == "duequeue: showing the first 1; more reminders match (raise --limit)\n"
    exact = cli("inspect", "--all", "--limit", "2")
    assert (exact.code, exact.err) == (0, "")


def _dead_standup(db_path: Path) -> tuple[Cli, str]:
    """Return a queue whose one reminder died on a webhook nothing listens on, and that URL."""
    cli = Cli(db_path, T0)
    hook = f"http://127.0.0.1:{free_port()}/standup"
    cli.add("--at", "now", "--webhook", hook, "--subject", "standup")
    for minutes in (0, 1, 5):
        cli.advance(minutes=minutes)
        assert cli.tick()["deliveries_failed"] == 1
    return cli, hook


def test_the_dead_view_on_an_80_column_terminal_shows_the_reason_first(db_path: Path) -> None:
    _dead_standup(db_path)
    lines = _on_a_pty(db_path, "inspect")
    header, row, note = lines
    assert header.split() == ["id", "subject", "targets", "fire", "last", "error"]
    assert max(len(line) for line in lines) <= 80
    # Before: `webhook http://12…`, the target again and the reason cut off.
    last_error = row[header.index("last error") :]
    assert last_error.startswith("connection refused (w"), row
    assert note.startswith("(5 columns left out: rule, state, local, late, errors;")


def test_a_piped_dead_view_carries_the_reason_first_whole(db_path: Path) -> None:
    _, hook = _dead_standup(db_path)
    r = run_cli(db_path, "inspect")
    header, row = (line.split("\t") for line in r.stdout.splitlines())
    assert row[header.index("last error")] == f"connection refused (webhook {hook})"
    # The JSON keeps the text as stored: scripts reading it see no change.
    js = run_cli(db_path, "inspect", "--json")
    assert '"last_error": "webhook ' + hook + ': connection refused"' in js.stdout


def test_history_puts_the_reason_first_in_its_dead_letters(db_path: Path) -> None:
    cli, _ = _dead_standup(db_path)
    out = cli("history", "1", env={"DUEQUEUE_FORCE_TTY": "80"}).out
    dead = out.split("dead letters\n", 1)[1].splitlines()
    assert dead[1][dead[0].index("last error") :].startswith("connection refused (webhook")


@pytest.mark.parametrize(
    ("stored", "shown"),
    [
        ("webhook https://h.example/a: HTTP 503", "HTTP 503 (webhook https://h.example/a)"),
        (
            "partial: email ann@example.com: 550 no such user; webhook https://h.example/a: "
            "HTTP 500: oops; retry later",
            "partial: 550 no such user (email ann@example.com); "
            "HTTP 500: oops; retry later (webhook https://h.example/a)",
        ),
        # A text of another form (a broken rule, a cut tail) is shown as stored.
        ("RRULE has no further fire", "RRULE has no further fire"),
        ("email bob@example.com: timed out", "email bob@example.com: timed out"),
    ],
)
def test_reason_first_turns_each_failed_target_around(stored: str, shown: str) -> None:
    targets = (
        Target(1, "email", "ann@example.com", "ann@example.com"),
        Target(2, "webhook", "https://h.example/a", "https://h.example/a"),
    )
    assert reason_first(stored, targets) == shown


def test_a_cut_last_column_keeps_its_room_until_the_others_are_narrow() -> None:
    rows = [("1", "s" * 40, "a reason worth reading in full here")]
    table = render(
        ("id", "subject", "last error"),
        rows,
        60,
        shorten=("subject", "last error"),
        cut_last=("last error",),
    )
    line = table.text.splitlines()[1]
    assert line.endswith("a reason worth reading in full here")
    assert len(line) <= 60
