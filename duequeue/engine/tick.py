"""One tick: claim due fires, deliver each target, settle each fire, commit, in that order.

    claim      store.claim()                       -> Fire (a row's fire, or a target's retry)
    deliver    a pool of workers per channel       -> a Standing per target (settle.after)
    settle     settle.settle(), pure               -> Resolution (or a release)
    commit     Committer -> Store.commit()         -> records, then resolutions, then releases

The order of effects is what keeps the core rule (a target never gets one fire twice): a claim is
leased before anything is sent; each target's outcome is queued for the ledger as soon as it is
known, ahead of its claim's resolution or release (the store commits them in that order); a
target the ledger has as `sent` for the fire is skipped; and a claim is resolved only while its
lease is ours. A hard stop between a send and the commit of its record is the one window where a
target can be sent again; the stable webhook-id / Message-ID lets the receiver drop that copy.

A tick drains: while rows are due and its time budget lasts, it claims the next batch as soon as
few targets wait to be sent, so claiming overlaps delivering and memory holds a few batches.
"""

from __future__ import annotations

import contextlib
import gc
import os
import time
from collections import deque
from collections.abc import Callable, Coroutine, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import TYPE_CHECKING, Any, TypeVar

from duequeue.engine import settle
from duequeue.engine.summary import TickSummary
from duequeue.errors import DatabaseLostError, StoreError
from duequeue.rules.retry_policy import RetryPolicy
from duequeue.schedule import release
from duequeue.shared.lazy import LazyModule
from duequeue.shared.timefmt import from_ms
from duequeue.store.store import Store
from duequeue.store.tick_records import (
    FRESH,
    DeliveryRecord,
    Fire,
    RowClaim,
    Target,
)

if TYPE_CHECKING:
    import asyncio
    import json
    import signal

    from duequeue.channels import base as channel_base
    from duequeue.channels import registry
    from duequeue.engine import commit, endpoints, helper, recompute, stopsignal
    from duequeue.store.tick_records import Claim
else:
    # Loaded on first use: a tick with nothing due (the common case, every minute) must stay
    # free of asyncio, threads, the channels and the commit helper.
    asyncio = LazyModule("asyncio")
    json = LazyModule("json")
    channel_base = LazyModule("duequeue.channels.base")
    registry = LazyModule("duequeue.channels.registry")
    commit = LazyModule("duequeue.engine.commit")
    endpoints = LazyModule("duequeue.engine.endpoints")
    helper = LazyModule("duequeue.engine.helper")
    stopsignal = LazyModule("duequeue.engine.stopsignal")
    # Only after a tz data update: computing fires loads zoneinfo and the recurrence libraries.
    recompute = LazyModule("duequeue.engine.recompute")

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class HelperOptions:
    """How a tick's commit helper (helper.py) opens the tick's store, and after how many
    claimed fires a tick starts one (DUEQUEUE_COMMIT_HELPER_ROWS).

    Until then the tick commits on its database thread. The helper takes about 55 ms to start
    and 65 ms of CPU, and its batches cost pickling; what it saves grows with the rows. A tick
    that has claimed 1,000 rows is draining a backlog. A machine with one core never starts one
    (helper.spare_core).
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
    # Sends in flight at once of a channel with no pool size of its own (webhooks); also each
    # channel's settings["concurrency"].
    webhook_concurrency: int = 64
    # Sends in flight to one endpoint (a webhook's host:port) at once: endpoints.py;
    # config.Settings.webhook_per_host.
    webhook_per_host: int = 16
    channel_timeout: float = 10.0
    # Every setting by name, for the channels (registry.Opening): each reads its own
    # (smtp_url, email_from, webhook_secret, webhook_block_private, notify_data, ...).
    settings: Mapping[str, Any] = field(default_factory=dict)
    # None: commit in-process whatever the batch size (a store that cannot be reopened by
    # open_store, such as a test's instrumented one, must not have its writes moved elsewhere).
    commit_helper: HelperOptions | None = None
    # How long one store call may wait on a lock (DUEQUEUE_BUSY_TIMEOUT): commits that find the
    # database busy are tried again until this much before the leases end (commit.py).
    busy_timeout_s: float = 5.0


class _Counts:
    """What a tick has done so far; becomes its TickSummary (summary.py) when it ends."""

    __slots__ = (
        "batches",
        "claimed",
        "dead",
        "dead_letters",
        "deliveries_failed",
        "deliveries_sent",
        "errors",
        "lost",
        "max_lateness_ms",
        "partial",
        "refused",
        "released",
        "retried",
        "sent",
        "skipped",
        "stopped_by",
        "target_retries",
        "unrecorded",
    )

    def __init__(self) -> None:
        self.claimed = self.batches = self.target_retries = 0
        self.sent = self.partial = self.retried = self.dead = self.skipped = self.released = 0
        self.deliveries_sent = self.deliveries_failed = self.unrecorded = self.refused = 0
        self.max_lateness_ms: int | None = None
        self.dead_letters: list[tuple[int, int, str | None]] = []
        self.errors: list[str] = []
        self.stopped_by: str | None = None  # SIGTERM / SIGINT that cut the tick short
        self.lost: str | None = None  # the database error that stopped the tick's commits

    def summary(self, now: int) -> TickSummary:
        """Return the summary of the tick that started at `now` (ms)."""
        late = self.max_lateness_ms
        return TickSummary(
            at=from_ms(now),
            claimed=self.claimed,
            batches=self.batches,
            target_retries=self.target_retries,
            sent=self.sent,
            partial=self.partial,
            retried=self.retried,
            dead=self.dead,
            skipped=self.skipped,
            released=self.released,
            deliveries_sent=self.deliveries_sent,
            deliveries_failed=self.deliveries_failed,
            max_lateness=None if late is None else timedelta(milliseconds=late),
            errors=tuple(self.errors),
            stopped_by=self.stopped_by,
            unrecorded=self.unrecorded,
            refused=self.refused,
            lost=self.lost,
            dead_letters=tuple(self.dead_letters),
        )


def tick(
    store: Store,
    now: int,
    options: TickOptions,
    clock: Callable[[], int],
    owner: str | None = None,
    hold: contextlib.ExitStack | None = None,
) -> TickSummary:
    """Run one tick at instant `now` (ms); `clock` stamps ledger rows with the real send time.

    Once rows are claimed, SIGTERM/SIGINT are held (stopsignal.held) until the tick returns, or,
    given `hold`, until the caller closes it: a front end prints the summary first.
    """
    # A random lease owner as uuid4().hex would be, without importing uuid (and platform under
    # it) on cron's tick with nothing due.
    owner = owner or os.urandom(16).hex()
    # The tick's deadline: shortly before the leases it takes end. No wait on the database,
    # a reconnect included, lasts past it (Store.bound), so a tick cut from the database ends
    # while its rows are still its own.
    until = time.monotonic() + (now + options.lease_ms - _margin_ms(options) - clock()) / 1000
    store.bound(until)
    try:
        with _rare_collections():
            # The first claim runs here, before any thread or event loop: the tick with nothing
            # due (the common case, every minute) stays free of asyncio, threads, aiohttp and
            # smtplib.
            paused = store.queue_paused()
            if paused is not None:
                # `duequeue pause`: claim nothing, and say so (the claim's statements test it
                # too, so a pause made while a long tick runs stops its next batch).
                return TickSummary(at=from_ms(now), paused_since=from_ms(paused))
            catch_up(store, now, options.policy.max_errors)
            o = options
            first = store.claim(now, o.limit, o.policy.max_errors, o.lease_ms, owner)
            if not first:
                return TickSummary(at=from_ms(now))
            if clock() - now > options.lease_ms / 2:
                # The claim answered so late (a link that healed after a cut) that half its
                # lease is gone: another tick may take these rows soon after. Send none of them.
                lost = "the claim answered too late"
                late = TickSummary(at=from_ms(now), claimed=len(first), batches=1, lost=lost)
                raise DatabaseLostError(f"{lost}: its lease was ending", late)
            with contextlib.ExitStack() as mine:
                stops = (hold or mine).enter_context(stopsignal.held())
                return _Tick(store, now, options, clock, owner, until, stops).run(first)
    finally:
        store.bound(None)


def _margin_ms(options: TickOptions) -> int:
    """Return how long before its leases end a tick stops waiting for the database."""
    return round((options.busy_timeout_s + 5) * 1000)


def catch_up(store: Store, now: int, max_errors: int = 3) -> int:
    """Compute again, before anything is claimed, the pending fires an older tz release
    computed; return how many moved. On a tick with nothing to compute this is one index probe
    and a release read from a file's first line (schedule/release.py)."""
    mine = release.in_use()
    if not mine or not store.stale_fires(mine, now, max_errors):
        return 0
    return recompute.catch_up(store, now, mine).moved


@contextlib.contextmanager
def _rare_collections() -> Iterator[None]:
    # A tick of thousands of rows keeps tens of thousands of rows, tasks and futures alive at
    # once, and the default thresholds then run full collections over all of them again and
    # again: about a fifth of the tick's CPU at 20,000 rows, and a quarter of the claim's. Collect
    # rarely instead (cycles are still freed), and leave what exists now (modules) out of it.
    # Both calls cost microseconds, so the empty tick does not mind them.
    thresholds = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(50_000, 20, 20)
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
        gc.unfreeze()


class _Fire:
    """One claimed fire while its targets are tried: how each stands as the outcomes come in."""

    __slots__ = ("at", "broken", "data", "fire", "last_at", "left", "standings")

    def __init__(self, fire: Fire) -> None:
        self.fire = fire
        self.at: Any = None  # the fire's instant and data, as a message carries them: read()
        self.data: Any = None
        self.standings: list[settle.Standing] = [settle.UNTRIED] * len(fire.targets)
        self.left = len(fire.targets)  # targets still to settle
        self.broken = False  # an unexpected error: its claim is handed back at the tick's end
        self.last_at = 0  # when this tick's last attempt of the fire ended (its ledger `at`)

    def read(self) -> None:
        """Read what the fire's messages carry from the stored row, once; raise if the row
        cannot be read (tick._start sets such a fire aside as a dead letter)."""
        fire = self.fire
        if fire.data is not None:
            self.data = json.loads(fire.data)
        self.at = from_ms(fire.fire_at)

    def message(self, target: Target, base: Any = channel_base) -> Any:
        """Return the fire as the message one of its targets gets (`base`: the channels' base
        module; a tick passes the module itself, see _Tick._deliver)."""
        fire = self.fire
        return base.Message(
            fire.reminder_id,
            self.at,
            fire.subject,
            fire.body,
            self.data,
            base.delivery_id(fire.reminder_id, fire.fire_at, target.id),
        )


# A target of a fire, waiting in its channel's queue: (the fire, the target's index).
_Job = tuple[_Fire, int]


class _Tick:
    """The state of one tick past its first claim."""

    def __init__(
        self,
        store: Store,
        now: int,
        options: TickOptions,
        clock: Callable[[], int],
        owner: str,
        until: float,
        stops: stopsignal.Stops,
    ) -> None:
        self.store, self.now, self.options, self.clock, self.owner = (
            store,
            now,
            options,
            clock,
            owner,
        )
        self.until = until  # the tick's deadline (time.monotonic()): see tick()
        self.stops = stops
        self.counts = _Counts()
        self.open: dict[Claim, _Fire] = {}  # claimed, not yet resolved or released
        self.broken: list[Claim] = []  # handed back only at the end: see _broke
        self.pending = 0  # targets queued, not yet taken by a send
        # The next claim is made when fewer targets than this wait: enough that the webhook
        # workers still have batches queued while a claim waits behind a commit on the database
        # thread (one batch was not: the workers ran dry waiting for each claim). Measured at
        # --limit 100, 20,000 rows: 1 batch + the pool 4.6-5.5 s, 3 batches 4.2-4.5 s, 6 the same.
        self.low_water = 3 * options.limit + options.webhook_concurrency
        self.claiming = True  # more claims may come: idle workers wait instead of ending
        self.helper_started = False

    # -- the tick, top to bottom ------------------------------------------------------------

    def run(self, first: list[Fire]) -> TickSummary:
        """Deliver `first` and the batches claimed after it; return the summary."""
        # A commit that finds the database busy is tried again until shortly before the leases
        # end: past that another tick may take the claims, so an outcome kept longer is no use.
        o = self.options
        self.committer: commit.Committer = commit.Committer(
            commit.ThreadRunner(self.store),
            self.owner,
            self.now,
            self.until,
            # A commit unanswered past the busy timeout (and a second to spare) means the
            # database is locked or out of reach: no new send until it answers again.
            stall_s=o.busy_timeout_s + 1,
        )
        try:
            _event_loop_run(self._deliver(first))
        except BaseException as exc:
            if isinstance(exc, asyncio.CancelledError) and self.counts.stopped_by:
                return self._counted()  # a second stop signal: see _stop and _wind_down
            raise
        summary = self._counted()
        if summary.lost is not None:
            raise DatabaseLostError(summary.lost, summary)
        return summary

    async def _deliver(self, first: list[Fire]) -> None:
        self.loop = asyncio.get_running_loop()
        self.deadline = self.loop.time() + self.options.budget_s
        self.task = asyncio.current_task()
        self.wake = asyncio.Event()  # targets queued, or no more claims coming
        self.hungry = asyncio.Event()  # few targets left queued: time to claim the next batch
        self.stopping = asyncio.Event()  # a stop signal came: see _next_batch
        self.late: list[asyncio.Future[list[Fire]]] = []  # claims no longer waited for
        self.queues: dict[str, deque[_Job]] = {}
        self.workers: list[asyncio.Task[None]] = []
        self.slots = self._endpoint_slots()
        # The channels' base module itself (imported with the channels by now): read through
        # the LazyModule, each of its names costs a failed lookup and a call, twice a send.
        from duequeue.channels import base

        self.base = base
        o = self.options
        opening = registry.Opening(
            o.channel_timeout,
            lambda: self.clock() / 1000,
            {**o.settings, "concurrency": o.webhook_concurrency},
        )
        with self.stops.forwarded(self.loop, self._stop):
            if self.stops.caught:  # came before the loop ran: send nothing, release the rows
                self._stop(self.stops.caught[0])
            try:
                async with registry.Senders(opening) as channels:
                    self.channels = channels
                    batch: list[Fire] = first
                    while batch:  # until a claim finds nothing more due at `now`
                        await self._take(batch)
                        batch = await self._next_batch()
                    self.claiming = False
                    self.wake.set()
                    # Every worker ends once its queue is empty: nothing is abandoned in flight.
                    await asyncio.gather(*self.workers)
            finally:
                # From here a stop signal is only noted: the outcomes of sends the receivers
                # answered are being written back, and nothing may cut that short.
                self.stops.writing = True
                await self._wind_down()

    async def _next_batch(self) -> list[Fire]:
        """Claim the next batch once few targets wait; [] when the budget is spent, the tick
        was stopped, the store stopped taking outcomes, or nothing more is due."""
        if self.pending >= self.low_water:
            self.hungry.clear()
            await self.hungry.wait()
        if self.loop.time() >= self.deadline or not self.committer.healthy:
            return []

        o = self.options
        args = commit.ClaimArgs(self.now, o.limit, o.policy.max_errors, o.lease_ms, self.owner)
        claim = asyncio.ensure_future(self.committer.claim(args))
        # A claim may wait on a lock up to the busy timeout; a stop signal does not wait that
        # long, nor does a database that stopped answering (the claim queues behind a commit
        # that hangs). The rows of a claim no longer waited for are released when it answers.
        stop = asyncio.ensure_future(self.stopping.wait())
        stalled = asyncio.ensure_future(self.committer.stalled.wait())
        left = max(0.0, self.committer.until - time.monotonic())
        done, _ = await asyncio.wait(
            (claim, stop, stalled), timeout=left, return_when=asyncio.FIRST_COMPLETED
        )
        stop.cancel()
        stalled.cancel()
        if not done:
            # A claim unanswered until the deadline, with no commit waiting behind it to stall:
            # the link is gone. Cut it short, so the tick ends before its leases do.
            self.committer.runner.interrupt()
            self.counts.lost = "a claim got no answer before the tick's deadline"
        if not claim.done():
            self.late.append(claim)
            return []
        try:
            return claim.result()
        except StoreError as exc:
            # What is claimed still goes out and is settled; the rest waits for the next tick.
            # Said in the summary, so the tick exits 1 and the operator hears.
            self.counts.errors.append(f"claiming the next batch: {exc}")
            return []

    async def _take(self, batch: Sequence[Fire]) -> None:
        """Queue a claimed batch's targets on their channels, opening channels and starting
        workers as they are first needed."""
        s = self.counts
        s.batches += 1
        s.claimed += len(batch)
        needs = {t.channel for f in batch for t in f.targets} - self.queues.keys()
        if needs:
            await self.channels.open(needs)
            for channel in needs:
                self.queues[channel] = deque()
        for fire in batch:
            try:
                self._start(fire)
            except StoreError:
                raise  # the database is gone for everyone: leases hand claims back
            except Exception as exc:
                f = self.open.get(fire.claim)
                if f is None:
                    f = _Fire(fire)
                    self.broken.append(fire.claim)
                self._broke(f, exc)
        # A fixed pool of workers per channel takes the targets in claim order (oldest first),
        # rather than a task per fire waiting on a semaphore: at 20,000 rows the tasks and their
        # wake-ups cost more than the sends. A fire's targets on different channels still go
        # out concurrently, and a slow channel never holds up the other.
        for name, queue in self.queues.items():
            started = sum(1 for w in self.workers if w.get_name() == name)
            more = min(self._pool(name), len(queue) + started)
            for _ in range(more - started):
                self.workers.append(asyncio.create_task(self._work(queue, name), name=name))
        self.wake.set()
        self._maybe_helper()

    def _start(self, fire: Fire) -> None:
        """Skip a row's fire past its grace, or queue the targets that still need the fire."""
        s = self.counts
        if isinstance(fire.claim, RowClaim):
            lateness = self.now - fire.fire_at
            # A re-armed dead fire goes out however late: an operator asked for it (`retry`).
            grace = None if fire.rearmed else fire.misfire_grace_ms
            if grace is not None and lateness > grace:
                try:
                    self.committer.resolve(settle.skip(fire, self.now))
                except settle.BrokenRuleError as exc:
                    self.committer.resolve(settle.parked(fire, str(exc)))
                return
            # A target's own retry is late by design, not because a tick was late.
            s.max_lateness_ms = max(s.max_lateness_ms or 0, lateness)
            if not fire.targets:
                # Every target was switched off after a 410 Gone: nothing to send this fire to.
                self.committer.resolve(settle.skip(fire, self.now, settle.ALL_DISABLED))
                return
        else:
            s.target_retries += 1
        f = _Fire(fire)
        try:
            f.read()
        except Exception as exc:
            # A row whose stored data no longer reads (written by hand, or by a broken tool)
            # would fail the same way every minute: set aside as a dead letter saying why,
            # before any target is sent, and the rest of the batch goes on.
            why = f"cannot read the reminder's stored data: {type(exc).__name__}: {exc}"
            self.committer.resolve(settle.set_aside(fire, why, self.now))
            return
        self.open[fire.claim] = f
        rules = self.options.policy
        for i, target in enumerate(fire.targets):
            known = settle.before(target, fire.ledger.get(target.id, FRESH), self.now, rules)
            if known is None:
                self.queues[target.channel].append((f, i))
                self.pending += 1
            else:
                self._settled(f, i, known)

    async def _work(self, queue: deque[_Job], channel: str) -> None:
        """Send the targets of one channel's queue until it is empty and no claim is coming.

        With the per-endpoint bound, a target whose endpoint is full is parked and the worker
        takes the next one; a worker finishing a send takes over the next target parked on that
        endpoint.
        """
        known = registry.find(channel)  # None: a channel only other hosts know; sends fail
        bound = None if known is None else known.endpoint
        slots = self.slots if bound is not None else None
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
            f, i = job
            assert bound is not None
            key = bound(f.fire.targets[i].address)
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
        """Send one target its fire; queue the outcome for the ledger; settle the target."""
        f, i = job
        self.pending -= 1
        if self.pending < self.low_water:
            self.hungry.set()
        if f.broken:
            self._settled(f, i, settle.UNTRIED)
            return
        if self.loop.time() >= self.deadline or not self.committer.healthy:
            # Out of time, stopped, or the store stopped taking outcomes (or answering): send
            # nothing that could not be recorded. The claim is released, and the committer's
            # last flush reports the store's error.
            self._settled(f, i, settle.UNTRIED)
            return
        fire, target = f.fire, f.fire.targets[i]
        try:
            outcome = await self.channels.send(
                f.message(target, self.base), target.channel, target.address, target.secret
            )
            at = self.clock()
            ledger = fire.ledger.get(target.id, FRESH)
            standing = settle.after(outcome, ledger, at, self.options.policy)
            # Queued, not yet committed: the claim's resolution is queued after it, and a commit
            # takes records first (commit.py), so the lease outlives the record.
            self.committer.record(
                DeliveryRecord(
                    fire.reminder_id,
                    target.id,
                    fire.fire_at,
                    outcome.status,
                    outcome.error,
                    ledger.attempts + 1,
                    at,
                    standing.retry_at,
                    outcome.gone,
                )
            )
            if outcome.status == "sent":
                self.counts.deliveries_sent += 1
            else:
                self.counts.deliveries_failed += 1
            f.last_at = max(f.last_at, at)
            self._settled(f, i, standing)
        except StoreError:
            raise  # the database is gone for everyone: stop the tick, leases hand claims back
        except Exception as exc:
            self._broke(f, exc)
            self._settled(f, i, settle.UNTRIED)

    def _settled(self, f: _Fire, i: int, standing: settle.Standing) -> None:
        """Take target `i`'s standing; the last one settles the fire."""
        f.standings[i] = standing
        f.left -= 1
        if f.left:
            return
        fire = f.fire
        self.open.pop(fire.claim, None)
        if f.broken:
            self.broken.append(fire.claim)
            return
        if (
            fire.rule is None
            and isinstance(fire.claim, RowClaim)
            and all(s is settle.SENT for s in f.standings)
        ):
            # A one-shot that reached every target: the common case, thousands a tick, and
            # the one resolution that needs neither labels, the policy nor a rule.
            self.committer.resolve(settle.one_shot_sent(fire))
            return
        # A fire dies when the attempt that killed it ended, not when the tick claimed it.
        died_at = max(self.now, f.last_at)
        resolution = settle.settle(fire, f.standings, self.now, died_at, _label)
        if resolution is None:
            # A target was not tried (the budget ran out, or a stop): the next tick takes the
            # claim, and the ledger keeps it from re-sending the targets this tick reached.
            self.committer.release(fire.claim)
        else:
            self.committer.resolve(resolution)

    # -- what can stop a tick ---------------------------------------------------------------

    def _stop(self, sig: signal.Signals) -> None:
        # Graceful stop: nothing new starts (the budget check sees a deadline passed), what is
        # in flight finishes and is settled, and unstarted fires are released. A second signal
        # stops waiting: in-flight sends are abandoned unrecorded; see _wind_down. Once the
        # deliveries are over nothing is cut short: the answered sends are being written back.
        if self.counts.stopped_by is not None and not self.stops.writing and self.task:
            self.task.cancel()
        self.deadline = float("-inf")
        self.counts.stopped_by = self.counts.stopped_by or sig.name
        self.hungry.set()  # a claim waiting for room sees the stop and claims nothing more
        self.stopping.set()  # a claim under way is no longer waited for

    def _broke(self, f: _Fire, exc: Exception) -> None:
        # One broken fire must not stop the deliveries of every other fire in the batch. Its
        # claim is handed back at the end of the tick: released earlier, the next claim of this
        # tick would take it again.
        if not f.broken:
            f.broken = True
            self.counts.errors.append(f"reminder {f.fire.reminder_id}: {type(exc).__name__}: {exc}")

    async def _wind_down(self) -> None:
        """Commit what is known, and hand back what this tick will not finish.

        Normally that is the broken fires' claims. After an error or a second stop signal it is
        every claim still open: a send abandoned in flight has no record, and its target may
        get the fire again (the at-least-once window, same webhook-id). The releases are queued
        after every record, so a claim whose sends the ledger could not take is never handed
        back (commit.py: finish() commits the records first and stops if they fail); it waits
        for its lease to end, rather than have the next tick send those targets again at once.
        """
        for worker in self.workers:
            worker.cancel()  # none is running unless an error or a second signal cut the tick
        await asyncio.gather(*self.workers, return_exceptions=True)
        for claim in self.broken:
            self.committer.release(claim)
        for claim in self.open:
            self.committer.release(claim)
        self.open.clear()
        for late in self.late:
            # Claimed after the tick stopped waiting: hand the rows back now, rather than leave
            # them leased to a tick that is ending (counted, so that claimed still adds up).
            # Waited for no longer than the deadline: past it, close() cuts the store short.
            left = max(0.0, self.committer.until - time.monotonic())
            with contextlib.suppress(Exception):
                fires = await asyncio.wait_for(late, timeout=left)
                self.counts.claimed += len(fires)
                self.counts.batches += bool(fires)
                for fire in fires:
                    self.committer.release(fire.claim)
        try:
            await self.committer.close()
        except BaseException:
            # One last try, on this thread, now that nothing is in flight.
            try:
                self.committer.finish(self.store)
            except StoreError as exc:
                # Said once, with what it leaves behind: the front end exits 1 with one line.
                self.counts.lost = " ".join(str(exc).split())
                self.counts.unrecorded = self.committer.unrecorded

    def _counted(self) -> TickSummary:
        """Fold what the commits applied into the counts; return the tick's summary."""
        s, tally = self.counts, self.committer.tally
        if s.stopped_by is None and self.stops.caught:  # noted while writing back
            s.stopped_by = self.stops.caught[0].name
        self.stops.told = len(self.stops.caught)
        s.sent += tally.applied["sent"]
        s.partial += tally.applied["partial"]
        s.retried += tally.applied["retried"]
        s.dead += tally.applied["dead"]
        s.skipped += tally.applied["skipped"] + tally.skipped
        s.released += tally.released
        s.refused += tally.refused
        s.dead_letters = tally.dead_letters
        return s.summary(self.now)

    # -- parts --------------------------------------------------------------------------------

    def _maybe_helper(self) -> None:
        """Move the database's work to a helper process (helper.py) once this tick has claimed
        DUEQUEUE_COMMIT_HELPER_ROWS rows: it is draining a backlog, where the helper's start-up
        (about 0.1 s of CPU) pays for itself. Never on a machine with one core."""
        spec = self.options.commit_helper
        if self.helper_started or spec is None or self.counts.claimed < spec.min_rows:
            return
        self.helper_started = True

        if helper.spare_core():
            runner = helper.HelperRunner.start(
                spec.db, spec.busy_timeout_s, self.committer.runner, until=self.until
            )
            if runner is not None:
                self.committer.use(
                    runner, max_items=commit.HELPER_MAX_ITEMS, window_s=commit.HELPER_WINDOW_S
                )

    def _pool(self, channel: str) -> int:
        """Return how many sends of `channel` run at once: its own pool size, or the tick's."""
        known = registry.find(channel)
        if known is None:
            return 1  # a channel this host does not know: each send fails at once
        return known.workers or self.options.webhook_concurrency

    def _endpoint_slots(self) -> endpoints.EndpointSlots[_Job] | None:
        """Return the per-endpoint bound of the webhook workers; None when it cannot bind."""
        per_host = self.options.webhook_per_host
        if per_host >= self.options.webhook_concurrency:
            return None  # the pool of workers is the tighter bound: no bookkeeping per send

        return endpoints.EndpointSlots(per_host)

    channels: registry.Senders


def _label(target: Target) -> str:
    """Return how a failure names the target in an error text (its address masked as the
    channel shows it)."""
    return registry.label(target.channel, target.address)


def _event_loop_run(coro: Coroutine[Any, Any, T]) -> T:
    """Run the deliveries on uvloop where it is installed (a dependency on Linux and macOS):
    the same 20,000-row tick spends about a tenth less CPU on it than on asyncio's own loop
    (BENCHMARKS.md, issue 22). Elsewhere, or without it, asyncio's loop does the same work.

    uvloop's clock (loop.time(), which the budget runs on) is read once per loop iteration, in
    milliseconds: a send may start within that much of the budget's end, far inside the lease.
    """
    try:
        import uvloop  # lazy: an empty tick runs no loop at all
    except ImportError:
        return asyncio.run(coro)
    return uvloop.run(coro)
