"""Benchmark 3: claiming and writing back 1,000 due rows costs the same in a table of 10^6
pending rows as in one of 10^3 (an index walk, not a scan).

In process, through the SQLite store itself. Rounds alternate between the two tables, so that load
from elsewhere on the machine hits both alike; each figure is the median of its rounds, the
due rows made due again between rounds.
"""

import statistics
import tempfile
import time
from pathlib import Path

from benchmarks.common import T_DUE, Result, seed

ROUNDS = 9


class _Table:
    """One seeded database: claim and write back its due rows, then make them due again."""

    def __init__(self, db: Path, due: int) -> None:
        import apsw

        from duequeue.store.sqlite import connect as open_sqlite

        self.store = open_sqlite(db)
        self.raw = apsw.Connection(str(db))
        self.due = due
        self.times: list[float] = []

    def round(self, i: int) -> None:
        from duequeue.engine.settle import one_shot_sent

        now = T_DUE + 60_000
        started = time.perf_counter()
        claimed = self.store.claim(now, self.due, 3, 60_000, f"bench-{i}")
        self.store.commit(f"bench-{i}", now, [], [one_shot_sent(c) for c in claimed], [])
        self.times.append(time.perf_counter() - started)
        if len(claimed) != self.due:
            raise RuntimeError(f"claimed {len(claimed)} rows, expected {self.due}")
        with self.raw:  # due again for the next round (ids are seeded from 1, due ones first)
            self.raw.execute(
                """UPDATE reminders SET fire_at = dtstart, next_fire_at = dtstart,
                       done_at = NULL WHERE id <= ?""",
                (self.due,),
            )

    def close(self) -> None:
        self.raw.close()
        self.store.close()


def run(big: int, small: int = 1000, due: int = 1000, target: float = 2.0) -> Result:
    """Compare a table of `big` pending rows with one of `small`; return the result."""
    with tempfile.TemporaryDirectory() as tmp:
        tables = {}
        for pending in (small, big):
            db = Path(tmp) / f"claim-{pending}.db"
            seed(db, due, pending=pending, webhook="http://127.0.0.1:9/hook")
            tables[pending] = _Table(db, due)
        try:
            for i in range(ROUNDS):
                for table in tables.values():
                    table.round(i)
        finally:
            for table in tables.values():
                table.close()
        figures = {pending: statistics.median(t.times) for pending, t in tables.items()}
    ratio = figures[big] / figures[small]
    return Result(
        name=f"3. claim + write back {due:,} due rows",
        baseline=f"{small:,} pending rows {figures[small] * 1000:.1f} ms",
        measured=f"{big:,} pending rows {figures[big] * 1000:.1f} ms",
        ratio=ratio,
        target=f"<= {target:g}x",
        ok=ratio <= target,
        note=f"median of {ROUNDS} alternating rounds",
    )
