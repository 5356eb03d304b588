"""Benchmark 3: claiming and writing back 1,000 due rows costs the same in a table of 10^6
pending rows as in one of 10^3 (an index walk, not a scan).

In process, through SQLiteStore itself; each figure is the median of several rounds, the due
rows made due again between rounds.
"""

import statistics
import tempfile
import time
from pathlib import Path

from benchmarks.common import T_DUE, Result, seed

ROUNDS = 7


def _median_claim_seconds(db: Path, due: int) -> float:
    import apsw

    from duequeue.store.base import WriteBack
    from duequeue.store.sqlite import SQLiteStore

    store = SQLiteStore(db)
    raw = apsw.Connection(str(db))
    now = T_DUE + 60_000
    times = []
    try:
        for i in range(ROUNDS):
            started = time.perf_counter()
            claimed = store.claim_due(now, due, 3, 60_000, f"bench-{i}")
            store.write_back(
                f"bench-{i}",
                now,
                [
                    WriteBack(c.id, c.fire_at, None, None, 0, None, "done", fired=True)
                    for c in claimed
                ],
            )
            times.append(time.perf_counter() - started)
            if len(claimed) != due:
                raise RuntimeError(f"claimed {len(claimed)} rows, expected {due}")
            with raw:  # due again for the next round
                raw.execute(
                    """UPDATE reminders SET fire_at = dtstart, next_fire_at = dtstart,
                           done_at = NULL WHERE id <= ?""",
                    (due,),
                )
    finally:
        raw.close()
        store.close()
    return statistics.median(times)


def run(big: int, small: int = 1000, due: int = 1000, target: float = 2.0) -> Result:
    """Compare a table of `big` pending rows with one of `small`; return the result."""
    with tempfile.TemporaryDirectory() as tmp:
        figures = {}
        for pending in (small, big):
            db = Path(tmp) / f"claim-{pending}.db"
            seed(db, due, pending=pending, webhook="http://127.0.0.1:9/hook")
            figures[pending] = _median_claim_seconds(db, due)
    ratio = figures[big] / figures[small]
    return Result(
        name=f"3. claim + write back {due:,} due rows",
        baseline=f"{small:,} pending rows {figures[small] * 1000:.1f} ms",
        measured=f"{big:,} pending rows {figures[big] * 1000:.1f} ms",
        ratio=ratio,
        target=f"<= {target:g}x",
        ok=ratio <= target,
    )
