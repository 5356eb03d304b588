"""Benchmark 4: a `duequeue tick` with nothing due, whole process, against
`python -c "import typer, apsw"` (the imports it cannot do without).

Runs alternate between the two so that machine noise hits both alike; the figure is the ratio
of the medians.
"""

import statistics
import sys
import tempfile
from pathlib import Path

from benchmarks.common import Result, duequeue_env, python_env, seed, wall


def run(rounds: int, target: float = 1.3) -> Result:
    """Time `rounds` runs of each; return the result."""
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "empty.db"
        seed(db, 0, pending=1000, webhook="http://127.0.0.1:9/hook")  # rows, none due
        tick_env = duequeue_env(db)
        base_env = python_env()
        tick = [sys.executable, "-m", "duequeue", "tick"]
        base = [sys.executable, "-c", "import typer, apsw"]
        wall(tick, tick_env)  # warm the page cache and bytecode once
        wall(base, base_env)
        ticks, bases = [], []
        for _ in range(rounds):
            bases.append(wall(base, base_env))
            ticks.append(wall(tick, tick_env))
    b, t = statistics.median(bases), statistics.median(ticks)
    ratio = t / b
    return Result(
        name="4. empty tick (whole process)",
        baseline=f"import typer, apsw {b * 1000:.0f} ms",
        measured=f"tick {t * 1000:.0f} ms",
        ratio=ratio,
        target=f"<= {target:g}x",
        ok=ratio <= target,
        note=f"median of {rounds} interleaved runs; fastest {min(ticks) / min(bases):.2f}x",
    )
