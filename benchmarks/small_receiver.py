"""Overlapping ticks against one small receiver: how many webhooks time out, bound by bound.

    python -m benchmarks.small_receiver                  # bounds 1 2 4 8 16 64, 3 rounds each
    python -m benchmarks.small_receiver --bounds 8 64 --rounds 5

The receiver of issue 12: Python's http.server (ThreadingHTTPServer, listen backlog 5, HTTP/1.0
so a connection per request) taking 20 ms per request, in its own process. `--rows` due webhooks
(one database), `--ticks` `duequeue tick` processes started together, each claiming up to
`--limit` rows. A bound of DUEQUEUE_CONCURRENCY (64) or more is the tick as it was before the
per-host bound. Prints, per bound, each round's sent / failed deliveries, the receiver's most
requests in flight at once and the wall time until the last tick exited.
"""

import argparse
import collections
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from benchmarks.common import ROOT, duequeue_env, python_env, seed


def serve(delay: float) -> None:
    """Serve as the small receiver; print the port, run until killed."""
    lock = threading.Lock()
    state = {"count": 0, "in_flight": 0, "max": 0}

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            with lock:
                state["in_flight"] += 1
                state["max"] = max(state["max"], state["in_flight"])
            try:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                time.sleep(delay)  # the receiver's own work
            finally:
                # Counted out before the answer: once a client has it, its next request may
                # start before this thread runs again.
                with lock:
                    state["in_flight"] -= 1
                    state["count"] += 1
            self.send_response(204)
            self.end_headers()

        def do_GET(self) -> None:
            with lock:
                body = f"{state['count']} {state['max']}".encode()
                state["max"] = 0
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)  # request_queue_size 5
    print(server.server_address[1], flush=True)
    server.serve_forever()


def _stats(port: int) -> tuple[int, int]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/stats", timeout=30) as response:
        count, peak = response.read().decode().split()
    return int(count), int(peak)


def one_round(port: int, tmp: Path, args: argparse.Namespace, bound: int, first: int) -> str:
    """Run the ticks once with `bound`; return the round's line."""
    import apsw

    db = tmp / f"round-{first}.db"
    seed(db, args.rows, webhook=f"http://127.0.0.1:{port}/hook", first_id=first)
    env = duequeue_env(db, tick_limit=str(args.limit), webhook_per_host=str(bound))
    _stats(port)  # resets the receiver's peak
    started = time.perf_counter()
    ticks = [
        subprocess.Popen(
            [sys.executable, "-m", "duequeue", "tick"], env=env, cwd=ROOT, stdout=subprocess.PIPE
        )
        for _ in range(args.ticks)
    ]
    for tick in ticks:
        tick.communicate(timeout=600)
    wall = time.perf_counter() - started
    _, peak = _stats(port)
    conn = apsw.Connection(str(db))
    outcomes = collections.Counter(
        (outcome, error) for outcome, error in conn.execute("SELECT outcome, error FROM deliveries")
    )
    conn.close()
    db.unlink()
    sent = outcomes.pop(("sent", None), 0)
    failed = ", ".join(f"{n} {error}" for (_, error), n in outcomes.most_common())
    return f"sent {sent}/{args.rows}, peak in flight {peak}, {wall:.1f}s" + (
        f"; failed: {failed}" if failed else ""
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.small_receiver", description=__doc__
    )
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--bounds", type=int, nargs="+", default=[1, 2, 4, 8, 16, 64])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--rows", type=int, default=200)
    parser.add_argument("--ticks", type=int, default=4)
    parser.add_argument("--limit", type=int, default=50, help="DUEQUEUE_TICK_LIMIT of each tick")
    parser.add_argument("--delay", type=float, default=0.02, help="seconds per request")
    args = parser.parse_args()
    if args.serve:
        serve(args.delay)
        return
    receiver = subprocess.Popen(
        [sys.executable, "-m", "benchmarks.small_receiver", "--serve", "--delay", str(args.delay)],
        stdout=subprocess.PIPE,
        text=True,
        env=python_env(),
        cwd=ROOT,
    )
    try:
        assert receiver.stdout is not None
        port = int(receiver.stdout.readline())
        first = 1
        with tempfile.TemporaryDirectory() as tmp:
            for bound in args.bounds:
                for r in range(args.rounds):
                    line = one_round(port, Path(tmp), args, bound, first)
                    first += args.rows
                    print(f"per host {bound}, round {r + 1}: {line}", flush=True)
    finally:
        receiver.terminate()
        receiver.wait(timeout=10)


if __name__ == "__main__":
    main()
