"""Group commit for one tick: ledger rows, write-backs and releases in few transactions.

One transaction per delivery outcome and one per row capped a tick at a few hundred rows a
second; batching them lifts that limit without loosening the core rule, because a flush keeps
the order that rule needs:

1. the buffered delivery outcomes are committed first (`Store.record`);
2. only then the buffered write-backs and releases, each queued after its row's outcomes.

So a row never leaves our lease (written back or released) before the ledger holds what was sent
for it, and a target recorded as sent is never sent again. What batching widens is the window of
a hard crash (SIGKILL, power cut): outcomes still in the buffer are lost with the process, and
those targets are sent again by a later tick, with the same webhook-id / Message-ID. The buffer is
flushed once it holds `max_items` entries, `window_s` after its first entry (later only if the
event loop is busy), and before the tick ends or gives up on an error.

The event loop never waits on the database: a flush hands its batch to the tick's database thread
(`db`, one thread, so batches commit in order and never beside the tick's claims on the same
connection), one batch at a time; what is queued meanwhile waits in the buffer and goes as the next,
larger, batch. A database that is locked past its busy timeout, full or unreachable
(StoreBusyError) is tried again, on that thread, until `retry_until` (time.monotonic()): the tick
sets it short of its leases' end, since a write is idempotent and an outcome dropped would be a
target sent twice. Only then does the batch fail: `failed` says so, the tick starts no new
delivery, what was not committed stays queued in order, and the final `flush()` tries it once more
and raises. `unrecorded()` then names the outcomes the ledger lacks, whose rows the tick must not
release early.

With a commit helper (commithelper.py, for large ticks) an automatic flush hands its batch to the
helper process instead; the write-backs and releases count as done when the helper confirms them.
If the helper fails or dies, the batches it has not confirmed come back into the buffer, in order
and ahead of anything queued since, and the database thread commits everything from then on.
Handing a batch over never waits on the helper: what its pipe does not take is written from the
event loop as the pipe drains, and flush() writes the rest while it waits for the confirmations.
With a helper the buffer is flushed after a longer window (HELPER_WINDOW_S): each batch wakes the
helper and costs a pickle, a pipe write and a reply here, and fewer, larger batches halved the
helper's CPU (which shares its core with whatever else runs) and took 3-5% off a 20,000-row tick.
The tick's claims go through the helper too (`claim`), queued behind the batches handed before
them, so each finds the rows of those batches already written back.
"""

import asyncio
import contextlib
import time
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

from duequeue.errors import StoreBusyError
from duequeue.store.base import DeliveryRecord, Store, WriteBack

if TYPE_CHECKING:
    from duequeue.engine.commithelper import Batch, ClaimReply, CommitHelper, Reply
    from duequeue.store.base import Claimed

MAX_ITEMS = 256
WINDOW_S = 0.005
# With a helper: measured at N=20,000 (same-run A/B, 4 rounds): 5 ms 0.64, 25 ms 0.65, 50 ms 0.67
# of bare aiohttp; the helper's CPU 1.2 s -> 0.6 s. A hard crash loses at most this window's
# outcomes, and those targets are sent again with the same webhook-id (see the module docstring).
HELPER_WINDOW_S = 0.05
HELPER_MAX_ITEMS = 1024
# How far a batch got (as the helper's replies say it, commithelper.py).
NOTHING, RECORDED, WRITTEN, COMPLETE = 0, 1, 2, 3
_FIRST_PAUSE_S, _LONGEST_PAUSE_S = 0.05, 1.0

T = TypeVar("T")


def retrying(work: Callable[[], T], until: float) -> T:
    """Run `work`; while it fails with StoreBusyError, wait and run it again until `until`
    (time.monotonic()). Blocks: only for the database thread, or once nothing is in flight."""
    pause = _FIRST_PAUSE_S
    while True:
        try:
            return work()
        except StoreBusyError:
            if time.monotonic() + pause > until:
                raise
            time.sleep(pause)
            pause = min(pause * 2, _LONGEST_PAUSE_S)


@dataclass(slots=True)
class _Work:
    """One batch on its way through the database thread."""

    records: list[DeliveryRecord]
    writes: list[WriteBack]
    releases: list[int]
    done: int = NOTHING
    applied: int = 0
    error: BaseException | None = None
    future: "Future[None] | None" = field(default=None, repr=False)


def _leftover(work: _Work) -> _Work:
    """Return what `work` did not commit, to be committed later."""
    return _Work(
        [] if work.done >= RECORDED else work.records,
        [] if work.done >= WRITTEN else work.writes,
        work.releases,
    )


class GroupCommit:
    """Buffer one tick's ledger rows, write-backs and releases; commit them in order."""

    def __init__(
        self,
        store: Store,
        owner: str,
        now: int,
        *,
        on_written: Callable[[Sequence[WriteBack], int], None],
        on_released: Callable[[Sequence[int]], None],
        max_items: int = MAX_ITEMS,
        window_s: float = WINDOW_S,
        helper: "CommitHelper | None" = None,
        db: ThreadPoolExecutor | None = None,
        retry_until: float = 0.0,
        on_late_claim: "Callable[[Sequence[Claimed]], None] | None" = None,
        helper_window_s: float = HELPER_WINDOW_S,
        helper_max_items: int = HELPER_MAX_ITEMS,
    ) -> None:
        self._store, self._owner, self._now = store, owner, now
        self._on_written, self._on_released = on_written, on_released
        self._max_items, self._window_s = max_items, window_s
        self._helper_max_items, self._helper_window_s = helper_max_items, helper_window_s
        self._records: list[DeliveryRecord] = []
        self._writes: list[WriteBack] = []
        self._releases: list[int] = []
        self._timer: asyncio.TimerHandle | None = None
        self._error: BaseException | None = None
        # The tick passes its database thread, which its claims share; a group commit used on
        # its own (tests) gets one of its own, which ends with the interpreter.
        self._db = db or ThreadPoolExecutor(1, thread_name_prefix="duequeue-db")
        self._retry_until = retry_until
        self._loop: asyncio.AbstractEventLoop | None = None
        self._busy: _Work | None = None  # the batch on the database thread
        self._returned: list[_Work] = []  # what a failed batch left uncommitted, in order
        self._helper = helper
        self._joining: CommitHelper | None = None  # a helper to take over after the busy batch
        self._handed: deque[Batch] = deque()  # given to the helper, not confirmed yet
        self._seq = 0
        self._watching: asyncio.AbstractEventLoop | None = None  # loop watching for replies
        self._draining = False  # whether that loop also writes the helper's unsent bytes
        # Claims asked of the helper and not answered yet, in order (see claim()).
        self._claims: deque[asyncio.Future[list[Claimed]]] = deque()
        self._on_late_claim = on_late_claim

    def record(self, record: DeliveryRecord) -> None:
        """Queue one delivery outcome for the ledger."""
        self._records.append(record)
        self._queued()

    def write_back(self, item: WriteBack) -> None:
        """Queue a row's write-back; it commits after every outcome queued before it."""
        self._writes.append(item)
        self._queued()

    def release(self, reminder_id: int) -> None:
        """Queue a row's release; it commits after every outcome queued before it."""
        self._releases.append(reminder_id)
        self._queued()

    def attach(self, helper: "CommitHelper") -> None:
        """Hand later batches to `helper`, once the batch on the database thread is done (the
        order of commits must not change); a group commit that failed keeps committing here."""
        if self._helper is not None or self._error is not None:
            helper.close()
            return
        self._joining = helper
        self._join()

    def _join(self) -> None:
        if self._joining is not None and self._busy is None:
            self._helper, self._joining = self._joining, None

    def claim(
        self, now: int, limit: int, max_errors: int, lease_ms: int, owner: str
    ) -> "asyncio.Future[list[Claimed]] | None":
        """Have the helper claim the next batch (Store.claim_due's arguments) after the batches
        handed to it so far; None when there is no helper to ask (the caller claims itself).

        The future fails with HelperGone if the helper goes before answering (the rows it may
        have leased come back when the lease runs out), and with StoreError if the claim failed.
        If the caller stops waiting (cancels it), the rows are released with the next commit
        and given to `on_late_claim` (to be counted).
        """
        from duequeue.engine.commithelper import HelperGone

        self._join()
        if self._helper is None or self._error is not None:
            return None
        try:
            self._helper.claim(now, limit, max_errors, lease_ms, owner)
        except HelperGone:
            self._drop_helper()
            if self._records or self._writes or self._releases:
                self._auto_flush()
            return None
        loop = asyncio.get_running_loop()
        future: asyncio.Future[list[Claimed]] = loop.create_future()
        self._claims.append(future)
        self._watch(loop)
        return future

    @property
    def failed(self) -> BaseException | None:
        """Return the error of a failed automatic flush, if one failed."""
        return self._error

    def unrecorded(self) -> list[DeliveryRecord]:
        """Return the outcomes queued or handed over that the ledger may not hold yet."""
        busy = [self._busy] if self._busy is not None and self._busy.done < RECORDED else []
        return [
            *(r for w in (*self._returned, *busy) for r in w.records),
            *(r for b in self._handed for r in b.records),
            *self._records,
        ]

    def flush(self) -> None:
        """Commit everything queued: outcomes first, then write-backs and releases.

        Blocks until done: for the end of a tick, when nothing is in flight any more. With a
        helper, hand it the rest, wait for its confirmations and stop it; whatever it did not
        commit is committed here. A failure leaves the uncommitted part queued, so a later
        flush can try it again.
        """
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._joining is not None and self._busy is not None:
            self._joining.close()  # never took a batch: the rest is committed here
            self._joining = None
        self._join()
        if self._helper is not None and (self._records or self._writes or self._releases):
            self._hand_over(watch=False)
        self._stop_helper()
        busy = self._busy
        if busy is not None:
            assert busy.future is not None
            busy.future.result()  # _commit never raises: the batch keeps its error
            self._settle(busy, resubmit=False)
        returned, self._returned = self._returned, []
        work = _Work(
            [r for w in returned for r in w.records] + self._records,
            [wb for w in returned for wb in w.writes] + self._writes,
            [i for w in returned for i in w.releases] + self._releases,
        )
        self._records, self._writes, self._releases = [], [], []
        self._commit(work)
        self._report(work)
        if work.done < COMPLETE:
            self._returned = [_leftover(work)]
            assert work.error is not None
            raise work.error
        self._error = None

    def _commit(self, work: _Work) -> None:
        """Commit `work` as far as it goes, in order, trying a busy database again; never
        raises (the error stays on `work`)."""
        store, until = self._store, self._retry_until
        try:
            if work.done < RECORDED:
                if work.records:
                    retrying(lambda: store.record(work.records), until)
                work.done = RECORDED
            if work.done < WRITTEN:
                if work.writes:
                    work.applied = retrying(
                        lambda: store.write_back(self._owner, self._now, work.writes), until
                    )
                work.done = WRITTEN
            if work.releases:
                retrying(lambda: store.release(self._owner, work.releases, self._now), until)
            work.done = COMPLETE
        except BaseException as exc:
            work.error = exc

    def _report(self, work: _Work) -> None:
        """Run the callbacks of what `work` committed."""
        if work.done >= WRITTEN and work.writes:
            self._on_written(work.writes, work.applied)
        if work.done >= COMPLETE and work.releases:
            self._on_released(work.releases)

    def _queued(self) -> None:
        if self._error is not None:
            return  # keep what comes for the final flush; the tick starts nothing new
        helped = self._helper is not None
        most = self._helper_max_items if helped else self._max_items
        if len(self._records) + len(self._writes) + len(self._releases) >= most:
            self._auto_flush()
        elif self._timer is None:
            window = self._helper_window_s if helped else self._window_s
            self._timer = asyncio.get_running_loop().call_later(window, self._timed)

    def _timed(self) -> None:
        self._timer = None
        if self._error is None:
            self._auto_flush()

    def _auto_flush(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._join()
        if self._helper is not None and self._hand_over(watch=True):
            return
        if self._busy is None:
            self._submit()
        # Else the batch on the thread takes the buffer with it when it is done (_settle).

    def _submit(self) -> None:
        """Hand the buffer to the database thread as one batch."""
        if not (self._records or self._writes or self._releases):
            return
        self._loop = asyncio.get_running_loop()
        work = _Work(self._records, self._writes, self._releases)
        self._records, self._writes, self._releases = [], [], []
        self._busy = work
        work.future = self._db.submit(self._commit, work)
        work.future.add_done_callback(lambda _: self._wake(work))

    def _wake(self, work: _Work) -> None:
        # On the database thread: let the loop take the result.
        assert self._loop is not None
        with contextlib.suppress(RuntimeError):  # a loop already closed: flush() settles it
            self._loop.call_soon_threadsafe(self._settle, work)

    def _settle(self, work: _Work, *, resubmit: bool = True) -> None:
        """Take a batch back from the database thread (once: flush() may have taken it) and,
        with `resubmit`, hand it what was queued meanwhile."""
        if self._busy is not work:
            return
        self._busy = None
        self._report(work)
        if work.done < COMPLETE:
            self._returned.append(_leftover(work))
            self._error = work.error
            if self._joining is not None:
                self._joining.close()
                self._joining = None
            return
        if resubmit and self._error is None:
            self._join()  # a helper waiting for this batch to be done takes over now
            if self._records or self._writes or self._releases:
                self._auto_flush()

    # -- the helper -------------------------------------------------------------------------

    def _hand_over(self, *, watch: bool) -> bool:
        """Give the buffer to the helper as one batch; False if the helper is gone. With
        `watch`, have the running event loop take its replies as they come."""
        from duequeue.engine.commithelper import Batch, HelperGone

        assert self._helper is not None
        self._seq += 1
        batch = Batch(self._seq, self._records, self._writes, self._releases)
        self._records, self._writes, self._releases = [], [], []
        self._handed.append(batch)
        try:
            self._helper.submit(batch, self._owner, self._now)
        except HelperGone:
            self._drop_helper()
            return False
        if watch:
            self._watch(asyncio.get_running_loop())
        elif self._watching is not None:
            self._drain_unsent()
        return True

    def _watch(self, loop: asyncio.AbstractEventLoop) -> None:
        """Have `loop` take the helper's replies as they come, and write what the pipe has not
        taken yet as it drains."""
        assert self._helper is not None
        if self._watching is None:
            loop.add_reader(self._helper.fileno(), self._on_replies)
            self._watching = loop
        self._drain_unsent()

    def _drain_unsent(self) -> None:
        assert self._helper is not None and self._watching is not None
        if self._helper.unsent and not self._draining:
            # What the pipe did not take goes out as the helper reads (commithelper.py: the
            # tick never waits on this pipe, so it can always read the replies meanwhile).
            self._watching.add_writer(self._helper.out_fileno(), self._on_writable)
            self._draining = True

    def _on_writable(self) -> None:
        from duequeue.engine.commithelper import HelperGone

        assert self._helper is not None and self._watching is not None
        try:
            self._helper.push()
        except HelperGone:
            self._drop_helper()  # as in _on_replies: commit what it did not confirm here
            if self._error is None:
                self._auto_flush()
            return
        if not self._helper.unsent:
            self._watching.remove_writer(self._helper.out_fileno())
            self._draining = False

    def _on_replies(self) -> None:
        from duequeue.engine.commithelper import HelperGone

        assert self._helper is not None
        try:
            replies = self._helper.replies(block=False)
        except HelperGone:
            replies = None
        for reply in replies or ():
            if not self._take_reply(reply):
                break
        if self._helper is None or replies is None:
            # It failed or died: what it did not commit is back in the buffer; commit it here
            # now, so that a store that still works loses no time, and one that does not stops
            # the tick from starting new deliveries.
            self._drop_helper()
            if self._error is None:
                self._auto_flush()

    def _take_reply(self, reply: "Reply | ClaimReply") -> bool:
        """Take one reply of either kind; False if the helper failed."""
        from duequeue.engine.commithelper import ClaimReply

        if isinstance(reply, ClaimReply):
            return self._claimed(reply)
        return self._confirmed(reply)

    def _claimed(self, reply: "ClaimReply") -> bool:
        """Hand a claim's rows (or its error) to whoever asked; False if none asked."""
        from duequeue.errors import StoreError

        if not self._claims:
            self._drop_helper(kill=True)  # an answer to no question: trust none of it
            return False
        future = self._claims.popleft()
        if future.done():
            # The tick stopped waiting (cancelled): hand the rows back with the next commit,
            # rather than leave them leased to a tick that is ending.
            if reply.rows:
                self._releases.extend(row.unit for row in reply.rows)
                if self._on_late_claim is not None:
                    self._on_late_claim(reply.rows)
            return True
        if reply.error is not None:
            future.set_exception(StoreError(reply.error))
        else:
            future.set_result(reply.rows)
        return True

    def _confirmed(self, reply: "Reply") -> bool:
        """Take one reply: run the callbacks of what it confirms; False if the helper failed."""
        from duequeue.engine.commithelper import COMPLETE, RECORDED, WRITTEN, Batch

        if not self._handed or self._handed[0].seq != reply.seq:
            # Not the batch it should be answering: trust none of it, and stop it at once.
            self._drop_helper(kill=True)
            return False
        batch = self._handed.popleft()
        if reply.done >= WRITTEN and batch.writes:
            self._on_written(batch.writes, reply.applied)
        if reply.done >= COMPLETE:
            if batch.releases:
                self._on_released(batch.releases)
            return True
        # It stopped part-way: give back the parts it did not commit, ahead of the batches
        # handed after this one (which it did not touch).
        self._handed.appendleft(
            Batch(
                batch.seq,
                [] if reply.done >= RECORDED else batch.records,
                [] if reply.done >= WRITTEN else batch.writes,
                batch.releases,
            )
        )
        self._drop_helper()
        return False

    def _stop_helper(self) -> None:
        """Wait for the helper's confirmations, then stop it (what it did not commit is taken
        back into the buffer)."""
        from duequeue.engine.commithelper import HelperGone

        self._unwatch()
        try:
            while self._helper is not None and (self._handed or self._claims):
                for reply in self._helper.replies(block=True):
                    if not self._take_reply(reply):
                        break
        except HelperGone:
            pass
        self._drop_helper()

    def _drop_helper(self, *, kill: bool = False) -> None:
        """Stop using the helper; put every unconfirmed batch back into the buffer, in order."""
        from duequeue.engine.commithelper import HelperGone

        self._unwatch()
        helper, self._helper = self._helper, None
        if helper is not None:
            helper.close(kill=kill)
        claims, self._claims = list(self._claims), deque()
        for future in claims:
            if not future.done():
                with contextlib.suppress(RuntimeError):  # its loop is closed: no one waits
                    future.set_exception(HelperGone("commit helper gone before its claim"))
        handed, self._handed = list(self._handed), deque()
        if handed:
            self._records = [r for b in handed for r in b.records] + self._records
            self._writes = [w for b in handed for w in b.writes] + self._writes
            self._releases = [i for b in handed for i in b.releases] + self._releases

    def _unwatch(self) -> None:
        loop, self._watching = self._watching, None
        draining, self._draining = self._draining, False
        if loop is not None and self._helper is not None:
            with contextlib.suppress(Exception):  # a loop already closed has nothing to remove
                loop.remove_reader(self._helper.fileno())
                if draining:
                    loop.remove_writer(self._helper.out_fileno())
