"""The CPU time of serve's overview and `/api/v1/stats` (made as serve makes them, rendered),
which load on a shared machine does not inflate as it does the server's wall time: this thread's
(all of SQLite's work) plus, on a local PostgreSQL, its backend's (from /proc; 10 ms ticks, so
read the mean). Measures the checkout on PYTHONPATH:

    PYTHONPATH=/path/to/checkout python benchmarks/serve_cpu.py DB_OR_URL [--repeat 20]
"""

import argparse
import os
import statistics
import time
from collections.abc import Callable

from duequeue import Queue
from duequeue.api import jsonforms
from duequeue.web import pages, queues


def main() -> None:
    parser = argparse.ArgumentParser(prog="benchmarks/serve_cpu.py", description=__doc__)
    parser.add_argument("db")
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    q = Queue(args.db, create=False)
    pid = None
    if args.db.startswith("postgresql"):
        store = q._open()
        conn = store.backend.conn  # type: ignore[attr-defined]
        pid = conn.execute("SELECT pg_backend_pid()").fetchone()[0]
        conn.commit()
    tick = os.sysconf("SC_CLK_TCK")

    def backend() -> float:
        if pid is None:
            return 0.0
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / tick

    def cpu(work: Callable[[], object]) -> tuple[float, float]:
        found = []
        for _ in range(args.repeat + 1):
            b, t = backend(), time.thread_time()
            work()
            found.append((time.thread_time() - t + backend() - b) * 1000)
        return statistics.median(found[1:]), statistics.mean(found[1:])

    cap = queues.COUNT_CAP
    o = cpu(lambda: pages.render_overview(q.overview(cap=cap)))
    s = cpu(lambda: jsonforms.stats(q.stats(cap=cap)))
    print(
        f"cap {cap:,}: overview {o[0]:.1f} ms CPU (mean {o[1]:.1f}), "
        f"/api/v1/stats {s[0]:.1f} ms CPU (mean {s[1]:.1f})"
    )


if __name__ == "__main__":
    main()
