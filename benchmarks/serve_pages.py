"""`duequeue serve` at scale: the server time of the overview, the list and a reminder's page at
10^6 reminders and 10^6 ledger rows (target: under 100 ms each), and POST /api/v1/reminders in
adds per second with 1 and 16 concurrent clients, beside `duequeue add` and `Queue.add` in the
same run.

    python -m benchmarks.serve_pages                 # 10^6 reminders, 10^6 ledger rows
    python -m benchmarks.serve_pages --n 100000      # smaller

The database is built fast: the reminders through `Queue.import_lines` (import's one-transaction
bulk path), then the ledger, dead letters, done and cancelled rows by SQL. Page times are the
server's own (its Server-Timing header), median and worst of `--repeat` requests, after one
warm-up request each; the client's round trip is shown beside them.
"""

import argparse
import asyncio
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import apsw

from benchmarks.common import ROOT, python_env
from duequeue import Queue

DAY_MS = 86_400_000


def _lines(n: int, now_ms: int) -> Iterator[str]:
    for i in range(n):
        at = now_ms + 60_000 + (i * 7919) % DAY_MS  # spread over the next day
        yield json.dumps({"at": f"+{(at - now_ms) // 1000}s",
                          "webhooks": [f"https://hooks.example.com/r/{i % 1000}"],
                          "subject": f"Invoice {i} is due", "key": f"inv-{i}"})  # fmt: skip


def build(db: Path, n: int) -> float:
    """Make a database of `n` reminders and `n` ledger rows; return the seconds it took."""
    started = time.perf_counter()
    now_ms = int(time.time() * 1000)
    with Queue(db) as q:
        q.import_lines(_lines(n, now_ms))
    fill(db, now_ms)
    return time.perf_counter() - started


def fill(db: Path, now_ms: int) -> None:
    """Add the ledger, done, cancelled and dead-lettered rows to a database of imported
    reminders, by SQL (search_pages.py does the same to another version's database)."""
    conn = apsw.Connection(str(db))
    conn.execute("PRAGMA busy_timeout = 60000")
    with conn:
        # The ledger: one attempt per reminder over the last month, a few a minute in the last
        # day; every 10th reminder done, every 50th cancelled, every 100th with a dead letter.
        conn.execute(
            """INSERT INTO deliveries (reminder_id, target_id, fire_at, outcome, error, attempt, at)
               SELECT r.id, t.id, ?1 - (r.id * 2591) % (30 * ?2),
                      CASE WHEN r.id % 13 = 0 THEN 'failed' ELSE 'sent' END,
                      CASE WHEN r.id % 13 = 0 THEN 'HTTP 503' END, 1,
                      ?1 - (r.id * 2591) % (30 * ?2) + 400
               FROM reminders r JOIN targets t ON t.reminder_id = r.id""",
            (now_ms, DAY_MS),
        )
        conn.execute(
            """UPDATE reminders SET done_at = ?1, next_fire_at = NULL WHERE id % 10 = 0""",
            (now_ms,),
        )
        conn.execute(
            """UPDATE reminders SET cancelled_at = ?1, next_fire_at = NULL
               WHERE id % 50 = 7""",
            (now_ms,),
        )
        conn.execute(
            """INSERT INTO dead_letters (reminder_id, fire_at, error_count, last_error, dead_at)
               SELECT id, ?1 - 3600000, 3, 'HTTP 500', ?1 - 3000000 FROM reminders
               WHERE id % 100 = 3""",
            (now_ms,),
        )
    conn.execute("ANALYZE")
    conn.close()


class Server:
    """`duequeue serve` on a free port, stopped with SIGTERM."""

    def __init__(self, db: Path, tree: Path = ROOT) -> None:
        """Start it with the code of checkout `tree` (default this one)."""
        env = {k: v for k, v in python_env().items() if not k.startswith("DUEQUEUE_")}
        env["PYTHONPATH"] = str(tree)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "duequeue", "--db", str(db), "serve", "--port", "0"],
            env=env, stderr=subprocess.PIPE, text=True, cwd=tree,
        )  # fmt: skip
        assert self.proc.stderr is not None
        line = self.proc.stderr.readline()
        found = re.search(r"(http://\S+?)/?$", line.strip())
        if found is None:
            raise RuntimeError(f"serve did not start: {line}")
        self.url = found.group(1)

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(30)


async def _page_times(
    url: str, paths: dict[str, str], repeat: int
) -> dict[str, tuple[float, float, float]]:
    found: dict[str, tuple[float, float, float]] = {}
    async with aiohttp.ClientSession() as s:
        for name, path in paths.items():
            server, client = [], []
            for i in range(repeat + 1):
                started = time.perf_counter()
                async with s.get(url + path) as r:
                    await r.read()
                    assert r.status == 200, (path, r.status)
                    timing = float(r.headers["Server-Timing"].split("dur=")[1])
                if i:  # the first is a warm-up (the page cache, the server's threads)
                    server.append(timing)
                    client.append((time.perf_counter() - started) * 1000)
            found[name] = (statistics.median(server), max(server), statistics.median(client))
    return found


def _body(i: int, tag: str) -> dict[str, object]:
    return {"at": "+1d", "webhooks": [f"https://hooks.example.com/{i % 100}"],
            "subject": f"bench {tag} {i}"}  # fmt: skip


async def _posts(url: str, n: int, clients: int, tag: str) -> float:
    """POST n reminders with `clients` concurrent clients; return adds per second."""
    todo = iter(range(n))

    async def client(s: aiohttp.ClientSession) -> None:
        for i in todo:
            async with s.post(url + "/api/v1/reminders", json=_body(i, tag)) as r:
                assert r.status == 201, await r.text()

    connector = aiohttp.TCPConnector(limit=clients)
    async with aiohttp.ClientSession(connector=connector) as s:
        started = time.perf_counter()
        await asyncio.gather(*(client(s) for _ in range(clients)))
        return n / (time.perf_counter() - started)


def _cli_adds(db: Path, n: int) -> float:
    env = {k: v for k, v in python_env().items() if not k.startswith("DUEQUEUE_")}
    started = time.perf_counter()
    for i in range(n):
        subprocess.run(
            [sys.executable, "-m", "duequeue", "--db", str(db), "add", "--at", "+1d",
             "--webhook", f"https://hooks.example.com/{i % 100}", "--subject", f"cli {i}"],
            env=env, check=True, capture_output=True,
        )  # fmt: skip
    return n / (time.perf_counter() - started)


def _queue_adds(db: Path, n: int) -> float:
    with Queue(db) as q:
        started = time.perf_counter()
        for i in range(n):
            q.add(at="+1d", webhooks=[f"https://hooks.example.com/{i % 100}"], subject=f"q {i}")
        return n / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.serve_pages", description=__doc__)
    parser.add_argument("--n", type=int, default=1_000_000, help="reminders and ledger rows")
    parser.add_argument("--repeat", type=int, default=20, help="requests per page")
    parser.add_argument("--adds", type=int, default=2_000, help="POSTs per client count")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "big.db"
        built = build(db, args.n)
        print(f"built {args.n:,} reminders and {args.n:,} ledger rows in {built:.0f}s")
        mid = args.n // 2
        dead = 3 + 100 * (args.n // 200)  # a reminder with a dead letter and an attempt
        paths = {
            "overview /": "/",
            "list, first page": "/reminders",
            f"list, page below id {mid:,}": f"/reminders?before={mid}",
            "list, dead letters": "/reminders?state=dead",
            "list, cancelled, deep": f"/reminders?state=cancelled&before={mid}",
            "list, search 'invoice 4242'": "/reminders?search=invoice+4242",
            "reminder page": f"/reminders/{dead}",
            "API list": "/api/v1/reminders?limit=50",
            "API stats": "/api/v1/stats",
        }
        server = Server(db)
        try:
            times = asyncio.run(_page_times(server.url, paths, args.repeat))
        finally:
            server.stop()
        print(f"\nserver time per page at {args.n:,} reminders (median / worst of "
              f"{args.repeat}; client round trip median), target < 100 ms:")  # fmt: skip
        for name, (median, worst, client) in times.items():
            verdict = "PASS" if median < 100 else "FAIL"
            print(f"  {name:34} {median:8.1f} ms / {worst:8.1f} ms   (client {client:7.1f} ms) "
                  f"{verdict}")  # fmt: skip

        fresh = Path(tmp) / "adds.db"
        Queue(fresh).close()
        with Queue(fresh) as q:
            q.stats()  # creates it
        queue_rate = _queue_adds(fresh, args.adds)
        cli_rate = _cli_adds(fresh, max(20, args.adds // 40))
        server = Server(fresh)
        try:
            one = asyncio.run(_posts(server.url, args.adds, 1, "one"))
            many = asyncio.run(_posts(server.url, args.adds, 16, "many"))
        finally:
            server.stop()
        print(f"\nadds per second ({os.cpu_count()} cores):")
        print(f"  Queue.add in process          {queue_rate:9,.0f}/s")
        print(f"  duequeue add (a process each) {cli_rate:9,.1f}/s")
        print(f"  POST /api/v1/reminders, 1     {one:9,.0f}/s  = {one / queue_rate:.2f} x "
              f"Queue.add, {one / cli_rate:,.0f} x duequeue add")  # fmt: skip
        print(f"  POST /api/v1/reminders, 16    {many:9,.0f}/s  = {many / queue_rate:.2f} x "
              f"Queue.add, {many / cli_rate:,.0f} x duequeue add")  # fmt: skip


if __name__ == "__main__":
    main()
