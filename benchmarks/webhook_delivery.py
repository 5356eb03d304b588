"""Benchmarks 1 and 6: one `duequeue tick` delivering N webhooks vs a bare aiohttp client.

Both are whole processes (start included) posting N bodies to the same loopback sink, itself a
separate process. Each round runs the bare client and then the tick; the figure is the median
of the rounds' ratios, so a burst of load from elsewhere on the machine hits one pair, not the
verdict. The ticks of the largest N also give the memory figure: their highest peak RSS.
"""

import sys
import tempfile
from pathlib import Path

from benchmarks.common import (
    SECRET,
    Result,
    Run,
    delivery_result,
    duequeue_env,
    measure,
    python_env,
    seed,
)
from benchmarks.sinks import http_stats, sink_process

CONCURRENCY = 64  # duequeue's default DUEQUEUE_CONCURRENCY, and the baseline's too
MEMORY_LIMIT_MB = 150.0


def _pair(port: int, tmp: Path, n: int, first_id: int) -> tuple[Run, Run]:
    """Run the bare client, then a tick, each posting `n`; check the sink got them all."""
    url = f"http://127.0.0.1:{port}/hook"
    before = http_stats(port)
    bare = measure(
        [sys.executable, "-m", "benchmarks.bare_http", url, str(n), str(CONCURRENCY)],
        python_env(),
    )
    if bare.code != 0:
        raise RuntimeError(f"bare client failed: {bare.err}")
    db = tmp / f"webhooks-{first_id}.db"
    seed(db, n, webhook=url, first_id=first_id)
    middle = http_stats(port)
    env = duequeue_env(
        db,
        tick_limit=str(n),
        concurrency=str(CONCURRENCY),
        webhook_secret=SECRET,
        tick_budget="600",
    )
    tick = measure([sys.executable, "-m", "duequeue", "tick", "--json"], env)
    after = http_stats(port)
    db.unlink()
    if tick.code != 0:
        raise RuntimeError(f"duequeue tick failed: {tick.err}")
    got, ids = after[0] - middle[0], after[1] - middle[1]
    if middle[0] - before[0] != n or got != n or ids != n:
        raise RuntimeError(f"sink saw {got} requests, {ids} distinct ids; expected {n}")
    return bare, tick


def run(sizes: dict[int, float], rounds: int) -> list[Result]:
    """Measure each N in `sizes` (N -> target ratio); return its results and the memory one."""
    results = []
    peak: tuple[int, float, float] = (0, 0.0, 0.0)
    first_id = 1
    with sink_process("http_sink") as port, tempfile.TemporaryDirectory() as tmp:
        for n, target in sizes.items():
            pairs = []
            for _ in range(rounds):
                pairs.append(_pair(port, Path(tmp), n, first_id))
                first_id += n
            results.append(
                delivery_result(f"1. webhooks, N={n:,}", "bare aiohttp", n, target, pairs)
            )
            if n >= peak[0]:
                peak = (
                    n,
                    max(tick.peak_rss_mb for _, tick in pairs),
                    max(bare.peak_rss_mb for bare, _ in pairs),
                )
    n, tick_mb, bare_mb = peak
    results.append(
        Result(
            name=f"6. peak RSS, tick of N={n:,}",
            baseline=f"bare aiohttp client {bare_mb:.0f} MB",
            measured=f"{tick_mb:.0f} MB",
            ratio=tick_mb / bare_mb,
            target=f"< {MEMORY_LIMIT_MB:.0f} MB",
            ok=tick_mb < MEMORY_LIMIT_MB,
        )
    )
    return results
