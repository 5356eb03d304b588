"""The command line's frame: help, --version, -h, and usage errors as one line with exit 2."""

import re
from datetime import UTC, datetime
from pathlib import Path

import pytest
import typer

from duequeue import __version__
from duequeue.cli.app import app
from tests.clirunner import Cli

T0 = datetime(2027, 1, 5, 8, 0, tzinfo=UTC)
COMMANDS = sorted(typer.main.get_command(app).commands)  # type: ignore[attr-defined]


@pytest.fixture
def cli(db_path: Path) -> Cli:
    return Cli(db_path, T0)


def test_it_prints_its_version(cli: Cli) -> None:
    r = cli("--version")
    assert (r.code, r.out, r.err) == (0, f"duequeue {__version__}\n", "")


@pytest.mark.parametrize("args", [["-h"], ["--help"], ["add", "-h"], ["history", "-h"]])
def test_h_and_help_print_the_same_help(cli: Cli, args: list[str]) -> None:
    r = cli(*args)
    assert r.code == 0
    assert r.out == cli(*args[:-1], "--help").out
    assert r.out.startswith("Usage: duequeue")


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (
            ["add", "--emial", "x"],
            "duequeue: error: --emial: no such option (did you mean --email?); "
            "see duequeue add --help\n",
        ),
        (["history", "abc"], "duequeue: error: ID: 'abc' is not a whole number\n"),
        (["cancel", "1", "x"], "duequeue: error: ID: 'x' is not a whole number\n"),
        (["tick", "--limit", "0"], "duequeue: error: --limit: must be at least 1, not 0\n"),
        (
            ["next", "1", "--count", "1001"],
            "duequeue: error: --count: must be at most 1000, not 1001\n",
        ),
        (
            ["inspect", "--limit"],
            "duequeue: error: --limit: needs a value\n",
        ),
        (
            ["migrate"],
            "duequeue: error: --to/--contract: give either --to URL or --contract\n",
        ),
        (["import"], "duequeue: error: FILE: required; see duequeue import --help\n"),
        (["--version=x"], None),
        (["frob"], "duequeue: error: no such command 'frob'; see duequeue --help\n"),
    ],
)
def test_a_usage_error_is_one_line_naming_the_flag_with_exit_2_and_writes_nothing(
    cli: Cli, db_path: Path, args: list[str], line: str | None
) -> None:
    r = cli(*args)
    assert r.code == 2
    assert r.out == ""
    assert r.err.count("\n") == 1
    assert r.err.startswith("duequeue: error: ")
    if line is not None:
        assert r.err == line
    assert not db_path.exists()


@pytest.mark.parametrize("command", ["", *COMMANDS])
def test_help_shows_no_python_types_or_internal_placeholders(cli: Cli, command: str) -> None:
    r = cli(*([command] if command else []), "--help")
    assert r.code == 0
    for internal in ("{", "}", "<int", "<str", "<list", " range>", "<float"):
        assert internal not in r.out, f"{command} --help shows {internal!r}:\n{r.out}"


def test_the_top_level_help_describes_each_command_whole(cli: Cli) -> None:
    commands = cli("--help").out.split("Commands:\n", 1)[1]
    assert "..." not in commands
    retry = re.search(r"^  retry +(.*?)(?=^  \w)", commands, re.S | re.M)
    assert retry is not None
    assert " ".join(retry.group(1).split()) == (
        "Re-arm dead-lettered fires: due now, error count reset; sent targets are not re-sent."
    )
