"""Write BENCHMARKS.md: the latest figures, the machine they were taken on, how to reproduce."""

import os
import platform
import subprocess
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from benchmarks.common import ROOT, Result

NOTES = ROOT / "benchmarks" / "NOTES.md"


def machine() -> str:
    """Return one line describing this machine and interpreter."""
    model = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return (
        f"{os.cpu_count()} cores (nproc), {model}, {platform.system()} {platform.release()}, "
        f"Python {platform.python_version()}"
    )


def _commit() -> str:
    done = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    )
    return done.stdout.strip() or "unknown"


def write(results: Sequence[Result], elapsed: float) -> Path:
    """Write BENCHMARKS.md at the repository root; return its path."""
    rows = "\n".join(
        f"| {r.name} | {r.baseline} | {r.measured} | "
        f"{'-' if r.ratio is None else f'{r.ratio:.2f}'} | {r.target} | {r.verdict}"
        f"{' (' + r.note + ')' if r.note else ''} |"
        for r in results
    )
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    notes = NOTES.read_text(encoding="utf-8") if NOTES.exists() else ""
    text = f"""# Benchmarks

Figures of the latest full run (`python -m benchmarks`, {elapsed:.0f}s), taken {when} at commit
`{_commit()}` on: {machine()}.

Each figure is a ratio against a baseline measured in the same run, so that it holds on a noisy
machine (this one is shared). Webhook and email ratios are baseline seconds / duequeue seconds
(higher is better, 1.0 = as fast as the bare client); claim and empty-tick ratios are duequeue /
baseline (lower is better); memory is the tick's peak RSS in MB (the ratio column gives it
against the bare client's); import is reminders per second.

| benchmark | baseline | duequeue | ratio | target | verdict |
|---|---|---|---|---|---|
{rows}

## Reproduce

    pip install '.[test,bench]'     # or the dependencies of pyproject.toml into any environment
    python -m benchmarks            # all of them; writes this file ({elapsed / 60:.0f} min here)
    python -m benchmarks --quick    # small N, a smoke run; prints only

Every process (sinks, baselines, `duequeue tick`) is a separate `{Path(sys.executable).name}`
process on 127.0.0.1; duequeue runs from the checkout (`PYTHONPATH`), with its bytecode compiled
first as an installed package would have it.

{notes}"""
    path = ROOT / "BENCHMARKS.md"
    path.write_text(text, encoding="utf-8")
    return path
