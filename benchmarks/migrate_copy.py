"""`duequeue migrate` at scale: N reminders (one webhook target and one search line each) copied
SQLite -> PostgreSQL, SQLite -> MySQL and PostgreSQL -> SQLite, each a `duequeue migrate`
process timed from spawn to exit with its peak RSS (benchmarks/peak_rss.py).

The servers are the test ones: DUEQUEUE_TEST_PG_URL and DUEQUEUE_TEST_MYSQL_URL (defaults:
postgresql://postgres@127.0.0.1:5432/test, mysql://root@127.0.0.1:3306/test); each run makes its
own databases and drops them after.

    nice -n 5 python3 -m benchmarks.migrate_copy --n 1000000
"""

import argparse
import json
import os
import secrets
import tempfile
from pathlib import Path
from urllib.parse import urlsplit

import apsw
import psycopg

from benchmarks.common import compile_all, duequeue_env, measure, seed
from tests.my import admin_connect as my_admin

PG = os.environ.get("DUEQUEUE_TEST_PG_URL", "postgresql://postgres@127.0.0.1:5432/test")
MY = os.environ.get("DUEQUEUE_TEST_MYSQL_URL", "mysql://root@127.0.0.1:3306/test")


def _with_database(url: str, name: str) -> str:
    return urlsplit(url)._replace(path="/" + name).geturl()


def run(n: int) -> list[dict[str, object]]:
    name = f"dq_bench_migrate_{secrets.token_hex(4)}"
    with psycopg.connect(PG, autocommit=True) as pg_admin:
        pg_admin.execute(f"CREATE DATABASE {name}")
    with my_admin(MY) as admin, admin.cursor() as cur:
        cur.execute(f"CREATE DATABASE `{name}`")
    pg, my = _with_database(PG, name), _with_database(MY, name)
    results = []
    try:
        with tempfile.TemporaryDirectory(prefix="dq-migrate-bench-") as folder:
            source = Path(folder) / "source.db"
            seed(source, n, webhook="https://hooks.example.com/reminders")
            conn = apsw.Connection(str(source))
            with conn:
                conn.executemany(
                    "INSERT INTO reminder_search (rowid, text) VALUES (?1, ?2)",
                    ((i, f"Reminder {i}\nwebhook: hooks.example.com") for i in range(1, n + 1)),
                )
            conn.close()
            back = Path(folder) / "back.db"
            for what, db, to in (
                ("SQLite -> PostgreSQL", source, pg),
                ("SQLite -> MySQL", source, my),
                ("PostgreSQL -> SQLite", pg, str(back)),
            ):
                env = duequeue_env(source)
                env["DUEQUEUE_DB"] = str(db)
                done = measure(["python3", "-m", "duequeue", "migrate", "--to", to], env, 3600)
                results.append(
                    {
                        "copy": what,
                        "n": n,
                        "seconds": round(done.seconds, 1),
                        "cpu_seconds": round(done.cpu_seconds, 1),
                        "peak_rss_mb": round(done.peak_rss_mb, 1),
                        "code": done.code,
                        "out": done.out.strip()[:120],
                        "err": done.err.strip()[:300],
                        "load": os.getloadavg()[0],
                    }
                )
                print(json.dumps(results[-1]), flush=True)
    finally:
        with psycopg.connect(PG, autocommit=True) as pg_admin:
            pg_admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        with my_admin(MY) as admin, admin.cursor() as cur:
            cur.execute(f"DROP DATABASE IF EXISTS `{name}`")
    return results


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.migrate_copy", description=__doc__)
    parser.add_argument("--n", type=int, default=1_000_000)
    args = parser.parse_args()
    compile_all()
    run(args.n)


if __name__ == "__main__":
    main()
