"""Run every benchmark, print each figure against its same-run baseline, write BENCHMARKS.md.

python -m benchmarks            # the sizes of issue 6 (a few minutes on 2 cores)
python -m benchmarks --quick    # smaller N, for a smoke run
python -m benchmarks --no-write # print only, leave BENCHMARKS.md alone
"""

import argparse
import time
from collections.abc import Callable

from benchmarks import (
    bulk_import,
    claim_cost,
    email_delivery,
    empty_tick,
    report,
    tz_recompute,
    webhook_delivery,
)
from benchmarks.common import Result, compile_all


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="smaller N, for a smoke run")
    parser.add_argument("--no-write", action="store_true", help="do not write BENCHMARKS.md")
    args = parser.parse_args()
    quick = args.quick
    compile_all()
    steps: list[tuple[str, Callable[[], list[Result]]]] = [
        (
            "webhooks and memory",
            lambda: webhook_delivery.run(
                {200: 0.5, 2_000: 0.7} if quick else {2_000: 0.5, 20_000: 0.7},
                rounds=1 if quick else 3,
            ),
        ),
        (
            # The same, spread over 16 sink ports: with DUEQUEUE_WEBHOOK_PER_HOST at its
            # default, 16 receivers are enough for all of DUEQUEUE_CONCURRENCY to be used.
            "webhooks to 16 receivers",
            lambda: webhook_delivery.run(
                {200: 0.5, 2_000: 0.7} if quick else {2_000: 0.5, 20_000: 0.7},
                rounds=1 if quick else 3,
                receivers=16,
                memory=False,
            ),
        ),
        ("emails", lambda: [email_delivery.run(100 if quick else 1_000, 0.8, 1 if quick else 3)]),
        ("claim cost", lambda: [claim_cost.run(10_000 if quick else 1_000_000)]),
        ("empty tick", lambda: [empty_tick.run(5 if quick else 31)]),
        ("bulk import", lambda: [bulk_import.run(1_000 if quick else 100_000)]),
        (
            "recompute after a tz data update",
            lambda: tz_recompute.run(10_000 if quick else 1_000_000, 1_000 if quick else 10_000),
        ),
    ]
    results: list[Result] = []
    started = time.perf_counter()
    for label, step in steps:
        print(f"-- {label} ...", flush=True)
        for result in step():
            print(result.line(), flush=True)
            results.append(result)
    elapsed = time.perf_counter() - started
    print(f"-- done in {elapsed:.0f}s")
    if not args.no_write and not quick:
        path = report.write(results, elapsed)
        print(f"-- wrote {path}")


if __name__ == "__main__":
    main()
