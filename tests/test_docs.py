"""The README's command reference keeps up with the CLI, and the repo keeps its promises."""

import re
import subprocess
import sys
from pathlib import Path

import pytest
import typer

from duequeue.cli import app

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _commands() -> dict[str, list[str]]:
    group = typer.main.get_command(app)
    assert hasattr(group, "commands")
    found = {}
    for name, command in group.commands.items():
        flags = [
            opt for p in command.params for opt in getattr(p, "opts", []) if opt.startswith("--")
        ]
        found[name] = flags
    return found


def _section(name: str) -> str:
    match = re.search(rf"^### `duequeue {name}`\n(.*?)(?=^### |\Z)", README, re.S | re.M)
    assert match, f"README has no '### `duequeue {name}`' section"
    return match.group(1)


@pytest.mark.parametrize("name", sorted(_commands()))
def test_every_command_and_option_is_in_the_readme_reference(name: str) -> None:
    section = _section(name)
    missing = [flag for flag in _commands()[name] if f"`{flag}" not in section]
    assert missing == []


def test_the_global_options_are_documented() -> None:
    for flag in ("--db", "--config"):
        assert f"`{flag}" in README


def test_every_setting_is_documented() -> None:
    from dataclasses import fields

    from duequeue.config import Settings

    for f in fields(Settings):
        assert f"`DUEQUEUE_{f.name.upper()}`" in README


def test_ci_runs_the_readme_test_command() -> None:
    command = "pip install -e '.[test]' && python -m pytest"
    assert command in README
    ci = (ROOT / ".ci" / "run").read_text()
    assert "pip install --quiet --disable-pip-version-check -e '.[test]'" in ci
    assert "python3 -m pytest" in ci


def test_the_package_is_ruff_and_mypy_clean() -> None:
    for args in (
        ["ruff", "check", "duequeue", "tests", "benchmarks"],
        ["ruff", "format", "--check", "duequeue", "tests", "benchmarks"],
        ["mypy"],
    ):
        run = subprocess.run(
            [sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True
        )
        assert run.returncode == 0, f"{' '.join(args)}:\n{run.stdout}{run.stderr}"
