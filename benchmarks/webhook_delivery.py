"""Benchmarks 1 and 6: one `duequeue tick` delivering N webhooks vs a bare aiohttp client.

Both are whole processes (start included) posting N bodies to the same loopback sink, itself a
separate process. Each round runs the bare client and then the tick; the figure is the median
of the rounds' ratios, so a burst of load from elsewhere on the machine hits one pair, not the
verdict. The ticks of the largest N also give the memory figure: their highest peak RSS.

With `receivers` above 1 the sink listens on that many ports and the rows take them in turn:
many distinct receivers, each under the tick's per-host bound (DUEQUEUE_WEBHOOK_PER_HOST),
while the bare client has no such bound. Run alone for an A/B of that bound:

    python -m benchmarks.webhook_delivery --n 20000 --rounds 3 --receivers 16 --per-host 64
"""

import argparse
import sys
import tempfile
from pathlib import Path

from benchmarks.common import (
    SECRET,
    Result,
    Run,
    compile_all,
    delivery_result,
    duequeue_env,
    measure,
    python_env,
    seed,
)
from benchmarks.sinks import http_stats, sink_process

CONCURRENCY = 64  # duequeue's default DUEQUEUE_CONCURRENCY, and the baseline's too
MEMORY_LIMIT_MB = 150.0


def _pair(
    ports: list[int], tmp: Path, n: int, first_id: int, per_host: int | None, limit: int | None
) -> tuple[Run, Run]:
    """Run the bare client, then a tick, each posting `n`; check the sink got them all."""
    urls = [f"http://127.0.0.1:{port}/hook" for port in ports]
    port = ports[0]  # any of them answers /stats for all
    before = http_stats(port)
    bare = measure(
        [sys.executable, "-m", "benchmarks.bare_http", ",".join(urls), str(n), str(CONCURRENCY)],
        python_env(),
    )
    if bare.code != 0:
        raise RuntimeError(f"bare client failed: {bare.err}")
    db = tmp / f"webhooks-{first_id}.db"
    seed(db, n, webhook=urls, first_id=first_id)
    middle = http_stats(port)
    settings = {"webhook_per_host": str(per_host)} if per_host else {}
    if limit:
        settings["tick_limit"] = str(limit)
    env = duequeue_env(
        db,
        concurrency=str(CONCURRENCY),
        webhook_secret=SECRET,
        tick_budget="600",
        **settings,
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


def run(
    sizes: dict[int, float],
    rounds: int,
    *,
    receivers: int = 1,
    per_host: int | None = None,
    limit: int | None = None,
    memory: bool = True,
) -> list[Result]:
    """Measure each N in `sizes` (N -> target ratio); return its results and the memory one.

    `per_host`, `limit`: the tick's DUEQUEUE_WEBHOOK_PER_HOST and DUEQUEUE_TICK_LIMIT (default:
    duequeue's defaults: the tick drains the N rows in claims of 100).
    """
    results = []
    peak: tuple[int, float, float] = (0, 0.0, 0.0)
    first_id = 1
    to = f" to {receivers} receivers" if receivers > 1 else ""
    if per_host:
        to += f", per host {per_host}"
    if limit:
        to += f", limit {limit}"
    with (
        sink_process("http_sink", str(receivers)) as ports,
        tempfile.TemporaryDirectory() as tmp,
    ):
        for n, target in sizes.items():
            pairs = []
            for _ in range(rounds):
                pairs.append(_pair(ports, Path(tmp), n, first_id, per_host, limit))
                first_id += n
            results.append(
                delivery_result(f"1. webhooks{to}, N={n:,}", "bare aiohttp", n, target, pairs)
            )
            if n >= peak[0]:
                peak = (
                    n,
                    max(tick.peak_rss_mb for _, tick in pairs),
                    max(bare.peak_rss_mb for bare, _ in pairs),
                )
    if not memory:
        return results
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


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.webhook_delivery",
        description="The webhook benchmark alone, for an A/B of a setting; prints only.",
    )
    parser.add_argument("--n", type=int, nargs="+", default=[20_000])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--receivers", type=int, default=1, help="sink ports, taken in turn")
    parser.add_argument("--per-host", type=int, help="the tick's DUEQUEUE_WEBHOOK_PER_HOST")
    parser.add_argument("--limit", type=int, help="the tick's DUEQUEUE_TICK_LIMIT")
    args = parser.parse_args()
    compile_all()
    sizes = dict.fromkeys(args.n, 0.7)
    for result in run(
        sizes,
        args.rounds,
        receivers=args.receivers,
        per_host=args.per_host,
        limit=args.limit,
        memory=False,
    ):
        print(result.line(), flush=True)


if __name__ == "__main__":
    main()
