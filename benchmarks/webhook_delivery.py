"""Benchmarks 1 and 6: one `duequeue tick` delivering N webhooks vs a bare aiohttp client.

Both are whole processes (start included) posting N bodies to the same loopback sink, itself a
separate process. The tick of the largest N also gives the memory figure: its peak RSS.
"""

import sys
import tempfile
from pathlib import Path

from benchmarks.common import SECRET, Result, duequeue_env, measure, python_env, seed
from benchmarks.sinks import http_stats, sink_process

CONCURRENCY = 64  # duequeue's default DUEQUEUE_CONCURRENCY, and the baseline's too
MEMORY_LIMIT_MB = 150.0


def run(sizes: dict[int, float]) -> list[Result]:
    """Measure each N in `sizes` (N -> target ratio); return its results and the memory one."""
    results = []
    with sink_process("http_sink") as port, tempfile.TemporaryDirectory() as tmp:
        url = f"http://127.0.0.1:{port}/hook"
        largest_rss: tuple[int, float, float] | None = None
        first_id = 1
        for n, target in sizes.items():
            before = http_stats(port)
            bare = measure(
                [sys.executable, "-m", "benchmarks.bare_http", url, str(n), str(CONCURRENCY)],
                python_env(),
            )
            if bare.code != 0:
                raise RuntimeError(f"bare client failed: {bare.err}")
            db = Path(tmp) / f"webhooks-{n}.db"
            seed(db, n, webhook=url, first_id=first_id)
            first_id += n
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
            if tick.code != 0:
                raise RuntimeError(f"duequeue tick failed: {tick.err}")
            got, ids = after[0] - middle[0], after[1] - middle[1]
            if middle[0] - before[0] != n or got != n or ids != n:
                raise RuntimeError(f"sink saw {got} requests, {ids} distinct ids; expected {n}")
            ratio = bare.seconds / tick.seconds
            results.append(
                Result(
                    name=f"1. webhooks, N={n:,}",
                    baseline=f"bare aiohttp {bare.seconds:.2f}s ({n / bare.seconds:,.0f}/s)",
                    measured=f"tick {tick.seconds:.2f}s ({n / tick.seconds:,.0f}/s)",
                    ratio=ratio,
                    target=f">= {target}",
                    ok=ratio >= target,
                    note=f"CPU s: bare {bare.cpu_seconds:.1f}, tick {tick.cpu_seconds:.1f}",
                )
            )
            if largest_rss is None or n > largest_rss[0]:
                largest_rss = (n, tick.peak_rss_mb, bare.peak_rss_mb)
    assert largest_rss is not None
    n, tick_mb, bare_mb = largest_rss
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
