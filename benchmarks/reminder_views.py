"""Issue 31: what the one model of a reminder's state (its open dead letters counted in every
view) and what it sends (body, data) cost the reads that show a reminder, at 10^6 reminders,
1% of them with an open dead letter (and 9% with one retried).

    python -m benchmarks.reminder_views               # 10^6 reminders
    python -m benchmarks.reminder_views --n 100000    # smaller

In process, through the SQLite store. Each read (`inspect --all`: 20,000 rows; `inspect --dead`;
one reminder, as `history` and a reminder's page read it; a dashboard page of 50) is timed with
the columns it reads now and, in the same run, alternating rounds, with those of before (no
body, data or dead letter count): the ratio is the cost of the model. `stats` (one more count,
of distinct reminders, off the open dead letters' index) is timed alone. The plans are printed:
the count is one probe of dead_letters_open per row, never a scan.
"""

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

from benchmarks.common import T_DUE, seed
from duequeue.store.sql import Row, Run

ROUNDS = 3


def _before(columns: str) -> str:
    """Return the columns every view read before issue 31: constants where body, data and the
    count of open dead letters are read now (the same rows, minus the model)."""
    head, _, _count = columns.partition("r.body, r.data,")
    return head + "'', NULL, 0"


def build(db: Path, n: int) -> None:
    """Seed `n` pending reminders, a JSON data each, 1% with an open dead letter, 9% with a
    retried one."""
    import apsw

    seed(db, 0, pending=n, webhook="http://127.0.0.1:9/hook")
    conn = apsw.Connection(str(db))
    with conn:
        conn.execute(
            """UPDATE reminders SET data = '{"invoice": ' || id || ', "token": "s3cret"}'"""
        )
        # A dead letter for every 10th reminder, retried long ago but for every 10th of them.
        conn.execute(
            """INSERT INTO dead_letters
                   (reminder_id, fire_at, error_count, last_error, dead_at, retried_at)
               SELECT id, ?1, 3, 'HTTP 503', ?1, CASE WHEN id % 100 != 7 THEN ?1 END
               FROM reminders WHERE id % 10 = 7""",
            (T_DUE,),
        )
    conn.execute("ANALYZE")
    conn.close()


def run(n: int) -> None:
    from duequeue.store import rows
    from duequeue.store.sqlite import connect as open_sqlite

    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "views.db"
        started = time.perf_counter()
        build(db, n)
        print(f"built {n:,} reminders in {time.perf_counter() - started:.1f} s")
        store = open_sqlite(db)
        now = T_DUE
        # Each read and how many times a round runs it (the quick ones often enough to be seen
        # above the noise of a loaded host).
        reads: dict[str, tuple[Callable[[], object], int]] = {
            # Per row: the first 20,000 rows (every row of 10^6 takes minutes on a loaded host).
            "inspect --all --limit 20000": (lambda: store.list_view("all", now, 20_000), 1),
            "inspect --dead (every dead letter)": (lambda: store.list_view("dead", now, None), 1),
            "1,000 reminders one by one (history, its page)": (
                lambda: [store.get(i) for i in range(1, 1001)],
                3,
            ),
            "a dashboard page of 50": (lambda: store.browse("all", None, None, 50, now), 50),
        }
        now_columns = rows.VIEW_COLUMNS
        columns = {"now": now_columns, "before": _before(now_columns)}
        times: dict[tuple[str, str], list[float]] = {}
        try:
            for _ in range(ROUNDS):
                for name, (read, repeat) in reads.items():
                    for label, cols in columns.items():
                        rows.VIEW_COLUMNS = cols  # the reads format it in at each call
                        for _ in range(repeat):
                            began = time.perf_counter()
                            read()
                            took = time.perf_counter() - began
                            times.setdefault((name, label), []).append(took)
        finally:
            rows.VIEW_COLUMNS = now_columns
        for name in reads:
            before = statistics.median(times[(name, "before")])
            after = statistics.median(times[(name, "now")])
            print(
                f"{name}: before {before * 1000:.1f} ms, now {after * 1000:.1f} ms, "
                f"ratio {after / before:.2f}"
            )
        stats_times = []
        for _ in range(ROUNDS):
            began = time.perf_counter()
            found = store.stats(now)
            stats_times.append(time.perf_counter() - began)
        print(
            f"stats: {statistics.median(stats_times) * 1000:.1f} ms "
            f"({found.dead_letters:,} dead letters on {found.dead_reminders:,} reminders)"
        )
        letters = {
            "before": _LETTERS.replace(", count(DISTINCT d.reminder_id)", ""),
            "now": _LETTERS,
        }
        spent: dict[str, list[float]] = {}
        for _ in range(ROUNDS * 10):
            for label, sql in letters.items():
                began = time.perf_counter()
                store.backend.transact(partial(_run_sql, sql), what="bench", write=False)
                spent.setdefault(label, []).append(time.perf_counter() - began)
        before, after = (statistics.median(spent[k]) for k in ("before", "now"))
        print(
            f"stats' dead letter count: before {before * 1000:.2f} ms, now (with the reminders) "
            f"{after * 1000:.2f} ms, ratio {after / before:.2f}"
        )
        _plans(store)
        store.close()
    print(f"(medians of {ROUNDS} alternating rounds, the quick reads run several times a round)")


# stats' count of open dead letters (store/ops_sql.py), and now of the reminders they are of.
_LETTERS = """SELECT count(*), count(DISTINCT d.reminder_id)
    FROM dead_letters d JOIN reminders r ON r.id = d.reminder_id
    WHERE d.retried_at IS NULL AND r.cancelled_at IS NULL"""


def _plans(store: object) -> None:
    """Print SQLite's plan of a view's count of open dead letters and of stats' count."""
    from duequeue.store import rows

    backend = store.backend  # type: ignore[attr-defined]

    def plan(run: Callable[..., list[tuple[object, ...]]]) -> None:
        for label, sql in (
            ("one reminder", f"SELECT {rows.VIEW_COLUMNS} FROM reminders r WHERE r.id = 1"),
            ("stats' dead letters", _LETTERS),
        ):
            steps = [str(row[3]) for row in run("EXPLAIN QUERY PLAN " + sql, {})]
            print(f"plan, {label}: " + "; ".join(steps))

    backend.transact(plan, what="explain", write=False)


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.reminder_views", description=__doc__
    )
    parser.add_argument("--n", type=int, default=1_000_000, help="reminders (default 10^6)")
    run(parser.parse_args().n)


if __name__ == "__main__":
    main()


def _run_sql(sql: str, run: Run) -> list[Row]:
    return run(sql, {})
