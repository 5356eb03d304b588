"""Benchmark 2: one `duequeue tick` delivering N emails vs a bare smtplib loop.

Both are whole processes sending N messages over one SMTP connection to the same loopback
aiosmtpd sink, itself a separate process.
"""

import smtplib
import sys
import tempfile
from pathlib import Path

from benchmarks.common import Result, duequeue_env, measure, python_env, seed
from benchmarks.sinks import sink_process


def _delivered(port: int) -> int:
    with smtplib.SMTP("127.0.0.1", port, timeout=10) as conn:
        _code, reply = conn.noop()
    return int(reply.split()[-1])


def run(n: int, target: float) -> Result:
    """Measure N emails; return the result."""
    with sink_process("smtp_sink") as port, tempfile.TemporaryDirectory() as tmp:
        bare = measure(
            [sys.executable, "-m", "benchmarks.bare_smtp", str(port), str(n)], python_env()
        )
        if bare.code != 0 or _delivered(port) != n:
            raise RuntimeError(f"bare smtplib failed: {bare.err}")
        db = Path(tmp) / "emails.db"
        seed(db, n, email="ann@example.com")
        env = duequeue_env(
            db,
            tick_limit=str(n),
            smtp_url=f"smtp://127.0.0.1:{port}",
            email_from="reminders@example.com",
            tick_budget="600",
        )
        tick = measure([sys.executable, "-m", "duequeue", "tick", "--json"], env)
        if tick.code != 0 or _delivered(port) != 2 * n:
            raise RuntimeError(f"duequeue tick failed: {tick.err or tick.out}")
    ratio = bare.seconds / tick.seconds
    return Result(
        name=f"2. emails, N={n:,}",
        baseline=f"bare smtplib {bare.seconds:.2f}s ({n / bare.seconds:,.0f}/s)",
        measured=f"tick {tick.seconds:.2f}s ({n / tick.seconds:,.0f}/s)",
        ratio=ratio,
        target=f">= {target}",
        ok=ratio >= target,
        note=f"CPU s: bare {bare.cpu_seconds:.1f}, tick {tick.cpu_seconds:.1f}",
    )
