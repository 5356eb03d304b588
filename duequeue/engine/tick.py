"""One tick: claim due rows, deliver their targets concurrently, record, write back.

The order of effects is what keeps the core rule (a target never gets one fire twice): a row is
leased before anything is sent; each target's outcome goes into the ledger before the row is
written back or released (groupcommit.py commits them in that order); a target the ledger
already has as `sent` for the fire is skipped; and the row is written back only while the lease
is still ours. A hard stop between a send and the commit of its ledger row is the one window
where a target can be sent again; the stable webhook-id / Message-ID lets the receiver drop
that copy.
"""

from __future__ import annotations

import contextlib
import gc
import uuid
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from duequeue.engine import writeback
from duequeue.errors import StoreBusyError, StoreError
from duequeue.policy import RetryPolicy, Verdict
from duequeue.store.base import Claimed, DeliveryRecord, Store, WriteBack
from duequeue.timefmt import from_ms

if TYPE_CHECKING:
    import asyncio
    import signal
    from collections import deque
    from concurrent.futures import ThreadPoolExecutor

    # Imported where rows are delivered: a tick with nothing due must not pay for them.
    from duequeue.channels.base import Outcome
    from duequeue.engine.endpoints import EndpointSlots


@dataclass(frozen=True, slots=True)
class HelperOptions:
    """How a tick's commit helper (commithelper.py) opens the tick's store, and after how many
    claimed rows a tick starts one (DUEQUEUE_COMMIT_HELPER_ROWS).

    Until then the tick commits on its database thread. The helper takes about 55 ms to start
    and 65 ms of CPU, and its batches cost pickling; what it saves grows with the rows (every
    row committed on the thread costs the event loop GIL hand-overs). A tick that has claimed
    1,000 rows is draining a backlog: a 20,000-row drain at --limit 100 took 3.7-4.7 s with the
    helper from 1,000 rows, 4.0-4.8 s from 5,000. A machine with one core never starts one
    (spare_core).
    """

    db: str  # open_store's arguments: a path or a postgresql:// URL, and the busy timeout
    busy_timeout_s: float = 5.0
    min_rows: int = 1000


@dataclass(frozen=True, slots=True)
class TickOptions:
    """What bounds one tick."""

    limit: int = 100
    lease_ms: int = 325_000  # config.Settings.lease_ms with the default settings
    budget_s: float = 50.0
    policy: RetryPolicy = field(default_factory=RetryPolicy)
    webhook_concurrency: int = 64
    # Webhooks in flight to one host:port at once (endpoints.py); config.Settings.webhook_per_host.
    webhook_per_host: int = 16
    channel_timeout: float = 10.0
    smtp_url: str | None = None
    email_from: str | None = None
    webhook_secret: str | None = None
    webhook_block_private: bool = False
    notify_data: bool = False  # config.Settings.notify_data
    # None: commit in-process whatever the batch size (a store that cannot be reopened by
    # open_store, such as a test's instrumented one, must not have its writes moved elsewhere).
    commit_helper: HelperOptions | None = None
    # How long one store call may wait on a lock (DUEQUEUE_BUSY_TIMEOUT): commits that find the
    # database busy are tried again until this much before the leases end (groupcommit.py).
    busy_timeout_s: float = 5.0


@dataclass(slots=True)
class TickSummary:
    """What one tick did; rows are counted by how their fire ended."""

    claimed: int = 0  # rows, and per-target retries (counted again in target_retries)
    batches: int = 0  # claims that took rows: at most --limit rows and --limit retries each
    target_retries: int = 0  # failed targets of an earlier partial success, tried on their own
    sent: int = 0  # rows whose fire reached every target
    partial: int = 0  # rows whose fire reached some targets; advanced, failures noted
    retried: int = 0  # rows backing off after a full failure
    dead: int = 0  # fires dead-lettered
    skipped: int = 0  # fires passed over: missed-tick backlog or later than the misfire grace
    released: int = 0  # rows left unfinished at the time budget, for the next tick
    deliveries_sent: int = 0
    deliveries_failed: int = 0
    max_lateness_ms: int | None = None
    errors: list[str] = field(default_factory=list)  # rows the tick could not handle
    stopped_by: str | None = None  # SIGTERM / SIGINT that cut the tick short, see stopsignal

    def as_json(self) -> dict[str, Any]:
        """Return the stable JSON form of the summary."""
        data = asdict(self)
        lateness = data.pop("max_lateness_ms")
        errors, stopped_by = data.pop("errors"), data.pop("stopped_by")
        data["max_lateness_s"] = None if lateness is None else round(lateness / 1000, 3)
        data["errors"], data["stopped_by"] = errors, stopped_by
        return data

    def line(self) -> str:
        """Return the one-line text form of the summary."""
        lateness = "-" if self.max_lateness_ms is None else f"{self.max_lateness_ms / 1000:.1f}s"
        return (
            f"claimed {self.claimed}"
            + (f" ({self.target_retries} target retries)" if self.target_retries else "")
            + (f" in {self.batches} batches" if self.batches > 1 else "")
            + f": sent {self.sent}, partial {self.partial}, "
            f"retried {self.retried}, dead {self.dead}, skipped {self.skipped}, "
            f"released {self.released}; deliveries {self.deliveries_sent} sent, "
            f"{self.deliveries_failed} failed; max lateness {lateness}"
            + "".join(f"; error: {e}" for e in self.errors)
            + (f"; stopped by {self.stopped_by}" if self.stopped_by else "")
        )


def tick(
    store: Store, now: int, options: TickOptions, clock: Callable[[], int], owner: str | None = None
) -> TickSummary:
    """Run one tick at instant `now` (ms); `clock` stamps ledger rows with the real send time."""
    owner = owner or uuid.uuid4().hex
    # A tick of thousands of rows keeps tens of thousands of rows, tasks and futures alive at
    # once, and the default thresholds then run full collections over all of them again and
    # again: about a fifth of the tick's CPU at 20,000 rows, and a quarter of the claim's. Collect
    # rarely instead (cycles are still freed), and leave what exists now (modules) out of it.
    # Both calls cost microseconds, so the empty tick does not mind them.
    thresholds = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(50_000, 20, 20)
    try:
        return _tick(store, now, options, clock, owner)
    finally:
        gc.set_threshold(*thresholds)
        gc.unfreeze()


def _tick(
    store: Store, now: int, options: TickOptions, clock: Callable[[], int], owner: str
) -> TickSummary:
    # The first claim runs here, before any thread or event loop: the tick with nothing due (the
    # common case, every minute) stays free of asyncio, threads, aiohttp and smtplib.
    claimed = store.claim_due(
        now, options.limit, options.policy.max_errors, options.lease_ms, owner
    )
    summary = TickSummary()
    if not claimed:
        return summary
    import asyncio
    import time
    from concurrent.futures import ThreadPoolExecutor

    # Store calls that may wait from here on run on this one thread (or in the commit helper,
    # see _claim), so no database wait (a lock held by another writer, a slow disk) ever stalls
    # a delivery or its timeout.
    db = ThreadPoolExecutor(1, thread_name_prefix="duequeue-db")
    # A commit that finds the database busy is tried again until shortly before the leases end:
    # past that another tick may take the rows, so an outcome kept any longer is of no use.
    margin_ms = round((options.busy_timeout_s + 5) * 1000)
    retry_until = time.monotonic() + (now + options.lease_ms - margin_ms - clock()) / 1000
    run = _Run(store, now, options, clock, owner, summary, db, retry_until)
    try:
        asyncio.run(run.deliver(claimed))
    except BaseException as exc:
        # Whatever stopped us (a store error, a second stop signal): first commit the outcomes
        # already known, so no target that got its fire is sent it again, then hand back the
        # unfinished rows now rather than leaving them leased, except a row with a send the
        # ledger could not take: it stays leased, so no tick sends that target again before
        # the lease ends.
        with contextlib.suppress(Exception):
            run.commit.flush()
        held = {r.reminder_id for r in run.commit.unrecorded()}
        unfinished = [u for u, rid in run.open.items() if rid not in held]
        with contextlib.suppress(Exception):
            store.release(owner, unfinished, now)
        if isinstance(exc, asyncio.CancelledError) and summary.stopped_by:
            summary.released += len(unfinished)  # a second stop signal: see _Run._stop
            return summary
        raise
    finally:
        db.shutdown(wait=True)
    return summary


class _Fire:
    """One claimed row's fire while its targets are tried: the outcomes as they come in."""

    __slots__ = ("cut", "data", "fire_at", "last_at", "left", "outcomes", "row")

    def __init__(self, row: Claimed, fire_at: datetime, data: Any) -> None:
        self.row, self.fire_at, self.data = row, fire_at, data
        self.outcomes: list[Outcome | None] = [None] * len(row.targets)
        self.left = len(row.targets)  # targets still to resolve
        self.cut = False  # some target was not tried: out of time, stopped, or the store failed
        self.last_at = 0  # when this tick's last attempt of the fire ended (its ledger `at`)


# A target of a fire, waiting in its channel's queue: (the fire, the target's index).
_Job = tuple[_Fire, int]


class _Run:
    """The delivering half of one tick."""

    def __init__(
        self,
        store: Store,
        now: int,
        options: TickOptions,
        clock: Callable[[], int],
        owner: str,
        summary: TickSummary,
        db: ThreadPoolExecutor,
        retry_until: float,
    ) -> None:
        from duequeue.engine.groupcommit import GroupCommit

        self.store, self.now, self.options, self.clock = store, now, options, clock
        self.owner, self.summary, self.db = owner, summary, db
        # Claimed units (row id, or a target retry's negative id) not yet written back or
        # released, and their reminder: what an interrupted tick hands back. Bounded by the
        # claims in flight, not by the tick's total.
        self.open: dict[int, int] = {}
        self.counters: dict[int, str] = {}  # row id -> summary counter its write-back adds to
        self.broken: set[int] = set()  # rows an unexpected error made the tick hand back
        self.task: asyncio.Task[Any] | None = None
        self.commit = GroupCommit(
            store,
            owner,
            now,
            on_written=self._written,
            on_released=self._released,
            db=db,
            retry_until=retry_until,
            on_late_claim=self._late_claim,
        )
        self.queues: dict[str, deque[_Job]] = {}
        self.pending = 0  # targets queued or parked, not yet taken by a send
        # The next claim is made when fewer targets than this wait: enough that the webhook
        # workers still have batches queued while a claim waits behind a commit on the database
        # thread (one batch was not: the workers ran dry waiting for each claim). Measured at
        # --limit 100, 20,000 rows: 1 batch + the pool 4.6-5.5 s, 3 batches 4.2-4.5 s, 6 the same.
        self.low_water = 3 * options.limit + options.webhook_concurrency
        self.claiming = True  # more claims may come: idle workers wait instead of ending
        self.workers: list[asyncio.Task[None]] = []
        self.started: dict[str, int] = {}  # workers started per channel
        self.helper_started = False
        self.claimer: Store | None = None  # see _claim

    async def deliver(self, first: Sequence[Claimed]) -> None:
        import asyncio

        from duequeue.channels.base import Message, delivery_id
        from duequeue.channels.dispatch import Dispatcher
        from duequeue.engine.stopsignal import on_stop_signals

        # Kept on the run: an import statement per send costs more than the attribute.
        self.message, self.delivery_id = Message, delivery_id
        self.loop = asyncio.get_running_loop()
        self.deadline = self.loop.time() + self.options.budget_s
        self.task = asyncio.current_task()
        self.wake = asyncio.Event()  # new targets queued, or no more claims coming
        self.hungry = asyncio.Event()  # few targets left queued: time to claim the next batch
        self.stopping = asyncio.Event()  # a stop signal came: see _claim
        self.slots = self._endpoint_slots()
        o = self.options
        async with Dispatcher(
            needs=(),
            timeout=o.channel_timeout,
            clock=lambda: self.clock() / 1000,
            smtp_url=o.smtp_url,
            email_from=o.email_from,
            webhook_secret=o.webhook_secret,
            max_connections=o.webhook_concurrency,
            webhook_block_private=o.webhook_block_private,
            notify_data=o.notify_data,
        ) as dispatcher:
            self.dispatcher = dispatcher
            async with on_stop_signals(self._stop):
                try:
                    await self._take(first)
                    await self._drain(len(first))
                finally:
                    self.claiming = False
                    self.wake.set()
                    if self.claimer is not None:
                        self.claimer.close()
                    # Every worker ends once its queue is empty: nothing is abandoned in flight.
                    await asyncio.gather(*self.workers)
        # Rows an unexpected error broke are handed back only now: released earlier, the next
        # claim of this tick would take them again.
        for unit in self.broken:
            if unit in self.open and unit not in self.counters:
                self.commit.release(unit)
        self.commit.flush()

    async def _drain(self, last: int) -> None:
        """Claim batch after batch while rows are due and the budget lasts.

        The next claim is made while the current batch is still being delivered (when fewer
        than `low_water` targets wait to be sent), so deliveries never wait for it, and memory
        holds a few batches whatever the backlog.
        """
        while last > 0:
            if self.pending >= self.low_water:
                self.hungry.clear()
                await self.hungry.wait()
            if self.loop.time() >= self.deadline or self.commit.failed is not None:
                return  # out of time, stopped, or the store stopped taking outcomes
            try:
                batch = await self._claim()
            except StoreError as exc:
                # What is claimed still goes out and is written back; the rest waits for the
                # next tick. Said in the summary, so the tick exits 1 and the operator hears.
                self.summary.errors.append(f"claiming the next batch: {exc}")
                return
            last = len(batch)
            await self._take(batch)

    async def _claim(self) -> list[Claimed]:
        """Claim the next batch without the event loop ever waiting on the database.

        Once a commit helper runs, the helper claims (commithelper.py), after the batches it
        was handed before. Without one, or if it goes: on SQLite the claim runs here, on a
        second connection that fails at once rather than wait for another writer's lock
        (Store.claimer); a few quick tries later the database thread takes it over, waiting as
        long as the busy timeout allows. Elsewhere (a claim over the network always waits for
        its round trip) it runs on the database thread.
        """
        import asyncio

        o = self.options
        args = (self.now, o.limit, o.policy.max_errors, o.lease_ms, self.owner)
        helped = self.commit.claim(*args)
        if helped is not None:
            from duequeue.engine.commithelper import HelperGone

            # A helper waiting on a locked database may answer only after the busy timeout; a
            # stop signal does not wait that long. The rows of a claim no longer waited for are
            # released when the helper answers (groupcommit.py), before the tick ends.
            stop = asyncio.ensure_future(self.stopping.wait())
            try:
                await asyncio.wait((helped, stop), return_when=asyncio.FIRST_COMPLETED)
            finally:
                stop.cancel()
            if not helped.done():
                helped.cancel()
                return []
            try:
                return helped.result()
            except HelperGone:
                if self.commit.failed is not None:
                    return []  # the store stopped taking outcomes: claim nothing more
        if self.claimer is None and self.summary.batches == 1:
            self.claimer = self.store.claimer()
        if self.claimer is not None:
            pause = 0.001
            while pause < 0.2:
                try:
                    return self.claimer.claim_due(*args)
                except StoreBusyError:
                    await asyncio.sleep(pause)
                    pause *= 2
        return await asyncio.wrap_future(self.db.submit(self.store.claim_due, *args))

    async def _take(self, rows: Sequence[Claimed]) -> None:
        """Queue a claimed batch's targets on their channels, opening channels and starting
        workers as they are first needed."""
        import asyncio

        s = self.summary
        s.batches += bool(rows)
        s.claimed += len(rows)
        s.target_retries += sum(r.retry_id is not None for r in rows)
        self._maybe_helper()
        for row in rows:
            self.open[row.unit] = row.id
        needs = {t.channel for r in rows for t in r.targets} - self.queues.keys()
        if needs:
            await self.dispatcher.open(needs)
            for channel in needs:
                from collections import deque

                self.queues[channel] = deque()
        for row in rows:
            try:
                self._start(row)
            except StoreError:
                raise  # the database is gone for everyone: leases hand rows back
            except Exception as exc:
                self._broke(row, exc)
        # A fixed pool of workers per channel takes the targets in claim order (oldest first),
        # rather than a task per row waiting on a semaphore: at 20,000 rows the tasks and their
        # wake-ups cost more than the sends. A row's targets on different channels still go
        # out concurrently, and a slow channel never holds up the other. Workers are started
        # as targets come, up to the pool's size.
        for name, queue in self.queues.items():
            started = self.started.get(name, 0)
            more = min(_POOL.get(name, self.options.webhook_concurrency), len(queue) + started)
            for _ in range(more - started):
                self.workers.append(asyncio.create_task(self._work(queue, name)))
            self.started[name] = max(more, started)
        self.wake.set()

    def _maybe_helper(self) -> None:
        """Start a commit helper once this tick has claimed DUEQUEUE_COMMIT_HELPER_ROWS rows.

        Committing on the database thread costs the event loop's thread GIL hand-overs on every
        row of every batch; a second process commits without them, on the core the sink leaves
        idle. Below that many rows its start-up (about 0.1 s of CPU) costs more than it saves.
        """
        spec = self.options.commit_helper
        if self.helper_started or spec is None or self.summary.claimed < spec.min_rows:
            return
        self.helper_started = True
        from duequeue.engine.commithelper import CommitHelper, spare_core

        if spare_core():
            helper = CommitHelper.start(spec.db, spec.busy_timeout_s)
            if helper is not None:
                self.commit.attach(helper)

    def _stop(self, sig: signal.Signals) -> None:
        # Graceful stop: nothing new starts (the budget check sees a deadline passed), what is
        # in flight finishes and is written back, and unstarted rows are released. A second
        # signal stops waiting: in-flight sends are abandoned unrecorded and their rows released.
        if self.summary.stopped_by is not None and self.task is not None:
            self.task.cancel()
        self.deadline = float("-inf")
        self.summary.stopped_by = sig.name
        self.hungry.set()  # a claim waiting for room sees the stop and claims nothing more
        self.stopping.set()  # a claim waiting for the helper is no longer waited for

    def _broke(self, row: Claimed, exc: Exception) -> None:
        # One broken row must not stop the deliveries of every other row in the batch.
        self.summary.errors.append(f"reminder {row.id}: {type(exc).__name__}: {exc}")
        self.broken.add(row.unit)  # its targets still queued are dropped, not sent

    def _start(self, row: Claimed) -> None:
        """Skip a fire past its grace, or queue its targets on their channels."""
        lateness = self.now - row.fire_at
        # A re-armed dead fire goes out however late: an operator asked for it (`retry`).
        grace = None if row.rearmed else row.misfire_grace_ms
        if grace is not None and lateness > grace:
            try:
                self._write(writeback.skip(row, self.now), "skipped")
            except writeback.BrokenRuleError as exc:
                self._write(writeback.parked(row, str(exc)), "dead")
            return
        s = self.summary
        if row.retry_id is None:  # a target's own retry is late by design, not by a late tick
            s.max_lateness_ms = max(s.max_lateness_ms or 0, lateness)
        if not row.targets:
            # Every target was switched off after a 410 Gone: nothing to send this fire to.
            self._write(writeback.skip(row, self.now, _ALL_DISABLED), "skipped")
            return
        data = None
        if row.data is not None:
            import json

            data = json.loads(row.data)
        fire = _Fire(row, from_ms(row.fire_at), data)
        for i, target in enumerate(row.targets):
            if target.id in row.sent:
                self._resolve(fire, i, _outcome("sent"))
            elif target.id in row.permanent:
                self._resolve(fire, i, _outcome("permanent", _REFUSED_BEFORE))
            elif target.disabled_at is not None:  # a per-target retry whose endpoint went away
                self._resolve(fire, i, _outcome("permanent", _DISABLED))
            else:
                self.queues[target.channel].append((fire, i))
                self.pending += 1

    def _endpoint_slots(self) -> EndpointSlots[_Job] | None:
        """Return the per-endpoint bound of the webhook workers; None when it cannot bind."""
        per_host = self.options.webhook_per_host
        if per_host >= self.options.webhook_concurrency:
            return None  # the pool of workers is the tighter bound: no bookkeeping per send
        from duequeue.engine.endpoints import EndpointSlots

        return EndpointSlots(per_host)

    async def _work(self, queue: deque[_Job], channel: str) -> None:
        """Send the targets of one channel's queue until it is empty and no claim is coming.

        With the per-endpoint bound, a target whose endpoint is full is parked and the worker
        takes the next one; a worker finishing a send takes over the next target parked on that
        endpoint.
        """
        from duequeue.engine.endpoints import endpoint

        slots = self.slots if channel == "webhook" else None
        while True:
            if not queue:
                if not self.claiming:
                    return
                self.wake.clear()
                await self.wake.wait()
                continue
            job = queue.popleft()
            if slots is None:
                await self._send(job)
                continue
            fire, i = job
            key = endpoint(fire.row.targets[i].address)
            if key is None:
                await self._send(job)  # not a URL it can bound: the send fails it at once
                continue
            if not slots.take(key, job):
                continue  # parked: a worker busy on that endpoint will take it
            next_job: _Job | None = job
            while next_job is not None:
                await self._send(next_job)
                next_job = slots.done(key)

    async def _send(self, job: _Job) -> None:
        """Send one target and record its outcome."""
        fire, i = job
        row = fire.row
        self.pending -= 1
        if self.pending < self.low_water:
            self.hungry.set()
        if row.unit in self.broken:
            return  # handed back at the end of the tick
        try:
            if self.loop.time() >= self.deadline or self.commit.failed:
                # Out of time, stopped, or the store stopped taking outcomes: send nothing
                # more. The row is released, and the final flush reports the store's error.
                fire.cut = True
                self._resolve(fire, i, None)
                return
            target = row.targets[i]
            msg = self.message(
                row.id,
                fire.fire_at,
                row.subject,
                row.body,
                fire.data,
                self.delivery_id(row.id, row.fire_at, target.id),
            )
            outcome = await self.dispatcher.send(msg, target.channel, target.address, target.secret)
            at = self.clock()
            if at > fire.last_at:
                fire.last_at = at
            # Queued, not yet committed: the row's write-back or release is queued after
            # this, and a flush commits outcomes first (groupcommit.py), so the lease
            # outlives the record. Positional: the fields' order is DeliveryRecord's.
            self.commit.record(
                DeliveryRecord(
                    row.id,
                    target.id,
                    row.fire_at,
                    outcome.status,
                    outcome.error,
                    row.attempts.get(target.id, 0) + 1,
                    at,
                )
            )
            if outcome.status == "sent":
                self.summary.deliveries_sent += 1
            else:
                self.summary.deliveries_failed += 1
            self._resolve(fire, i, outcome)
        except StoreError:
            raise  # the database is gone for everyone: stop the tick, leases hand rows back
        except Exception as exc:
            self._broke(row, exc)

    def _resolve(self, fire: _Fire, i: int, outcome: Outcome | None) -> None:
        """Take target `i`'s outcome (None: not tried); the last one finishes the row."""
        fire.outcomes[i] = outcome
        fire.left -= 1
        if fire.left == 0:
            self._finish(fire)

    def _finish(self, fire: _Fire) -> None:
        """Write the row back from its targets' outcomes, or release it if one was not tried."""
        row = fire.row
        if fire.cut:
            # The budget ran out before some target was tried: the next tick takes the row,
            # and the ledger keeps it from re-sending the targets this tick already reached.
            self.commit.release(row.unit)
            return
        if row.rule is None and row.retry_id is None and _all_sent(fire.outcomes):
            # A one-shot that reached every target: the common case, thousands a tick, and
            # the one write-back that needs neither labels, the policy nor the rule.
            self._write(writeback.one_shot_sent(row), "sent")
            return
        tried = [(t, o) for t, o in zip(row.targets, fire.outcomes, strict=True) if o]
        # Labels only go into the error text of a failure.
        failed = any(o.status != "sent" for _, o in tried)
        outcomes = [(writeback.label(t) if failed else "", o) for t, o in tried]
        # A fire dies when the attempt that killed it ended, not when the tick claimed it.
        died_at = max(self.now, fire.last_at)
        try:
            verdict, wb = writeback.after_attempt(
                row, self.now, self.options.policy, outcomes, died_at
            )
        except writeback.BrokenRuleError as exc:
            verdict, wb = Verdict.DEAD, writeback.parked(row, str(exc), died_at)
        gone = tuple(t.id for t, o in tried if o.gone)
        if gone:
            wb = replace(wb, disable=gone)
        self._write(wb, _COUNTERS[verdict])

    def _write(self, wb: WriteBack, counter: str) -> None:
        self.counters[wb.unit] = counter
        self.commit.write_back(wb)

    def _late_claim(self, rows: Sequence[Claimed]) -> None:
        # A claim the helper answered after the tick stopped waiting for it: the group commit
        # releases the rows; count them, so that claimed still adds up.
        s = self.summary
        s.claimed += len(rows)
        s.target_retries += sum(r.retry_id is not None for r in rows)
        s.batches += 1

    def _written(self, items: Sequence[WriteBack], applied: int) -> None:
        for wb in items:
            self.open.pop(wb.unit, None)
        if applied < len(items):
            # Some lease was lost (the tick outran it): those rows' new owner decides, and
            # nothing of theirs should be counted. A batched write-back says how many applied,
            # not which; the totals stay exact, the split over counters may not.
            items = items[:applied]
        s = self.summary
        for wb in items:
            counter = self.counters.pop(wb.unit)
            setattr(s, counter, getattr(s, counter) + 1)
            # Fires coalesced away behind the one just handled count as skipped too.
            s.skipped += wb.skipped - (counter == "skipped")

    def _released(self, ids: Sequence[int]) -> None:
        for unit in ids:
            self.open.pop(unit, None)
        self.summary.released += len(ids)


# Workers per channel. One SMTP connection serves the whole tick, so emails go out one at a time on
# its worker thread; two are handed over at once, so that the next is already built and waiting
# when the last reply comes (one at a time, the thread and the loop ping-ponged on every message).
# The budget check stops emails not yet handed over; the lease (config.lease_ms) allows for two.
# Notify: as many as the channel's threads (channels/notify.py WORKERS), which bound it anyway.
# Webhooks: TickOptions.webhook_concurrency.
_POOL = {"email": 2, "notify": 4}

_REFUSED_BEFORE = "refused for good on an earlier attempt"
_DISABLED = "target disabled (its endpoint answered 410 Gone); `duequeue enable` turns it back on"
_ALL_DISABLED = "skipped: every target is disabled (410 Gone); `duequeue enable ID` turns them on"


def _all_sent(outcomes: list[Outcome | None]) -> bool:
    # A target not tried (None) leaves the row to the general rules.
    return all(o is not None and o.status == "sent" for o in outcomes)


def _outcome(status: Literal["sent", "permanent"], error: str | None = None) -> Outcome:
    from duequeue.channels.base import Outcome

    return Outcome(status, error)


_COUNTERS = {
    Verdict.SUCCESS: "sent",
    Verdict.PARTIAL: "partial",
    Verdict.RETRY: "retried",
    Verdict.DEAD: "dead",
}
