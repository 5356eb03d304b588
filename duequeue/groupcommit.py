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
"""

import asyncio
from collections.abc import Callable, Sequence

from duequeue.store.base import DeliveryRecord, Store, WriteBack

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
    ) -> None:
        self._store, self._owner, self._now = store, owner, now
        self._on_written, self._on_released = on_written, on_released
        self._max_items, self._window_s = max_items, window_s
        self._records: list[DeliveryRecord] = []
        self._writes: list[WriteBack] = []
        self._releases: list[int] = []
        self._timer: asyncio.TimerHandle | None = None
        self._error: BaseException | None = None

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

        A failure leaves the uncommitted part queued, so a later flush can try it again.
        """
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
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
        try:
            self.flush()
        except Exception as exc:
            self._error = exc
