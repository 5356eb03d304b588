"""The CPU one delivery costs Store.commit on SQLite: what a tick of one-shot webhooks writes back.

In process, through the store itself: claim `--n` seeded due rows in batches of `--batch` (the
tick's database thread commits up to 256 items at once, its commit helper 1,024), then commit
each batch's records and `SENT_DONE` resolutions, timed with time.process_time (this process
alone: no event loop, sink or helper to add noise). Prints microseconds per delivery, one line
a round. For an A/B, run it in each checkout, alternating:

    PYTHONPATH=. python -m benchmarks.commit_cpu --n 5000 --batch 1024 --rounds 3
"""

import argparse
import tempfile
import time
from pathlib import Path

from benchmarks.common import T_DUE, seed


def commit_us(n: int, batch: int) -> float:
    """Return the CPU microseconds Store.commit spent per delivery over `n` rows."""
    from duequeue.store.sqlite import connect as open_sqlite
    from duequeue.store.tick_records import SENT_DONE, DeliveryRecord, Resolution

    now = T_DUE + 60_000
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "commit.db"
        seed(db, n, webhook="http://127.0.0.1:9/hook")
        store = open_sqlite(db)
        try:
            batches = []
            while claimed := store.claim(now, batch, 3, 600_000, "bench"):
                batches.append(claimed)
            spent = 0.0
            for fires in batches:
                records = [
                    DeliveryRecord(f.reminder_id, t.id, f.fire_at, "sent", None, 1, now + 5)
                    for f in fires
                    for t in f.targets
                ]
                done = [
                    Resolution(f.claim, f.reminder_id, f.fire_at, "sent", SENT_DONE) for f in fires
                ]
                started = time.process_time()
                store.commit("bench", now, records, done, ())
                spent += time.process_time() - started
        finally:
            store.close()
    if sum(len(fires) for fires in batches) != n:
        raise RuntimeError(f"claimed {sum(len(f) for f in batches)} rows, expected {n}")
    return spent * 1e6 / n


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.commit_cpu", description=__doc__)
    parser.add_argument("--n", type=int, default=5000)
    parser.add_argument("--batch", type=int, default=1024)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    for _ in range(args.rounds):
        print(f"{commit_us(args.n, args.batch):.1f} us a delivery")


if __name__ == "__main__":
    main()
