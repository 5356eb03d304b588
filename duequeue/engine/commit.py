"""A tick's committer: its records, resolutions and releases go to the store in few, ordered
commits, and its next claims are made, without the event loop ever waiting on the database.

The order of one commit's writes is the store's (Store.commit, store/commit_sql.py). What this
module adds is batching and where the work runs:

- Items are buffered and handed over as one batch once `max_items` are queued or `window_s`
  after the first, and at the end. One batch is in flight at a time; what comes meanwhile goes
  as the next, larger one. Batches commit in the order they were queued, so a claim is never
  released or written back before the records queued ahead of it.
- The work runs on a `Runner`: a database thread of this process (ThreadRunner), or a helper
  process (helper.py) that runs the very same store calls. A database that is locked past its
  busy timeout, full or unreachable (StoreBusyError) is tried again there until `retry_until`
  (time.monotonic()), which the tick sets short of its leases' end: a write is idempotent, and
  an outcome dropped would be a target sent again. Only then does the batch fail: `failed` says
  so, the tick starts no new delivery, the batch stays queued, and close() tries once more.
- A batch that has not answered within `stall_s` (the database is locked past its busy
  timeout, or the link to it is cut) makes the committer unhealthy (`healthy`, `stalled`): the
  tick starts no new send it may not be able to record. If the batch answers, sends go on.
- `retry_until` is also the committer's deadline: close() waits for a batch that hangs no longer
  than that, then interrupts the store (Store.interrupt) so the tick returns before its leases
  end. What was not committed is counted (`unrecorded`).

A hard crash (SIGKILL, power cut) loses what is buffered: at most one window of outcomes, whose
targets a later tick sends again with the same webhook-id / Message-ID (docs/guarantees.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

from duequeue.errors import StoreBusyError, StoreError
from duequeue.store.store import Store
from duequeue.store.tick_records import (
    Claim,
    Committed,
    DeliveryRecord,
    Fire,
    Resolution,
)

MAX_ITEMS = 256
WINDOW_S = 0.005
# With a helper process (helper.py): each batch costs a pickle, a pipe write, waking the helper
# and a reply, so fewer, larger batches (measured at N=20,000: 5 ms 0.64, 25 ms 0.65, 50 ms 0.67
# of bare aiohttp; the helper's CPU 1.2 s -> 0.6 s). A hard crash loses at most this window's
# outcomes, sent again later with the same webhook-id (docs/guarantees.md).
HELPER_MAX_ITEMS = 1024
HELPER_WINDOW_S = 0.05
_FIRST_PAUSE_S, _LONGEST_PAUSE_S = 0.05, 1.0
_ABANDON_WAIT_S = 2.0

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Batch:
    """What one hand-over commits, in Store.commit's order."""

    records: Sequence[DeliveryRecord]
    resolutions: Sequence[Resolution]
    releases: Sequence[Claim]


@dataclass(frozen=True, slots=True)
class ClaimArgs:
    """Store.claim's arguments."""

    now: int
    limit: int
    max_errors: int
    lease_ms: int
    owner: str


class Runner(Protocol):
    """Where a tick's store calls run: never on the event loop's thread."""

    def commit(self, owner: str, now: int, batch: Batch, until: float) -> asyncio.Future[Committed]:
        """Commit `batch` (trying a busy database again until `until`)."""

    def claim(self, args: ClaimArgs) -> asyncio.Future[list[Fire]]:
        """Make a claim, after the commits handed over before it."""

    def close(self) -> None:
        """Stop, once what was handed over is done."""

    def interrupt(self) -> None:
        """Cut short the store call that hangs, and make later ones fail at once."""


def retrying(work: Callable[[], T], until: float) -> T:
    """Run `work`; while it fails with StoreBusyError, wait and run it again until `until`
    (time.monotonic()). Blocks: only off the event loop, or once nothing is in flight."""
    pause = _FIRST_PAUSE_S
    while True:
        try:
            return work()
        except StoreBusyError:
            if time.monotonic() + pause > until:
                raise
            time.sleep(pause)
            pause = min(pause * 2, _LONGEST_PAUSE_S)


class ThreadRunner:
    """Run a tick's store calls on one database thread of its own, in the order handed over."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._thread = ThreadPoolExecutor(1, thread_name_prefix="duequeue-db")
        self._cut = False

    def commit(self, owner: str, now: int, batch: Batch, until: float) -> asyncio.Future[Committed]:
        store = self._store
        return asyncio.wrap_future(
            self._thread.submit(
                retrying,
                lambda: store.commit(owner, now, batch.records, batch.resolutions, batch.releases),
                until,
            )
        )

    def claim(self, args: ClaimArgs) -> asyncio.Future[list[Fire]]:
        a = args
        return asyncio.wrap_future(
            self._thread.submit(
                self._store.claim, a.now, a.limit, a.max_errors, a.lease_ms, a.owner
            )
        )

    def close(self) -> None:
        # Not waiting for a call interrupt() could not reach: the tick must end in time.
        self._thread.shutdown(wait=not self._cut)

    def interrupt(self) -> None:
        self._cut = True
        self._store.interrupt()


@dataclass(slots=True)
class Tally:
    """What a tick's commits did: resolutions applied (by verdict) and refused, releases."""

    applied: Counter[str] = field(default_factory=Counter)
    # The dead letters the applied resolutions wrote: (reminder id, fire ms, last error), for
    # DUEQUEUE_ALERT (operations/alert.py); empty on a tick that made none.
    dead_letters: list[tuple[int, int, str | None]] = field(default_factory=list)
    skipped: int = 0  # fires coalesced away behind the ones applied
    refused: int = 0  # resolutions whose lease was no longer ours
    released: int = 0

    def add(self, done: Committed) -> None:
        """Count one commit's work."""
        for r in done.applied:
            self.applied[r.verdict] += 1
            if r.dead is not None:
                self.dead_letters.append((r.reminder_id, r.fire_at, r.dead.last_error))
            if r.row is not None:
                # Fires coalesced away behind the one just handled count as skipped too.
                self.skipped += r.row.skipped - (r.verdict == "skipped")
        self.refused += len(done.refused)
        self.released += done.released


class Committer:
    """Buffer one tick's records, resolutions and releases; commit them in order, in batches."""

    def __init__(
        self,
        runner: Runner,
        owner: str,
        now: int,
        retry_until: float,
        *,
        max_items: int = MAX_ITEMS,
        window_s: float = WINDOW_S,
        stall_s: float = float("inf"),
    ) -> None:
        self.runner = runner
        self.tally = Tally()
        self._owner, self._now, self._until = owner, now, retry_until
        self._max_items, self._window_s = max_items, window_s
        self._stall_s = stall_s
        self._stall_timer: asyncio.TimerHandle | None = None
        # Set while a batch has gone unanswered for stall_s, or failed: see healthy.
        self.stalled = asyncio.Event()
        self.unrecorded = 0  # ledger records given up on: their sends may go again later
        self._records: list[DeliveryRecord] = []
        self._resolutions: list[Resolution] = []
        self._releases: list[Claim] = []
        self._timer: asyncio.TimerHandle | None = None
        self._busy: asyncio.Future[Committed] | None = None
        self._busy_batch: Batch | None = None
        self._error: BaseException | None = None

    @property
    def failed(self) -> BaseException | None:
        """Return the error of a batch that could not be committed, if one could not."""
        return self._error

    @property
    def healthy(self) -> bool:
        """Return whether a send started now can expect its outcome recorded: no batch failed,
        and none has waited for the database longer than stall_s."""
        return self._error is None and not self.stalled.is_set()

    @property
    def until(self) -> float:
        """Return the deadline (time.monotonic()) past which no store call is waited for."""
        return self._until

    def record(self, record: DeliveryRecord) -> None:
        """Queue one delivery outcome for the ledger."""
        self._records.append(record)
        self._queued()

    def resolve(self, resolution: Resolution) -> None:
        """Queue a claim's resolution; it commits after every record queued before it."""
        self._resolutions.append(resolution)
        self._queued()

    def release(self, claim: Claim) -> None:
        """Queue a claim's release; it commits after every record queued before it."""
        self._releases.append(claim)
        self._queued()

    async def claim(self, args: ClaimArgs) -> list[Fire]:
        """Claim the next batch, after the batch in flight."""
        return await self.runner.claim(args)

    def use(self, runner: Runner, *, max_items: int, window_s: float) -> None:
        """Hand the batches from the next on to `runner` (which falls back on the current one,
        if it needs one). Only one batch is ever in flight, so they still commit in order."""
        self.runner = runner
        self._max_items, self._window_s = max_items, window_s

    async def close(self) -> None:
        """Commit everything queued, wait for it and stop the runner; raise if it could not be
        committed (what was not stays queued for the caller's last try, see finish())."""
        try:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            while self._busy is not None or (self._pending() and self._error is None):
                if self._busy is None:
                    self._submit()
                busy = self._busy
                assert busy is not None
                left = self._until - time.monotonic()
                await asyncio.wait([busy], timeout=max(0.0, left))
                # (Once done, its callback may already have handed over the next batch.)
                if not busy.done() and busy is self._busy:
                    await self._abandon()
                self._settle()
        finally:
            if self._error is not None:
                self._cancel_stall()
                self.stalled.set()
            self.runner.close()
        if self._error is not None:
            raise self._error

    async def _abandon(self) -> None:
        """The deadline passed with a batch unanswered: cut the store call short, so the tick
        ends before its leases do. The batch counts as not committed (it may have been)."""
        busy = self._busy
        assert busy is not None
        self.runner.interrupt()
        # An interrupted call returns at once; one where no interrupt reaches (opening a
        # connection) ends by the deadline too: the tick bounded every connect by it
        # (Store.bound).
        await asyncio.wait([busy], timeout=_ABANDON_WAIT_S)
        if not busy.done():
            stand_in: asyncio.Future[Committed] = asyncio.get_running_loop().create_future()
            stand_in.set_exception(StoreError("the database did not answer before the deadline"))
            self._busy = stand_in

    def finish(self, store: Store) -> None:
        """Commit what is still queued on `store` itself, once, after a failed close().

        The records go first, on their own, so that a failure of the rest cannot lose them. If
        the rest fails, the claims it would have resolved or released are handed back (the
        ledger now holds what was sent for them, so the next tick sends those targets nothing
        again), and the error is raised.
        """
        records, resolutions, releases = self._records, self._resolutions, self._releases
        self._records, self._resolutions, self._releases = [], [], []
        owner, now = self._owner, self._now
        if records:
            try:
                store.commit(owner, now, records, (), ())
            except BaseException:
                self.unrecorded = len(records)
                raise
        self.unrecorded = 0
        try:
            if resolutions or releases:
                self.tally.add(store.commit(owner, now, (), resolutions, releases))
        except Exception:
            with contextlib.suppress(Exception):
                claims = [r.claim for r in resolutions] + releases
                self.tally.add(store.commit(owner, now, (), (), claims))
            raise
        self._error = None

    def _pending(self) -> bool:
        return bool(self._records or self._resolutions or self._releases)

    def _queued(self) -> None:
        if self._error is not None or self._busy is not None:
            return  # kept for the next batch (or the last try)
        if len(self._records) + len(self._resolutions) + len(self._releases) >= self._max_items:
            self._submit()
        elif self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(self._window_s, self._timed)

    def _timed(self) -> None:
        self._timer = None
        if self._busy is None and self._error is None:
            self._submit()

    def _submit(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if not self._pending():
            return
        batch = Batch(self._records, self._resolutions, self._releases)
        self._records, self._resolutions, self._releases = [], [], []
        self._busy_batch = batch
        self._busy = self.runner.commit(self._owner, self._now, batch, self._until)
        self._busy.add_done_callback(lambda _: self._on_done())
        if self._stall_timer is None and self._stall_s != float("inf"):
            self._stall_timer = asyncio.get_running_loop().call_later(
                self._stall_s, self.stalled.set
            )

    def _cancel_stall(self) -> None:
        if self._stall_timer is not None:
            self._stall_timer.cancel()
            self._stall_timer = None

    def _on_done(self) -> None:
        # On the event loop: take the batch's result, then hand over what came meanwhile.
        if self._busy is not None and self._busy.done():
            self._settle()
            if self._error is None and self._pending():
                self._submit()

    def _settle(self) -> None:
        busy, batch = self._busy, self._busy_batch
        if busy is None or batch is None or not busy.done():
            return
        self._busy, self._busy_batch = None, None
        self._cancel_stall()
        error = busy.exception()
        if error is None:
            self.tally.add(busy.result())
            self.stalled.clear()  # the database answers again: sends may go on
            return
        self.stalled.set()
        # Kept, ahead of what was queued since, for the last try: nothing is dropped.
        self._records = [*batch.records, *self._records]
        self._resolutions = [*batch.resolutions, *self._resolutions]
        self._releases = [*batch.releases, *self._releases]
        self._error = error
