"""Add-to-delivery latency with `duequeue worker` running (issue 34): on PostgreSQL the worker
wakes on the NOTIFY an add commits (LISTEN/NOTIFY); the baseline, measured in the same run, is
the same worker on SQLite, where only its poll finds new work.

    python -m benchmarks.worker_latency [--n 20] [--every 10] [--pg postgresql://postgres@127.0.0.1:5432/postgres]

Each round adds one reminder due now (`Queue.add`, in this process) at a random point of the
worker's interval and times the moment its webhook reaches a loopback receiver.
"""

import argparse
import functools
import operator
import os
import random
import secrets
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from benchmarks.common import ROOT, python_env


class _Sink(ThreadingHTTPServer):
    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.arrived: dict[str, float] = {}
        self.cond = threading.Condition()


class _Handler(BaseHTTPRequestHandler):
    server: _Sink

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", 0)))
        with self.server.cond:
            self.server.arrived[self.path] = time.monotonic()
            self.server.cond.notify_all()
        self.send_response(200)
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


def latencies(db: str, n: int, every: int) -> list[float]:
    """Run a worker on `db`; return the add-to-delivery seconds of `n` reminders."""
    from duequeue import Queue

    sink = _Sink()
    threading.Thread(target=sink.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{sink.server_address[1]}"
    with Queue(db) as q:
        q.init()
    worker = subprocess.Popen(
        [sys.executable, "-m", "duequeue", "--db", db, "worker", "--every", f"{every}s"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=python_env(),
        cwd=ROOT,
    )
    try:
        assert worker.stdout is not None
        worker.stdout.readline()  # "worker: ticking every ..."
        # Its tick lines are read (and dropped) so that the pipe never fills.
        threading.Thread(target=worker.stdout.read, daemon=True).start()
        out: list[float] = []
        rng = random.Random(6)
        with Queue(db) as q:
            for i in range(n):
                time.sleep(rng.uniform(0, every))  # a random point of the interval
                path = f"/r{i}"
                start = time.monotonic()
                q.add(at="now", webhooks=[url + path])
                with sink.cond:
                    arrived = functools.partial(operator.contains, sink.arrived, path)
                    sink.cond.wait_for(arrived, timeout=3 * every)
                out.append(sink.arrived[path] - start)
        return out
    finally:
        worker.terminate()
        worker.wait(30)
        sink.shutdown()


def _pg_database(server: str) -> tuple[str, Any]:
    import psycopg

    name = f"dq_latency_{secrets.token_hex(4)}"
    admin = psycopg.connect(server, autocommit=True)
    admin.execute(f'CREATE DATABASE "{name}"')
    return urlsplit(server)._replace(path="/" + name).geturl(), (admin, name)


def _summary(label: str, xs: list[float]) -> str:
    xs = sorted(xs)
    p95 = xs[min(len(xs) - 1, round(0.95 * (len(xs) - 1)))]
    return (
        f"{label:<34} median {statistics.median(xs):6.3f} s   p95 {p95:6.3f} s   "
        f"max {xs[-1]:6.3f} s   (n={len(xs)})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.worker_latency")
    parser.add_argument("--n", type=int, default=20)
    parser.add_argument("--every", type=int, default=10)
    parser.add_argument("--pg", default="postgresql://postgres@127.0.0.1:5432/postgres")
    args = parser.parse_args()
    os.environ.pop("DUEQUEUE_DB", None)
    with tempfile.TemporaryDirectory() as tmp:
        base = latencies(str(Path(tmp) / "q.db"), args.n, args.every)
    url, (admin, name) = _pg_database(args.pg)
    try:
        pg = latencies(url, args.n, args.every)
    finally:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.close()
    print(_summary(f"SQLite, polling every {args.every}s", base))
    print(_summary("PostgreSQL, LISTEN/NOTIFY", pg))
    print(
        f"median ratio PostgreSQL / SQLite polling: "
        f"{statistics.median(pg) / statistics.median(base):.3f}"
    )


if __name__ == "__main__":
    main()
