"""An editable install (the README's test command) leaves `duequeue` visible to mypy, so a user's
script that uses the API can be type-checked in that venv, as after `pip install .`."""

import shutil
import subprocess
import sys
from pathlib import Path

from tests.paths import ROOT

SCRIPT = """\
from duequeue import Queue

with Queue("reminders.db") as q:
    sent: int = q.tick().sent
    wrong: str = q.tick().sent
"""


def _run(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(a) for a in args], cwd=cwd, capture_output=True, text=True, timeout=300, check=False
    )


def test_mypy_on_a_users_script_finds_duequeue_after_an_editable_install(tmp_path: Path) -> None:
    # A copy, so the install leaves no *.egg-info in the checkout; a venv of its own, so the
    # shared one keeps its install (it sees the shared one's packages: setuptools and wheel to
    # build with, offline; its own site-packages comes first).
    source = tmp_path / "src"
    shutil.copytree(
        ROOT,
        source,
        symlinks=True,
        ignore=shutil.ignore_patterns(".git", ".venv", "build", "*.egg-info", "__pycache__"),
    )
    venv = tmp_path / "venv"
    made = _run(sys.executable, "-m", "venv", "--system-site-packages", venv, cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    python = venv / "bin" / "python"
    installed = _run(
        python, "-m", "pip", "install", "--no-deps", "--no-build-isolation", "-q",
        "--disable-pip-version-check", "-e", source, cwd=tmp_path,
    )  # fmt: skip
    assert installed.returncode == 0, installed.stderr
    (pth,) = (venv / "lib").glob("python3.*/site-packages/__editable__.duequeue-*.pth")
    # A path, not an import hook (`import __editable___duequeue_finder`) mypy cannot follow.
    assert pth.read_text().split() == [str(source.resolve())]

    script = tmp_path / "check" / "script.py"
    script.parent.mkdir()
    script.write_text(SCRIPT)
    checked = _run(
        sys.executable, "-m", "mypy", "--no-incremental", "--python-executable", python, script,
        cwd=script.parent,
    )  # fmt: skip
    # Before: `error: Cannot find implementation or library stub for module named "duequeue"`.
    assert "Cannot find implementation" not in checked.stdout, checked.stdout
    assert checked.stdout.splitlines()[0] == (
        f"{script.name}:5: error: Incompatible types in assignment (expression has type "
        '"int", variable has type "str")  [assignment]'
    ), checked.stdout
