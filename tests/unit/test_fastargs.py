"""Cron's plain `tick` line skips typer's option machinery; anything else still goes to typer."""

import pytest

from duequeue.cli.fastargs import TickArgs, tick_args


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["tick"], TickArgs()),
        (["tick", "--json"], TickArgs(as_json=True)),
        (["tick", "--limit", "5"], TickArgs(limit=5)),
        (["tick", "--limit=5", "--json"], TickArgs(limit=5, as_json=True)),
        (["--db", "/x.db", "tick"], TickArgs(db="/x.db")),
        (["--db=/x.db", "--config", "c.toml", "tick"], TickArgs(db="/x.db", config="c.toml")),
        (["tick", "--db", "/x.db", "--json"], TickArgs(db="/x.db", as_json=True)),
        (["tick", "--config=c.toml"], TickArgs(config="c.toml")),
    ],
)
def test_it_recognises_a_plain_tick(argv: list[str], expected: TickArgs) -> None:
    assert tick_args(argv) == expected


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["add", "--at", "now"],
        ["tick", "--help"],
        ["--help"],
        ["tick", "--limit"],
        ["tick", "--limit", "0"],
        ["tick", "--limit", "ten"],
        ["tick", "--limit", "-3"],
        ["tick", "--verbose"],
        ["tick", "extra"],
        ["--db", "tick"],
        ["--db", "--json", "tick"],
        ["--db=", "tick"],
        ["inspect", "tick"],
        ["tick", "--db"],
    ],
)
def test_it_leaves_everything_else_to_typer(argv: list[str]) -> None:
    assert tick_args(argv) is None
