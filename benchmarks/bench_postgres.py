"""Deliveries per second with 1, 2 and 4 concurrent tick processes, PostgreSQL against SQLite.

    python -m benchmarks.bench_postgres [--rows 2000] [--limit 100] [--repeat 1] [--pg-url URL]
    python -m benchmarks.bench_postgres --history 1000000 [--rows ...]   # PostgreSQL only
    python -m benchmarks.bench_postgres --history 1000000 --server mysql [--mysql-url URL]

Each run fills a fresh database with `--rows` due one-shot reminders, each with one webhook to a
local HTTP sink (tests/servers.HttpSink, signed as in production), then starts N worker processes
that tick in a loop (`operations.tick.run`, as `duequeue tick` does) until nothing is left to claim.
The clock runs from releasing the already-started workers (interpreter start-up excluded) until
the last one exits. The PostgreSQL runs use a throw-away database on the server at `--pg-url`
(default DUEQUEUE_TEST_PG_URL, else the local server), dropped at the end. Ratios are against
SQLite with one tick process measured in the same run, so they compare like with like on this
machine; absolute figures depend on it. With `--repeat N` each configuration runs N times and the
fastest run is reported (the one least disturbed by whatever else the machine was doing).

With `--history N` it measures PostgreSQL alone, on an empty database against one that already
holds N ledger rows (N / 10 finished reminders with ten delivered fires each, seeded by
generate_series and ANALYZEd before the due rows are added): a tick's cost must not grow with
history. Ratios are then against the empty database with the same number of tick processes. With
`--server mysql` the same runs go to a throw-away database on the MySQL / MariaDB server at
`--mysql-url` (default DUEQUEUE_TEST_MYSQL_URL, else the local server), its history seeded by
batched INSERTs.
"""

import argparse
import json
import os
import secrets
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
NOW_OFFSET_MS = 60_000  # the reminders fell due a minute ago
DEFAULT_PG = os.environ.get("DUEQUEUE_TEST_PG_URL", "postgresql://postgres@127.0.0.1:5432/postgres")
DEFAULT_MYSQL = os.environ.get("DUEQUEUE_TEST_MYSQL_URL", "mysql://root@127.0.0.1:3306/test")


@dataclass(frozen=True)
class Result:
    store: str
    ticks: int
    delivered: int
    seconds: float

    @property
    def rate(self) -> float:
        return self.delivered / self.seconds


def _worker(db: str, limit: int) -> None:
    """Tick `db` until nothing is due; print what was delivered as JSON."""
    from datetime import UTC, datetime

    from duequeue.config.settings import load_settings
    from duequeue.operations import tick as tick_operation
    from duequeue.shared.timefmt import to_ms
    from duequeue.store import open_store

    settings = load_settings({"db": db})
    store = open_store(db)
    print("ready", flush=True)
    sys.stdin.readline()  # the go signal: every worker starts together
    sent = ticks = 0
    try:
        while True:
            summary = tick_operation.run(
                store, settings, datetime.now(UTC), lambda: to_ms(datetime.now(UTC)), limit
            )
            if summary.claimed == 0:
                break
            sent += summary.deliveries_sent
            ticks += 1
    finally:
        store.close()
    print(json.dumps({"sent": sent, "ticks": ticks}), flush=True)


def _fill(db: str, rows: int, url: str) -> None:
    from datetime import UTC, datetime

    from duequeue.schedule import release
    from duequeue.shared.timefmt import to_ms
    from duequeue.store import open_store
    from duequeue.store.records import NewReminder, NewTarget

    now = to_ms(datetime.now(UTC))
    mine = release.in_use() or ""
    due = now - NOW_OFFSET_MS
    store = open_store(db)
    try:
        store.add_many(
            [
                NewReminder(
                    subject=f"r{i}",
                    body="b",
                    data=None,
                    tz="UTC",
                    dtstart=due,
                    fire_at=due,
                    targets=(NewTarget("webhook", f"{url}/r{i}"),),
                    release=mine,  # as add records it: no catch-up pass on the first tick
                )
                for i in range(rows)
            ],
            now,
        )
    finally:
        store.close()


def _run(store: str, db: str, ticks: int, rows: int, limit: int, url: str, tmp: Path) -> Result:
    _fill(db, rows, url)
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "XDG_CONFIG_HOME": str(tmp / "xdg-config"),  # no user config file
        "DUEQUEUE_WEBHOOK_SECRET": SECRET,
    }
    workers = [
        subprocess.Popen(
            [sys.executable, "-m", "benchmarks.bench_postgres", "--worker", db, str(limit)],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(ticks)
    ]
    for w in workers:
        assert w.stdout is not None
        if w.stdout.readline().strip() != "ready":
            raise SystemExit(f"a {store} worker failed to start")
    start = time.perf_counter()
    for w in workers:
        assert w.stdin is not None
        w.stdin.write("go\n")
        w.stdin.flush()
    outs = [w.communicate(timeout=600)[0] for w in workers]
    seconds = time.perf_counter() - start
    if any(w.returncode for w in workers):
        raise SystemExit(f"a {store} worker failed")
    delivered = sum(json.loads(out.strip().splitlines()[-1])["sent"] for out in outs)
    if delivered != rows:
        raise SystemExit(f"{store} x{ticks}: delivered {delivered} of {rows}")
    return Result(store, ticks, delivered, seconds)


def _reset_pg(url: str, history: int = 0) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("DROP SCHEMA IF EXISTS public CASCADE")
        conn.execute("CREATE SCHEMA public")
    if history:
        _seed_history(url, history)


def _seed_history(url: str, ledger_rows: int) -> None:
    """Add finished reminders with `ledger_rows` delivered attempts in all, then ANALYZE."""
    import psycopg

    from duequeue.store import open_store

    open_store(url).close()  # the schema
    done = max(1, ledger_rows // 10)
    long_ago = 1_000_000_000_000  # 2001: history, never due
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            f"""INSERT INTO reminders (subject, body, tz, dtstart, fire_at, done_at,
                                       last_fired_at, created_at, updated_at)
                SELECT 'h' || g, 'b', 'UTC', {long_ago}, {long_ago}, {long_ago}, {long_ago},
                       {long_ago}, {long_ago}
                FROM generate_series(1, {done}) g""".encode()
        )
        conn.execute(
            """INSERT INTO targets (reminder_id, channel, address)
               SELECT id, 'webhook', 'https://example.test/' || id FROM reminders"""
        )
        conn.execute(
            f"""INSERT INTO deliveries (reminder_id, target_id, fire_at, outcome, attempt, at)
                SELECT t.reminder_id, t.id, {long_ago} + n * 60000, 'sent', 1, {long_ago}
                FROM targets t, generate_series(0, {ledger_rows // done - 1}) n""".encode()
        )
        conn.execute("VACUUM ANALYZE")


def _reset_mysql(url: str, history: int = 0) -> None:
    """Empty the MySQL database `url` names; seed `history` ledger rows as _seed_history does."""
    from duequeue.store import open_store
    from tests.my import admin_connect

    name = urlsplit(url).path.lstrip("/")
    with admin_connect(url) as conn, conn.cursor() as cur:
        cur.execute(f"DROP DATABASE `{name}`")
        cur.execute(f"CREATE DATABASE `{name}`")
    if not history:
        return
    open_store(url).close()  # the schema
    done = max(1, history // 10)
    long_ago = 1_000_000_000_000
    # PyMySQL makes one multi-row INSERT of an executemany only when every value is a %s; one
    # transaction a batch.
    with admin_connect(url) as conn, conn.cursor() as cur:
        for start in range(1, done + 1, 10_000):
            ids = range(start, min(done, start + 9_999) + 1)
            conn.begin()
            cur.executemany(
                "INSERT INTO reminders (id, subject, body, tz, dtstart, fire_at, done_at, "
                "last_fired_at, created_at, updated_at) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                [(i, f"h{i}", "b", "UTC", *[long_ago] * 6) for i in ids],
            )
            cur.executemany(
                "INSERT INTO targets (id, reminder_id, channel, address) VALUES (%s, %s, %s, %s)",
                [(i, i, "webhook", f"https://example.test/{i}") for i in ids],
            )
            cur.executemany(
                "INSERT INTO deliveries (reminder_id, target_id, fire_at, outcome, attempt, at) "
                "VALUES (%s, %s, %s, %s, %s, %s)",
                [
                    (i, i, long_ago + n * 60_000, "sent", 1, long_ago)
                    for i in ids
                    for n in range(10)
                ],
            )
            conn.commit()
        cur.execute("ANALYZE TABLE reminders, targets, deliveries")


def _history_table(args: argparse.Namespace) -> None:
    """Run PostgreSQL alone, empty against `--history` ledger rows; print a Markdown table."""
    import psycopg

    from tests.servers import HttpSink

    name = f"duequeue_bench_{secrets.token_hex(4)}"
    mysql = args.server == "mysql"
    server = "MySQL" if mysql else "PostgreSQL"
    if mysql:
        from tests.my import admin_connect

        pg_db = urlsplit(args.mysql_url)._replace(path="/" + name).geturl()
        with admin_connect(args.mysql_url) as my, my.cursor() as cur:
            cur.execute(f"CREATE DATABASE `{name}`")
    else:
        admin = psycopg.connect(args.pg_url, autocommit=True)
        admin.execute(f'CREATE DATABASE "{name}"')
        pg_db = urlsplit(args.pg_url)._replace(path="/" + name).geturl()
    reset = _reset_mysql if mysql else _reset_pg
    results: list[tuple[int, Result]] = []
    try:
        with HttpSink() as sink, tempfile.TemporaryDirectory() as tmp_dir:
            for ticks in (1, 2, 4):
                for history in (0, args.history):
                    runs = []
                    for _ in range(args.repeat):
                        reset(pg_db, history)
                        runs.append(
                            _run(
                                server,
                                pg_db,
                                ticks,
                                args.rows,
                                args.limit,
                                sink.url(),
                                Path(tmp_dir),
                            )
                        )
                    results.append((history, min(runs, key=lambda r: r.seconds)))
    finally:
        if mysql:
            with admin_connect(args.mysql_url) as my, my.cursor() as cur:
                cur.execute(f"DROP DATABASE IF EXISTS `{name}`")
        else:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            admin.close()

    print(
        f"{server}, {args.rows} due reminders, one webhook each, tick --limit {args.limit}, "
        f"best of {args.repeat}\n"
    )
    print("| ledger rows before | tick processes | seconds | deliveries/s | vs empty, same N |")
    print("|---|---|---|---|---|")
    empty = {r.ticks: r.rate for history, r in results if history == 0}
    for history, r in results:
        print(
            f"| {history:,} | {r.ticks} | {r.seconds:.2f} | {r.rate:.0f} "
            f"| {r.rate / empty[r.ticks]:.2f}x |"
        )


def main() -> None:
    """Run the benchmark and print a Markdown table."""
    if len(sys.argv) == 4 and sys.argv[1] == "--worker":
        _worker(sys.argv[2], int(sys.argv[3]))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2000, help="due reminders per run")
    parser.add_argument("--limit", type=int, default=100, help="rows per tick (tick --limit)")
    parser.add_argument("--repeat", type=int, default=1, help="runs per configuration; best kept")
    parser.add_argument("--pg-url", default=DEFAULT_PG, help="PostgreSQL server to use")
    parser.add_argument(
        "--history", type=int, default=0, help="one server only: empty vs this many ledger rows"
    )
    parser.add_argument(
        "--server", choices=("postgresql", "mysql"), default="postgresql", help="with --history"
    )
    parser.add_argument("--mysql-url", default=DEFAULT_MYSQL, help="MySQL server to use")
    args = parser.parse_args()

    sys.path.insert(0, str(ROOT))
    if args.history:
        _history_table(args)
        return
    import psycopg

    from tests.servers import HttpSink

    name = f"duequeue_bench_{secrets.token_hex(4)}"
    admin = psycopg.connect(args.pg_url, autocommit=True)
    admin.execute(f'CREATE DATABASE "{name}"')
    pg_db = urlsplit(args.pg_url)._replace(path="/" + name).geturl()
    results: list[Result] = []
    try:
        with HttpSink() as sink, tempfile.TemporaryDirectory() as tmp_dir:
            tmp = Path(tmp_dir)
            for store in ("SQLite", "PostgreSQL"):
                for ticks in (1, 2, 4):
                    runs = []
                    for n in range(args.repeat):
                        db = str(tmp / f"bench-{ticks}-{n}.db")
                        if store == "PostgreSQL":
                            db = pg_db
                            _reset_pg(pg_db)
                        runs.append(_run(store, db, ticks, args.rows, args.limit, sink.url(), tmp))
                    results.append(min(runs, key=lambda r: r.seconds))
    finally:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.close()

    base = results[0].rate
    print(
        f"{args.rows} due reminders, one webhook each, tick --limit {args.limit}, "
        f"best of {args.repeat}\n"
    )
    print("| store | tick processes | deliveries | seconds | deliveries/s | vs SQLite, 1 tick |")
    print("|---|---|---|---|---|---|")
    for r in results:
        print(
            f"| {r.store} | {r.ticks} | {r.delivered} | {r.seconds:.2f} | {r.rate:.0f} "
            f"| {r.rate / base:.2f}x |"
        )


if __name__ == "__main__":
    main()
