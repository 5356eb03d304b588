"""README.md and docs/ keep up with the CLI, their links hold, and the repo keeps its promises."""

import re
from pathlib import Path

import pytest
import typer

from duequeue.cli.app import app
from tests.paths import ROOT

README = (ROOT / "README.md").read_text(encoding="utf-8")
DOCS = sorted((ROOT / "docs").glob("*.md"))
# The command reference, the settings table and the exit codes live here.
REFERENCE = (ROOT / "docs" / "reference.md").read_text(encoding="utf-8")


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
    match = re.search(rf"^### `duequeue {name}`\n(.*?)(?=^##+ |\Z)", REFERENCE, re.S | re.M)
    assert match, f"docs/reference.md has no '### `duequeue {name}`' section"
    return match.group(1)


@pytest.mark.parametrize("name", sorted(_commands()))
def test_every_command_and_option_is_in_the_reference(name: str) -> None:
    section = _section(name)
    missing = [flag for flag in _commands()[name] if f"`{flag}" not in section]
    assert missing == []


def test_the_global_options_are_documented() -> None:
    for flag in ("--db", "--config", "--version"):
        assert f"`{flag}" in REFERENCE


def test_every_setting_is_documented() -> None:
    from dataclasses import fields

    from duequeue.config.settings import Settings

    settings = REFERENCE.split("## Settings\n", 1)[1].split("\n## ", 1)[0]
    for f in fields(Settings):
        if f.name != "extra":  # the channels' own settings, documented by their channels
            assert f"| `DUEQUEUE_{f.name.upper()}` |" in settings


def test_the_exit_codes_are_documented() -> None:
    codes = REFERENCE.split("### Exit codes\n", 1)[1]
    for code in ("`0`", "`1`", "`2`"):
        assert code in codes


# --------------------------------------------------------------------------------------------
# Links between README.md and docs/


def _slug(heading: str) -> str:
    """Return GitHub's anchor for a heading: lower case, punctuation dropped, spaces to dashes."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _prose(text: str) -> str:
    """Return `text` without fenced code blocks, whose lines are neither headings nor links."""
    return re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)


def _anchors(page: Path) -> set[str]:
    anchors: set[str] = set()
    for heading in re.findall(r"^#+ (.+)$", _prose(page.read_text(encoding="utf-8")), re.M):
        slug, n = _slug(heading), 1
        while slug in anchors:  # GitHub numbers a repeated heading's anchor
            slug, n = f"{_slug(heading)}-{n}", n + 1
        anchors.add(slug)
    return anchors


def _links(page: Path) -> list[str]:
    text = _prose(page.read_text(encoding="utf-8"))
    return [t for t in re.findall(r"\]\(([^)\s]+)\)", text) if not re.match(r"\w+:", t)]


@pytest.mark.parametrize("page", [ROOT / "README.md", *DOCS], ids=lambda p: p.name)
def test_every_relative_link_reaches_a_file_and_its_heading(page: Path) -> None:
    broken = []
    for link in _links(page):
        path, _, anchor = link.partition("#")
        target = (page.parent / path).resolve() if path else page
        found = target.is_file() and (
            not anchor or (target.suffix == ".md" and anchor in _anchors(target))
        )
        if not found:
            broken.append(link)
    assert broken == []


def test_the_readme_links_every_docs_page() -> None:
    linked = {(ROOT / link.partition("#")[0]).resolve() for link in _links(ROOT / "README.md")}
    assert [p.name for p in DOCS if p not in linked] == []


@pytest.mark.parametrize("page", DOCS, ids=lambda p: p.name)
def test_a_page_with_several_sections_lists_them_at_its_top(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    sections = re.findall(r"^## (.+)$", _prose(text), re.M)
    if len(sections) < 2:
        return
    contents = text.split("\n## ", 1)[0]
    assert [s for s in sections if f"(#{_slug(s)})" not in contents] == []


def test_ci_runs_the_readme_test_command() -> None:
    command = "pip install -e '.[test]' && python -m pytest"
    assert command in README
    ci = (ROOT / ".ci" / "run").read_text()
    assert "pip install --quiet --disable-pip-version-check -e '.[test]'" in ci
    assert "python3 -m pytest" in ci


def test_the_readme_and_the_reference_name_every_public_queue_method() -> None:
    from duequeue import Queue

    methods = sorted(m for m in vars(Queue) if not m.startswith("_"))
    listed = README.split("## Use from Python\n", 1)[1].split("\n## ", 1)[0]
    assert [m for m in methods if f"`{m}`" not in listed] == []
    table = REFERENCE.split("### `Queue` and its methods\n", 1)[1].split("\n### ", 1)[0]
    assert [m for m in methods if not re.search(rf"`{m}\b|\b{m}\(", table)] == []
