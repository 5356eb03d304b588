"""A zone rules change at 10^6 pending rows: the recompute pass and the tick's check.

python -m benchmarks.tz_recompute [--rows 1000000] [--small 10000]

Rows are seeded under release 2099a of the test zones (benchmarks/tzzones.py, built by `zic`):
a third daily cron rules, a third FREQ=DAILY rules with a wall-time start, a third one-shots at
a wall time, their starts spread over 10^5 minutes so no cache hides the per-row work. The
zone folder is then release 2099b's and `engine.recompute.catch_up` runs, as the first tick
after a tz data update does. Reported: the pass's cost per row at `rows` against the same at
`small` (index-driven batches: it must not grow with the table), the pass's rows per second,
and the check every later tick pays (one index probe), against the claim's own read.
"""

import argparse
import os
import statistics
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from benchmarks.common import Result
from benchmarks.tzzones import build

T0 = datetime(2027, 3, 1, 8, 0, tzinfo=UTC)
NOW = int(datetime(2027, 3, 1, 0, 0, tzinfo=UTC).timestamp() * 1000)


def seed(db: Path, rows: int, tz: str = "Test/Zone") -> None:
    """Create `db` with `rows` pending rows in zone `tz` computed by release 2099a."""
    import apsw

    from duequeue.store.sqlite import connect as open_sqlite

    open_sqlite(db).close()
    conn = apsw.Connection(str(db))
    conn.execute("PRAGMA synchronous = OFF")
    kinds = (("cron", "0 9 * * *"), ("rrule", "FREQ=DAILY"), (None, None))
    with conn:
        batch = []
        for i in range(1, rows + 1):
            kind, rule = kinds[i % 3]
            start = T0 + timedelta(minutes=i % 100_000)
            wall = (start - timedelta(hours=8)).replace(tzinfo=None).isoformat()
            ms = int(start.timestamp() * 1000)
            after = None if kind is None else wall
            batch.append((i, kind, rule, ms, wall, after))
            if len(batch) == 50_000 or i == rows:
                conn.executemany(
                    """INSERT INTO reminders (id, subject, body, rule_kind, rule, tz, dtstart,
                           fire_at, next_fire_at, start_wall, after_wall, fire_release,
                           created_at, updated_at)
                       VALUES (?1, 'r', '', ?2, ?3, ?7, ?4, ?4, ?4, ?5, ?6, '2099a', 0, 0)""",
                    [(*row, tz) for row in batch],
                )
                batch = []
    conn.close()


def pass_over(db: Path, folder: Path, release: str = "2099b") -> tuple[float, float, int, int]:
    """Run the recompute pass with `folder`'s zones; return (wall seconds, CPU seconds, rows
    checked, moved)."""
    from duequeue.engine import recompute
    from duequeue.schedule import zones
    from duequeue.store.sqlite import connect as open_sqlite

    os.environ["PYTHONTZPATH"] = str(folder)
    zones.reset()
    store = open_sqlite(db)
    try:
        started, cpu = time.perf_counter(), time.process_time()
        done = recompute.catch_up(store, NOW, release)
        wall, cpu = time.perf_counter() - started, time.process_time() - cpu
        return wall, cpu, done.checked, done.moved
    finally:
        store.close()


def record_digest(db: Path, folder: Path) -> None:
    """Record Test/Same's digest under 2099a, read from `folder`, as `add` does."""
    from duequeue.schedule import zones
    from duequeue.store.sqlite import connect as open_sqlite

    os.environ["PYTHONTZPATH"] = str(folder)
    zones.reset()
    digest = zones.digest("Test/Same")
    if digest is None:
        raise RuntimeError("Test/Same has no compiled rules")
    store = open_sqlite(db)
    try:
        store.record_digests("2099a", {"Test/Same": digest})
    finally:
        store.close()


def probe(db: Path, rounds: int = 201) -> tuple[float, float]:
    """Return the median seconds of the tick's release check and of its claim's first read."""
    from duequeue.store import claim_sql
    from duequeue.store.sqlite import connect as open_sqlite

    store = open_sqlite(db)
    check: list[float] = []
    due: list[float] = []
    try:
        d = store.dialect
        for _ in range(rounds):
            started = time.perf_counter()
            if store.stale_fires("2099b", NOW, 3):
                raise RuntimeError("rows left stale after the pass")
            check.append(time.perf_counter() - started)
            started = time.perf_counter()
            store._read(lambda run: run(d.sql(claim_sql.ANY_DUE), {"now": NOW, "max": 3}), "x")
            due.append(time.perf_counter() - started)
    finally:
        store.close()
    return statistics.median(check), statistics.median(due)


def run(rows: int, small: int = 10_000, target: float = 1.5) -> list[Result]:
    """Measure the pass at `small` and `rows` rows (every row in a zone the update changed, and
    every row in one it left alone) and the tick's check after it."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        old = build(root, "2099a")
        folder = build(root, "2099b")
        cpu_per_row: dict[int, float] = {}
        totals: dict[int, tuple[float, float, int, int]] = {}
        for n in (small, rows):
            db = root / f"tz-{n}.db"
            seed(db, n)
            totals[n] = pass_over(db, folder)
            if totals[n][2] != n:
                raise RuntimeError(f"checked {totals[n][2]} of {n} rows")
            cpu_per_row[n] = totals[n][1] / n
        check, due = probe(root / f"tz-{rows}.db")
        same = root / "tz-same.db"
        seed(same, rows, "Test/Same")
        record_digest(same, old)  # as `add` under 2099a does
        same_wall, same_cpu, same_checked, _ = pass_over(same, folder)
    wall, cpu, checked, moved = totals[rows]
    ratio = cpu_per_row[rows] / cpu_per_row[small]
    return [
        Result(
            name=f"7. recompute after a tz data update, {rows:,} rows in a changed zone",
            baseline=f"{small:,} rows {cpu_per_row[small] * 1e6:.0f} CPU-us/row",
            measured=(
                f"{rows:,} rows {cpu_per_row[rows] * 1e6:.0f} CPU-us/row, CPU {cpu:.0f}s, "
                f"wall {wall:.0f}s ({checked / wall:,.0f} rows/s), {moved:,} moved"
            ),
            ratio=ratio,
            target=f"<= {target:g}x per row",
            ok=ratio <= target,
            note="batches of 200, each locked, computed and written back in one transaction",
        ),
        Result(
            name=f"7. recompute, {rows:,} rows in a zone the update left alone",
            baseline=f"the changed zone's pass CPU {cpu:.1f}s",
            measured=f"CPU {same_cpu:.1f}s, wall {same_wall:.1f}s, {same_checked:,} rows marked",
            ratio=same_cpu / cpu,
            target="<= 0.1x",
            ok=same_cpu / cpu <= 0.1 and same_checked == rows,
            note="same compiled rules under both releases: marked, not computed",
        ),
        Result(
            name=f"7. the tick's tz release check at {rows:,} rows",
            baseline=f"the claim's due read {due * 1e6:.0f} us",
            measured=f"release check {check * 1e6:.0f} us",
            ratio=check / due,
            target="<= 3x",
            ok=check / due <= 3,
            note=(
                "median of 201; on SQLite the check makes the claim's read first, then probes "
                "reminders_release and queue_meta"
            ),
        ),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.tz_recompute", description=__doc__)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--small", type=int, default=10_000)
    args = parser.parse_args()
    for result in run(args.rows, args.small):
        print(result.line(), flush=True)


if __name__ == "__main__":
    main()
