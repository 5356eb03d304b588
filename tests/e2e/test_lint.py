"""The checkout is ruff and mypy clean: the real tools, run as processes on the whole repo."""

import subprocess
import sys

from tests.paths import ROOT


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
