"""Per-endpoint bounds of a tick's webhook workers: at most N requests in flight to one host:port.

A receiver built on a small server (Python's http.server: a listen backlog of 5, a thread per
request) drops the SYNs of dozens of connections opened at once, and each dropped one waits out
the kernel's retransmits until the attempt times out. So the tick's workers take at most
`per_endpoint` jobs of one endpoint at a time. A job whose endpoint is full is parked beside the
queue rather than awaited: the worker moves on to the next job, so one slow host never holds
every worker while other hosts wait (aiohttp's own `limit_per_host` would queue inside the
request, with its timeout running and the worker blocked). The wait for a slot is therefore never
counted against a target's timeout either: the attempt starts once the slot is taken.
"""

from collections import deque
from typing import Generic, TypeVar

Job = TypeVar("Job")


class EndpointSlots(Generic[Job]):
    """Count the jobs in flight per endpoint and park the ones that find theirs full.

    The invariant that keeps every parked job reachable: an endpoint has parked jobs only while
    all of its `limit` slots are taken, and a worker finishing a job there hands its slot to the
    next parked job (`done`) instead of freeing it. So when the shared queue runs dry, a worker
    may stop: whatever is parked will be taken by the workers still busy on that endpoint.
    """

    __slots__ = ("_busy", "_limit", "_parked")

    def __init__(self, limit: int) -> None:
        if limit < 1:
            raise ValueError("a per-endpoint limit must be at least 1")
        self._limit = limit
        self._busy: dict[str, int] = {}
        self._parked: dict[str, deque[Job]] = {}

    def take(self, key: str, job: Job) -> bool:
        """Take a slot of `key` for `job` (True), or park the job for later (False)."""
        busy = self._busy.get(key, 0)
        if busy < self._limit:
            self._busy[key] = busy + 1
            return True
        parked = self._parked.get(key)
        if parked is None:
            parked = self._parked[key] = deque()
        parked.append(job)
        return False

    def done(self, key: str) -> Job | None:
        """End a job of `key`: return the next parked job, which inherits its slot, or free it."""
        parked = self._parked.get(key)
        if parked:
            job = parked.popleft()
            if not parked:
                del self._parked[key]
            return job
        busy = self._busy[key] - 1
        if busy:
            self._busy[key] = busy
        else:
            del self._busy[key]
        return None

    def in_flight(self, key: str) -> int:
        """Return how many jobs of `key` hold a slot."""
        return self._busy.get(key, 0)

    def parked(self) -> int:
        """Return how many jobs wait for a slot, over every endpoint."""
        return sum(len(q) for q in self._parked.values())
