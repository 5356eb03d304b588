"""Benchmark 2: one `duequeue tick` delivering N emails vs a bare smtplib loop.

Both are whole processes sending N messages over one SMTP connection to the same loopback
aiosmtpd sink, itself a separate process. The figure is the median ratio of several rounds.
"""

import smtplib
import sys
import tempfile
from pathlib import Path

from benchmarks.common import (
    Result,
    Run,
    delivery_result,
    duequeue_env,
    measure,
    python_env,
    seed,
)
from benchmarks.sinks import sink_process


def _delivered(port: int) -> int:
    with smtplib.SMTP("127.0.0.1", port, timeout=10) as conn:
        _code, reply = conn.noop()
    return int(reply.split()[-1])


def _pair(port: int, tmp: Path, n: int) -> tuple[Run, Run]:
    start = _delivered(port)
    bare = measure([sys.executable, "-m", "benchmarks.bare_smtp", str(port), str(n)], python_env())
    if bare.code != 0 or _delivered(port) != start + n:
        raise RuntimeError(f"bare smtplib failed: {bare.err}")
    db = tmp / "emails.db"
    seed(db, n, email="ann@example.com")
    env = duequeue_env(
        db,
        tick_limit=str(n),
        smtp_url=f"smtp://127.0.0.1:{port}",
        email_from="reminders@example.com",
        tick_budget="600",
    )
    tick = measure([sys.executable, "-m", "duequeue", "tick", "--json"], env)
    db.unlink()
    if tick.code != 0 or _delivered(port) != start + 2 * n:
        raise RuntimeError(f"duequeue tick failed: {tick.err or tick.out}")
    return bare, tick


def run(n: int, target: float, rounds: int) -> Result:
    """Measure N emails `rounds` times; return the result."""
    with sink_process("smtp_sink") as [port], tempfile.TemporaryDirectory() as tmp:
        pairs = [_pair(port, Path(tmp), n) for _ in range(rounds)]
    return delivery_result(f"2. emails, N={n:,}", "bare smtplib", n, target, pairs)
