"""The claim's plans at 10^6 reminders with pauses (issue 31 item 6): a tenth of the reminders
paused, 2 x 10^5 due target retries, half of them a paused reminder's. Prints each claim
statement's plan (SQLite: EXPLAIN QUERY PLAN; PostgreSQL: EXPLAIN ANALYZE) and its time: every
one walks an index (reminders_due, target_retries_due), never a table.

    python -m benchmarks.pause_plans sqlite /tmp/plans.db
    createdb -h 127.0.0.1 -U postgres plans_db
    python -m benchmarks.pause_plans postgresql postgresql://postgres@127.0.0.1:5432/plans_db

Not part of `python -m benchmarks`: it prints plans for a person to read, not a ratio.
"""

import sys
import time

from duequeue.store import claim_sql
from duequeue.store.sql import POSTGRES, SQLITE

NOW = 1_800_000_000_000
N = 1_000_000
_FILL = f"""
INSERT INTO reminders (id, subject, body, tz, dtstart, fire_at, next_fire_at, paused_at,
                       created_at, updated_at)
SELECT g, 's', 'b', 'UTC', {NOW}, {NOW} - 1000 + g,
       CASE WHEN g % 10 = 0 THEN NULL ELSE {NOW} - 1000 + g END,
       CASE WHEN g % 10 = 0 THEN {NOW} END, {NOW}, {NOW} FROM gs;
INSERT INTO targets (id, reminder_id, channel, address)
SELECT g, g, 'webhook', 'https://x/' || g FROM gs;
INSERT INTO target_retries (reminder_id, target_id, fire_at, error_count, next_try_at,
                            created_at)
SELECT g, g, {NOW} - 5000, 1, {NOW} - 10 * (g % 1000), {NOW} FROM gs WHERE g % 10 IN (0, 1);
"""
_ARGS = {"owner": "o", "until": NOW + 60000, "now": NOW, "limit": 100, "max": 3}


def sqlite(path: str) -> None:
    """Fill a new SQLite file and print the claim's plans."""
    import apsw

    from duequeue.store.sqlite import connect

    connect(path).close()
    conn = apsw.Connection(path)
    series = (
        f"(WITH RECURSIVE s(g) AS (SELECT 1 UNION ALL SELECT g + 1 FROM s WHERE g < {N}) "
        "SELECT g FROM s) gs"
    )
    conn.execute("BEGIN; " + _FILL.replace("FROM gs", f"FROM {series}") + " COMMIT; ANALYZE;")
    for name, stmt in (
        ("claim rows", claim_sql.due_rows(SQLITE)),
        ("claim retries", claim_sql._claim_retries(SQLITE)),
        ("anything due", SQLITE.sql(claim_sql.ANY_DUE)),
    ):
        print(f"-- SQLite, {name}")
        for row in conn.execute("EXPLAIN QUERY PLAN " + stmt, _ARGS):
            print("  ", row[-1])
        started = time.perf_counter()
        conn.execute("BEGIN")
        list(conn.execute(stmt, _ARGS))
        conn.execute("ROLLBACK")
        print(f"   ran in {(time.perf_counter() - started) * 1000:.1f} ms")


def postgresql(url: str) -> None:
    """Fill an empty PostgreSQL database and print the claim's plans, as executed."""
    import psycopg

    from duequeue.store.postgres import connect

    connect(url).close()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(_FILL.replace("FROM gs", f"FROM generate_series(1, {N}) g").encode())
        conn.execute("ANALYZE")
        for name, stmt in (
            ("claim rows", claim_sql.due_rows(POSTGRES)),
            ("claim retries", claim_sql._claim_retries(POSTGRES)),
        ):
            print(f"-- PostgreSQL, {name}")
            conn.execute("BEGIN")
            for (line,) in conn.execute(f"EXPLAIN (ANALYZE, COSTS OFF) {stmt}".encode(), _ARGS):
                print("  ", line)
            conn.execute("ROLLBACK")


if __name__ == "__main__":
    {"sqlite": sqlite, "postgresql": postgresql}[sys.argv[1]](sys.argv[2])
