"""The overview (`/`) and `GET /api/v1/stats` at 10^6 reminders, the server's own time, for
two checkouts in the same run (before and after a change), alternating, two rounds each.

    python -m benchmarks.serve_counts --before /path/to/other/checkout
    python -m benchmarks.serve_counts --db postgresql://... --before ...   # an existing database
    python -m benchmarks.serve_counts --build-pg postgresql://.../big   # make one, then measure

Without --db the database is serve_pages.py's (10^6 reminders and ledger rows, built in a temp
dir); a PostgreSQL one is built the same way: serve_pages' lines through `import`, then its fill.
"""

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

from benchmarks.common import ROOT
from benchmarks.serve_pages import DAY_MS, Server, _lines, _page_times, build
from duequeue import Queue

PATHS = {"overview /": "/", "API stats": "/api/v1/stats"}


def measure(db: str, trees: list[Path], repeat: int) -> None:
    for rnd in range(2):
        for tree in trees:
            server = Server(db, tree)  # type: ignore[arg-type]  # a URL is a --db too
            try:
                times = asyncio.run(_page_times(server.url, PATHS, repeat))
            finally:
                server.stop()
            for name, (median, worst, _client) in times.items():
                print(f"round {rnd}  {tree!s:28} {name:12} median {median:7.1f} ms  "
                      f"worst {worst:7.1f} ms", flush=True)  # fmt: skip


def build_pg(url: str, n: int) -> None:
    """Fill the (new, empty) PostgreSQL database at `url` as serve_pages.build does SQLite's:
    `n` reminders through `import`, then the same ledger, done, cancelled and dead rows."""
    now_ms = int(time.time() * 1000)
    with Queue(url) as q:
        q.import_lines(_lines(n, now_ms))
    fill_pg(url, now_ms)


def fill_pg(url: str, now_ms: int) -> None:
    """Add serve_pages.fill's rows to a PostgreSQL database of imported reminders."""
    import psycopg

    with psycopg.connect(url) as conn:
        args = {"now": now_ms, "day": DAY_MS}
        conn.execute(
            """INSERT INTO deliveries (reminder_id, target_id, fire_at, outcome, error, attempt, at)
               SELECT r.id, t.id, %(now)s - (r.id * 2591) %% (30 * %(day)s::bigint),
                      CASE WHEN r.id %% 13 = 0 THEN 'failed' ELSE 'sent' END,
                      CASE WHEN r.id %% 13 = 0 THEN 'HTTP 503' END, 1,
                      %(now)s - (r.id * 2591) %% (30 * %(day)s::bigint) + 400
               FROM reminders r JOIN targets t ON t.reminder_id = r.id""",
            args,
        )
        conn.execute(
            "UPDATE reminders SET done_at = %(now)s, next_fire_at = NULL WHERE id %% 10 = 0", args
        )
        conn.execute(
            """UPDATE reminders SET cancelled_at = %(now)s, next_fire_at = NULL
               WHERE id %% 50 = 7""",
            args,
        )
        conn.execute(
            """INSERT INTO dead_letters (reminder_id, fire_at, error_count, last_error, dead_at)
               SELECT id, %(now)s - 3600000, 3, 'HTTP 500', %(now)s - 3000000 FROM reminders
               WHERE id %% 100 = 3""",
            args,
        )
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE")


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.serve_counts", description=__doc__)
    parser.add_argument("--db", help="an existing database (path or URL); default: build one")
    parser.add_argument("--before", type=Path, help="the other checkout, measured first")
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--build-pg", metavar="URL", help="fill this empty PostgreSQL database")
    args = parser.parse_args()
    if args.build_pg:
        build_pg(args.build_pg, args.n)
        args.db = args.build_pg
    trees = ([args.before] if args.before else []) + [ROOT]
    if args.db:
        measure(args.db, trees, args.repeat)
        return
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "big.db"
        build(db, args.n)
        measure(str(db), trees, args.repeat)


if __name__ == "__main__":
    main()
