"""The plan of the tz catch-up's batch at 10^6 pending rows, on SQLite and PostgreSQL.

python -m benchmarks.catch_up_plan [--rows 1000000] [--pg postgresql://.../db]

The catch-up (engine/recompute.py) takes its batches with tz_sql.stale_batch: rows computed by
an older release, not leased by a tick, lowest release then id first, skipping locked rows on
PostgreSQL. It must walk the partial index reminders_release (fire_release, id) WHERE
next_fire_at IS NOT NULL, never scan the table: a tick runs it before its claim. Two shapes:
every pending row stale (the first tick after a tz data update), and one in a hundred stale
with the first 10,000 leased by ticks (a pass half done while ticks run). Prints each plan and
fails if one reads the reminders table by a scan.
"""

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from duequeue.store import tz_sql
from duequeue.store.sql import POSTGRES, SQLITE

NOW = 1_800_000_000_000
RELEASE = "2099b"


def _fill_sql(rows: int, every: int, leased: int) -> str:
    """Rows 1..rows pending; each `every`-th computed by 2000a (stale), the rest by RELEASE;
    the first `leased` leased by a tick until after NOW."""
    return f"""INSERT INTO reminders (id, subject, body, tz, dtstart, fire_at, next_fire_at,
                   fire_release, lease_owner, lease_until, created_at, updated_at)
        SELECT g, 'r', '', 'Europe/Berlin', {NOW}, {NOW} + g, {NOW} + g,
               CASE WHEN g % {every} = 0 THEN '2000a' ELSE '{RELEASE}' END,
               CASE WHEN g <= {leased} THEN 'tick' END,
               CASE WHEN g <= {leased} THEN {NOW} + 60000 END, 0, 0
        FROM series"""


SHAPES = (("every row stale", 1, 0), ("1 in 100 stale, 10,000 leased", 100, 10_000))


def sqlite_plans(rows: int) -> list[tuple[str, str, float]]:
    import apsw

    from duequeue.store.sqlite import connect as open_sqlite

    found = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, every, leased in SHAPES:
            db = Path(tmp) / f"{every}.db"
            open_sqlite(db).close()
            conn = apsw.Connection(str(db))
            conn.execute("PRAGMA synchronous = OFF")
            with conn:
                conn.execute(
                    f"WITH RECURSIVE series(g) AS (SELECT 1 UNION ALL SELECT g + 1 FROM series "
                    f"WHERE g < {rows}) " + _fill_sql(rows, every, leased)
                )
            conn.execute("ANALYZE")
            query = tz_sql.stale_batch(SQLITE)
            args = {"release": RELEASE, "now": NOW, "limit": 200}
            plan = "\n".join(str(r[3]) for r in conn.execute("EXPLAIN QUERY PLAN " + query, args))
            started = time.perf_counter()
            got = list(conn.execute(query, args))
            took = time.perf_counter() - started
            assert len(got) == 200, len(got)
            found.append((name, plan, took))
            conn.close()
    return found


def pg_plans(url: str, rows: int) -> list[tuple[str, str, float]]:
    import psycopg

    from duequeue.store.postgres import connect as open_postgres

    found = []
    for name, every, leased in SHAPES:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("DROP SCHEMA IF EXISTS public CASCADE")
            conn.execute("CREATE SCHEMA public")
        open_postgres(url).close()
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(
                f"WITH series(g) AS (SELECT generate_series(1, {rows})) "
                + _fill_sql(rows, every, leased)
            )
            conn.execute("ANALYZE reminders")
            query = tz_sql.stale_batch(POSTGRES)
            args: dict[str, Any] = {"release": RELEASE, "now": NOW, "limit": 200}
            with conn.transaction():
                lines = conn.execute(
                    ("EXPLAIN (ANALYZE, BUFFERS) " + query).encode(), args
                ).fetchall()
            plan = "\n".join(str(r[0]) for r in lines)
            took = float(lines[-1][0].split("Execution Time: ")[1].split()[0]) / 1000
            found.append((name, plan, took))
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("DROP SCHEMA IF EXISTS public CASCADE")
        conn.execute("CREATE SCHEMA public")
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--pg", default=os.environ.get("DUEQUEUE_BENCH_PG_URL"))
    a = parser.parse_args()
    results = [("SQLite", *p) for p in sqlite_plans(a.rows)]
    if a.pg:
        results += [("PostgreSQL", *p) for p in pg_plans(a.pg, a.rows)]
    bad = []
    for db, name, plan, took in results:
        print(f"== {db}, {a.rows:,} pending rows, {name}: one batch of 200 in {took * 1000:.1f} ms")
        print(plan)
        scans = "SCAN reminders\n" in plan + "\n" or "Seq Scan on reminders" in plan
        if scans or "reminders_release" not in plan:
            bad.append(f"{db}, {name}")
    if bad:
        sys.exit(f"the catch-up's batch does not walk reminders_release: {', '.join(bad)}")


if __name__ == "__main__":
    main()
