"""Deliveries per second with 1, 2 and 4 concurrent tick processes, PostgreSQL against SQLite.

    python -m benchmarks.bench_postgres [--rows 2000] [--limit 100] [--repeat 1] [--pg-url URL]

Each run fills a fresh database with `--rows` due one-shot reminders, each with one webhook to a
local HTTP sink (tests/servers.HttpSink, signed as in production), then starts N worker processes
that tick in a loop (`service.run_tick`, as `duequeue tick` does) until nothing is left to claim.
The clock runs from releasing the already-started workers (interpreter start-up excluded) until
the last one exits. The PostgreSQL runs use a throw-away database on the server at `--pg-url`
(default DUEQUEUE_TEST_PG_URL, else the local server), dropped at the end. Ratios are against
SQLite with one tick process measured in the same run, so they compare like with like on this
machine; absolute figures depend on it. With `--repeat N` each configuration runs N times and the
fastest run is reported (the one least disturbed by whatever else the machine was doing).
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

    from duequeue import service
    from duequeue.config import load_settings
    from duequeue.store import open_store
    from duequeue.timefmt import to_ms

    settings = load_settings({"db": db})
    store = open_store(db)
    print("ready", flush=True)
    sys.stdin.readline()  # the go signal: every worker starts together
    sent = ticks = 0
    try:
        while True:
            summary = service.run_tick(
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

    from duequeue.store import open_store
    from duequeue.store.base import NewReminder, NewTarget
    from duequeue.timefmt import to_ms

    now = to_ms(datetime.now(UTC))
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


def _reset_pg(url: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("DROP SCHEMA IF EXISTS public CASCADE")
        conn.execute("CREATE SCHEMA public")


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
    args = parser.parse_args()

    sys.path.insert(0, str(ROOT))
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
