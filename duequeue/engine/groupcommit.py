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

A flush that fails is not raised into the delivery that queued the item (that would cancel the
sends in flight, whose outcomes then could not be recorded): `failed` says so, the tick starts no
new delivery, and its final `flush()` raises.

With a commit helper (commithelper.py, for large ticks) an automatic flush hands its batch to the
helper process instead of committing it on the event loop's thread; the write-backs and releases
count as done when the helper confirms them. If the helper fails or dies, the batches it has not
confirmed come back into the buffer, in order and ahead of anything queued since, and everything
is committed here from then on. Handing a batch over never waits on the helper: what its pipe
does not take is written from the event loop as the pipe drains, and flush() writes the rest
while it waits for the confirmations.
"""

import asyncio
import contextlib
from collections import deque
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from duequeue.store.base import DeliveryRecord, Store, WriteBack

if TYPE_CHECKING:
    from duequeue.engine.commithelper import Batch, CommitHelper, Reply

MAX_ITEMS = 256
WINDOW_S = 0.005


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
    ) -> None:
        self._store, self._owner, self._now = store, owner, now
        self._on_written, self._on_released = on_written, on_released
        self._max_items, self._window_s = max_items, window_s
        self._records: list[DeliveryRecord] = []
        self._writes: list[WriteBack] = []
        self._releases: list[int] = []
        self._timer: asyncio.TimerHandle | None = None
        self._error: BaseException | None = None
        self._helper = helper
        self._handed: deque[Batch] = deque()  # given to the helper, not confirmed yet
        self._seq = 0
        self._watching: asyncio.AbstractEventLoop | None = None  # loop watching for replies
        self._draining = False  # whether that loop also writes the helper's unsent bytes

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

    @property
    def failed(self) -> BaseException | None:
        """Return the error of a failed automatic flush, if one failed."""
        return self._error

    def flush(self) -> None:
        """Commit everything queued: outcomes first, then write-backs and releases.

        With a helper, hand it the rest, wait for its confirmations and stop it; whatever it did
        not commit is committed here. A failure leaves the uncommitted part queued, so a later
        flush can try it again.
        """
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._helper is not None and (self._records or self._writes or self._releases):
            self._hand_over(watch=False)
        self._stop_helper()
        self._commit_here()

    def _commit_here(self) -> None:
        if self._records:
            self._store.record(self._records)
            self._records = []
        if self._writes:
            writes, self._writes = self._writes, []
            try:
                applied = self._store.write_back(self._owner, self._now, writes)
            except BaseException:
                self._writes = writes + self._writes
                raise
            self._on_written(writes, applied)
        if self._releases:
            ids, self._releases = self._releases, []
            try:
                self._store.release(self._owner, ids, self._now)
            except BaseException:
                self._releases = ids + self._releases
                raise
            self._on_released(ids)

    def _queued(self) -> None:
        if self._error is not None:
            return  # keep what comes for the final flush; the tick starts nothing new
        if len(self._records) + len(self._writes) + len(self._releases) >= self._max_items:
            self._auto_flush()
        elif self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(self._window_s, self._timed)

    def _timed(self) -> None:
        self._timer = None
        if self._error is None:
            self._auto_flush()

    def _auto_flush(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._helper is not None and self._hand_over(watch=True):
            return
        try:
            self._commit_here()
        except Exception as exc:
            self._error = exc

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
        if watch and self._watching is None:
            loop = asyncio.get_running_loop()
            loop.add_reader(self._helper.fileno(), self._on_replies)
            self._watching = loop
        if self._watching is not None and self._helper.unsent and not self._draining:
            # What the pipe did not take goes out as the helper reads (commithelper.py: the
            # tick never waits on this pipe, so it can always read the replies meanwhile).
            self._watching.add_writer(self._helper.out_fileno(), self._on_writable)
            self._draining = True
        return True

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
            if not self._confirmed(reply):
                break
        if self._helper is None or replies is None:
            # It failed or died: what it did not commit is back in the buffer; commit it here
            # now, so that a store that still works loses no time, and one that does not stops
            # the tick from starting new deliveries.
            self._drop_helper()
            if self._error is None:
                self._auto_flush()

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
            while self._helper is not None and self._handed:
                for reply in self._helper.replies(block=True):
                    if not self._confirmed(reply):
                        break
        except HelperGone:
            pass
        self._drop_helper()

    def _drop_helper(self, *, kill: bool = False) -> None:
        """Stop using the helper; put every unconfirmed batch back into the buffer, in order."""
        self._unwatch()
        helper, self._helper = self._helper, None
        if helper is not None:
            helper.close(kill=kill)
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
