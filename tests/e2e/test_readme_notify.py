"""README's "Chat and push notifications", run as written: the loopback example delivers to the
Quick start's receiver through Apprise's json://, and the two examples for real services are
valid (`add --dry-run` validates everything `add` does, Apprise's parse of each URL included,
and writes nothing). `duequeue` is `python -m duequeue` with this checkout first on PYTHONPATH;
the receiver takes a free port instead of 8000 (tests/procs.py's run_beside_receiver)."""

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

from tests.procs import LIMIT_S, cli_env, readme_block, run_beside_receiver

RECEIVER = "python examples/receiver.py 8000 &"


def _commands() -> list[str]:
    """Return the section's commands, continuation lines joined and comments dropped."""
    text = readme_block("Chat and push notifications").replace("\\\n", " ")
    lines = [re.sub(r"\s+", " ", line).strip() for line in text.splitlines()]
    return [line for line in lines if line and not line.startswith("#")]


def _duequeue(line: str) -> str:
    return re.sub(r"^duequeue ", f"{shlex.quote(sys.executable)} -m duequeue ", line)


def test_the_section_shows_three_examples_and_the_loopback_one_is_last() -> None:
    commands = _commands()
    adds = [c for c in commands if c.startswith("duequeue add ")]
    assert len(adds) == 3
    assert sum(c.count("--notify ") for c in adds) == 4
    assert commands[-4:] == [
        RECEIVER,
        "duequeue add --at now --notify json://127.0.0.1:8000/ --subject hello --body "
        "'from Apprise'",
        "duequeue tick",
        "kill %1",
    ]


def test_the_examples_for_real_services_are_valid(tmp_path: Path) -> None:
    db = tmp_path / "q.db"
    for line in _commands()[:2]:
        run = subprocess.run(
            ["bash", "-c", _duequeue(line) + " --dry-run"],
            env=cli_env(db),
            capture_output=True,
            text=True,
            timeout=LIMIT_S,
        )
        assert run.returncode == 0, run.stderr
        assert re.match(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d ", run.stdout), run.stdout  # fires
    assert not db.exists()


def test_the_loopback_example_delivers_to_the_receiver(tmp_path: Path) -> None:
    run, received = run_beside_receiver(_commands()[-3:-1], tmp_path, cli_env(tmp_path / "n.db"))

    assert run.returncode == 0, run.stderr
    assert "sent 1" in run.stdout
    body = json.loads(received.split("\n\n", 1)[1].splitlines()[0])
    assert (body["title"], body["message"]) == ("hello", "from Apprise")
