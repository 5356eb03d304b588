"""The Queues a server calls: one per database thread, off the event loop.

A Queue holds one connection and is used from one thread at a time, so each thread of a small
pool has its own. Each call is one Queue method, so one transaction: a page holds no lock between
its reads, and a tick's write never waits on more than one action's transaction.
"""

import asyncio
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from duequeue.api.queue import Queue

T = TypeVar("T")

# Where the overview's and /api/v1/stats' counts stop (Queue.stats' cap; dead letters, leased
# rows and each hour of the due chart at a tenth): each count walks a bounded part of an index,
# so a page view costs about the same at 10^6 rows as at 10^5; a count that reached it is shown
# as "30,000+" ("lower_bounds" in JSON). /metrics stays exact. Tests lower it. 30,000 keeps the
# overview under 100 ms at 10^6 on PostgreSQL too, where an index entry costs about three times
# SQLite's (BENCHMARKS.md, "the overview within 100 ms").
COUNT_CAP = 30_000


class Queues:
    """A pool of threads, each with its own Queue made by `make`."""

    def __init__(self, make: Callable[[], Queue], threads: int = 4) -> None:
        self._make = make
        self._local = threading.local()
        self._opened: list[Queue] = []
        self._lock = threading.Lock()
        self._pool = ThreadPoolExecutor(threads, thread_name_prefix="duequeue-db")

    async def call(self, work: Callable[[Queue], T]) -> T:
        """Run `work` with this thread's Queue on a database thread; return its result."""
        return await asyncio.get_running_loop().run_in_executor(self._pool, self._run, work)

    def _run(self, work: Callable[[Queue], T]) -> T:
        q: Queue | None = getattr(self._local, "queue", None)
        if q is None:
            q = self._local.queue = self._make()
            with self._lock:
                self._opened.append(q)
        return work(q)

    def close(self) -> None:
        """Wait for the calls under way, then close every Queue."""
        self._pool.shutdown(wait=True)
        with self._lock:
            for q in self._opened:
                q.close()
            self._opened.clear()
