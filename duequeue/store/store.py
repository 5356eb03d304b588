"""The store: where reminders, targets and the delivery ledger live, on any database.

One class, `Store`, whose docstrings are the contract every database must keep: each method is
one transaction of its Backend's (backend.py), around a function that runs the SQL written once
for every dialect (claim_sql, commit_sql, add_sql, reads, ops_sql, pause_sql, retries,
tz_sql). What
differs between databases is the backend's (connections, transactions, errors, health, whose
clock judges what is due) or its Dialect's (data). The records that cross it are records.py's.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, TypeVar

from duequeue.errors import ChangeRefusedError
from duequeue.shared.lazy import LazyModule
from duequeue.store import (
    claim_sql,
    commit_sql,
    ops_sql,
    pause_sql,
    reads,
    retries,
    tz_sql,
)
from duequeue.store import rows as shared
from duequeue.store.backend import Backend, Listener
from duequeue.store.sql import Run
from duequeue.store.statements import statement
from duequeue.store.tick_records import (
    BrowseState,
    Claim,
    Committed,
    DeliveryRecord,
    Fire,
    Resolution,
    View,
)

if TYPE_CHECKING:
    from duequeue.store import add_sql, change_sql, dashboard_sql, schema, schema_steps
    from duequeue.store.records import (
        Change,
        Dashboard,
        DeadLetter,
        Edit,
        FireMove,
        HealthCheck,
        HostTick,
        NewReminder,
        PendingRetry,
        PruneCounts,
        Refire,
        ReminderView,
        StaleFire,
        Stats,
    )
else:
    # Loaded on first use: `add`, `edit` and the dashboard's queries, with the records they
    # build (records.py), which cron's tick with nothing due never needs (tick_records.py).
    add_sql = LazyModule("duequeue.store.add_sql")
    change_sql = LazyModule("duequeue.store.change_sql")
    dashboard_sql = LazyModule("duequeue.store.dashboard_sql")
    schema_steps = LazyModule("duequeue.store.schema_steps")

T = TypeVar("T")


class Store:
    """The persistence contract of duequeue, on one database through its backend.

    Every method is one transaction: it either happens whole or not at all. Claiming leases rows so
    that concurrent ticks never hold the same row; writing back succeeds only while the lease is
    still held by the same owner. All times are unix milliseconds; `now` is always an argument.
    """

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self.dialect = backend.dialect
        # Whether opening this store made a new database (an SQLite file): `init`, `add` and
        # `import` then say where, so a mistyped path is seen at once.
        self.created = backend.created

    def _write(self, work: Callable[[Run], T], what: str, *, repeatable: bool = True) -> T:
        return self.backend.transact(work, what=what, write=True, repeatable=repeatable)

    def _read(self, work: Callable[[Run], T], what: str) -> T:
        return self.backend.transact(work, what=what, write=False)

    def close(self) -> None:
        """Release the connection."""
        self.backend.close()

    def bound(self, until: float | None) -> None:
        """Let no wait on the database, connecting included, end later than `until`
        (time.monotonic()); None lifts the bound.

        A tick's deadline (shortly before its leases end): a reconnect under way then cannot be
        interrupted, so it must not be allowed to outlast it.
        """
        self.backend.bound(until)

    def interrupt(self) -> None:
        """Cut short a call another thread is waiting in, and fail every later call at once.

        For a tick whose deadline passed while the database does not answer (a link cut in a
        way no timeout notices). Safe from any thread. A backend whose calls are bounded by
        their own timeouts (SQLite's busy timeout) does nothing.
        """
        self.backend.interrupt()

    def drain(self) -> None:
        """Tune the connection for committing without pause: a tick's commit helper draining a
        backlog calls it once (SQLite: a larger page cache, checkpoints on a thread)."""
        self.backend.drain()

    def listener(self) -> Listener | None:
        """Return a wait that ends when another process makes a fire due (add, import, retry,
        reschedule commit a notification), or None where the database cannot tell (SQLite):
        `worker` then only polls."""
        return self.backend.listener()

    def _due(self, run: Run, fire_at: int | None) -> None:
        """Tell listeners, at this transaction's commit, that a fire at `fire_at` (None: at
        several instants) is now pending; nothing where nobody can listen."""
        if self.dialect.notify_due:
            run(self.dialect.sql(self.dialect.notify_due), {"fire": str(fire_at or "")})

    def note_tick(self, host: str, host_ms: int, release: str | None = None) -> int | None:
        """Note that `host` (whose clock reads `host_ms`, reading tz data `release`) ticks now;
        return the instant the tick judges what is due by: the database server's clock on a
        shared database, None where the host's own clock is the queue's (SQLite: one host).
        One round trip (SQLite: a read, and a write only when the release changed)."""
        return self.backend.note_tick(host, host_ms, release)

    def note_release(self, release: str | None) -> None:
        """Record the tz release this tick reads as the last tick's (stats, doctor), where
        no host is noted with its own (SQLite, or the `clock` setting `host`): a read, and a
        write only when it changed, so an empty tick takes no write lock for it."""
        if release is None:
            return
        d = self.dialect
        if self._read(lambda run: tz_sql.tick_release(run, d), "tz release") != release:
            self._write(
                lambda run: run(statement(d, "set_tick_release"), {"release": release}),
                "noting the tz release",
            )

    def tick_releases(self, now: int) -> tuple[tuple[HostTick, ...], str | None]:
        """Return the hosts that ticked in the last day (each with its tz release) and, where
        one host ticks (SQLite), the tz release of the last tick (doctor)."""
        d = self.dialect
        return self._read(
            lambda run: (self.backend.hosts(run, now), tz_sql.tick_release(run, d)), "hosts"
        )

    def contract(self, now: int) -> tuple[schema_steps.Shape, schema_steps.Shape, tuple[str, ...]]:
        """Apply the schema's pending contract steps (`migrate --contract`), after which
        versions older than them refuse the database; return the schema's shape before and
        after, and the names of the steps applied (none: nothing was pending).

        Refused with ChangeRefusedError, nothing written, while a host that ticked in the last
        day (by the backend's clock, `now`) ran a duequeue older than the steps: the error
        names them.
        """

        def read(
            run: Run,
        ) -> tuple[schema_steps.Shape, list[schema.Migration], tuple[HostTick, ...]]:
            found = self.backend.shape(run)
            return (
                found,
                schema_steps.to_contract(self.dialect.name, found),
                self.backend.hosts(run, now),
            )

        found, pending, hosts = self._read(read, "the schema")
        if not pending:
            return found, found, ()
        needed = pending[-1].version
        older = [h for h in hosts if h.schema is None or h.schema < needed]
        if older:
            named = ", ".join(
                f"{h.host} (schema {h.schema if h.schema is not None else '11 or older'})"
                for h in older
            )
            raise ChangeRefusedError(
                f"not contracting: {len(older)} host(s) ticked in the last day with a duequeue "
                f"older than schema {needed}, which would then refuse to run: {named}; upgrade "
                "them first (a retired host counts until its last tick is a day old)"
            )
        done, names = self.backend.contract()
        return found, done, tuple(names)

    def server_ms(self) -> int | None:
        """Return the clock that judges what is due on a shared database (its server's, in unix
        ms), or None where the host's own clock is the queue's (SQLite: one host)."""
        return self.backend.server_ms()

    # -- a tick's -----------------------------------------------------------------------------

    def claim(self, now: int, limit: int, max_errors: int, lease_ms: int, owner: str) -> list[Fire]:
        """Lease up to `limit` due rows, oldest due first, for `owner` until now + lease_ms, and
        up to `limit` due target retries; return their fires with their ledger, rows first.

        A due row: next_fire_at <= now, error_count < max_errors, no live lease. A due target
        retry: next_try_at <= now, no live lease.
        """
        d = self.dialect
        if d.read_before_claim:
            # The usual tick (nothing due) then never takes the write lock.
            args = {"now": now, "max": max_errors}
            if not self._read(lambda run: run(d.sql(claim_sql.ANY_DUE), args)[0][0], "claim"):
                return []
        # Repeatable: if a lost transaction did commit, its rows stay leased to us unseen and
        # are retaken when the lease runs out, like a crashed tick's; never twice.
        return self._write(
            lambda run: claim_sql.claim(run, d, now, limit, max_errors, lease_ms, owner), "claim"
        )

    def commit(
        self,
        owner: str,
        now: int,
        records: Sequence[DeliveryRecord],
        resolutions: Sequence[Resolution],
        releases: Sequence[Claim],
    ) -> Committed:
        """Record delivery attempts, apply resolutions and release claims, in that order, in
        one transaction (store/commit_sql.py has the order and why).

        A record is a fact and always lands (a second `sent` of one target and fire, or the
        same attempt again, is a no-op); a resolution or release applies only while `owner`
        still holds its claim's lease.
        """
        # Repeatable: a record already there is not added again, and a resolution or release
        # that did commit cleared our lease, so a repeat finds nothing more to change.
        return self._write(
            lambda run: commit_sql.commit(
                run, self.dialect, owner, now, records, resolutions, releases
            ),
            "commit",
        )

    # -- zone rules changes -------------------------------------------------------------------

    def stale_fires(self, release: str, now: int, max_errors: int) -> bool:
        """Return whether a pending row's fire was computed by a release older than `release`,
        or the queue has not recorded `release` yet.

        Two index probes: what every tick pays to notice a tz data update (a store that reads
        before it claims makes that read first, `now` and `max_errors` being the claim's).
        """
        d = self.dialect

        def work(run: Run) -> bool:
            if d.read_before_claim:
                # The claim's own first read comes first: a damaged file is then refused before
                # a pass writes anything to it, as it was before there was a pass.
                run(d.sql(claim_sql.ANY_DUE), {"now": now, "max": max_errors})
            return bool(run(d.sql(tz_sql.STALE), {"release": release})[0][0])

        return self._read(work, "tz check")

    def recompute_stale(
        self,
        release: str,
        now: int,
        limit: int,
        compute: Callable[[list[StaleFire]], list[Refire]],
    ) -> tuple[list[Refire], int]:
        """Compute again, in one transaction, up to `limit` pending rows computed by a release
        older than `release` (lowest release, then id, first): `compute` (pure) computes them,
        and they are written back with `release`, each moved fire recorded and the queue's
        release raised to `release` (never lowered). Return the rows written and how many
        fires moved; nothing left to compute returns ([], 0).

        A row a tick leases is left to it (its write-back records its own release); a row
        another transaction has locked (a claim, another host's pass) is skipped, not waited
        for. The rows are held only for this short transaction and never leased, so a claim
        beside it finds every other row, and a pass that dies holds nothing.
        """
        # Repeatable: if a lost commit did land, its rows are no longer stale and a repeat
        # takes the next ones; its moves are never recorded twice.
        return self._write(
            lambda run: tz_sql.recompute(run, self.dialect, release, now, limit, compute),
            "recompute",
        )

    def read_stale(self, release: str, after_id: int, limit: int) -> list[StaleFire]:
        """Return up to `limit` such rows with id > after_id, leased or not, leasing nothing."""
        return self._read(
            lambda run: tz_sql.read(run, self.dialect, release, after_id, limit), "recompute"
        )

    def stale_zones(self, release: str) -> list[tuple[str, str, str | None]]:
        """Return each (older release, zone) that pending rows computed by a release older than
        `release` hold, with the digest of the zone's rules recorded under that release."""
        return self._read(lambda run: tz_sql.stale_zones(run, self.dialect, release), "recompute")

    def record_digests(self, release: str, digests: dict[str, str]) -> None:
        """Record the digest of each zone's rules under `release` (a recorded one is kept) and
        raise the queue's tz release to `release` (never lower it)."""
        self._write(
            lambda run: tz_sql.record_digests(run, self.dialect, release, digests), "recompute"
        )

    def bump_release(self, old: str, tz: str, release: str, now: int, limit: int) -> int:
        """Mark up to `limit` pending rows of zone `tz` computed by `old`, and not held by a
        tick, as computed by `release`, changing nothing else; return how many."""
        return self._write(
            lambda run: tz_sql.bump(run, self.dialect, old, tz, release, now, limit), "recompute"
        )

    def queue_release(self) -> str | None:
        """Return the newest tz release the queue's fires were computed with, if recorded."""
        return self._read(lambda run: tz_sql.queue_release(run, self.dialect), "tz release")

    def fire_moves(self, reminder_id: int) -> list[FireMove]:
        """Return a reminder's fires moved by zone rules changes, oldest first."""
        return self._read(lambda run: tz_sql.moves(run, self.dialect, reminder_id), "fire moves")

    # -- adding -------------------------------------------------------------------------------

    def add(self, reminder: NewReminder, now: int) -> tuple[int, bool]:
        """Insert a reminder with its targets; return (id, created).

        With a key that already exists nothing is written and (existing id, False) is returned.
        """

        # Without a key, a repeat after a lost commit could add the reminder twice.
        def add(run: Run) -> tuple[int, bool]:
            added = add_sql.add(run, self.dialect, reminder, now)
            if added[1] and reminder.fire_at is not None:
                self._due(run, reminder.fire_at)
            return added

        return self._write(add, "add", repeatable=reminder.key is not None)

    def add_many(self, reminders: Iterable[NewReminder], now: int) -> tuple[int, int]:
        """Insert reminders with their targets in one transaction; return (added, skipped).

        A reminder whose key already exists (in the store or earlier in the batch) is skipped,
        as `add` does; any other failure writes nothing. `reminders` is read a chunk at a time
        (ADD_CHUNK), never held whole, so it may be a stream of any length.
        """
        # Keyless reminders would be added twice by a repeat after a lost commit, and a stream
        # (import's spool) is not checked for keys: that would read it all once more.
        keyed = isinstance(reminders, Sequence) and all(r.key is not None for r in reminders)

        def add_many(run: Run) -> tuple[int, int]:
            counts = add_sql.add_many(run, self.dialect, reminders, now)
            if counts[0]:
                self._due(run, None)  # fires of every kind: a listening worker ticks to see
            return counts

        return self._write(add_many, "bulk add", repeatable=keyed)

    # -- reading ------------------------------------------------------------------------------

    def list_view(
        self,
        view: View,
        now: int,
        limit: int | None = None,
        *,
        subject_like: str | None = None,
        target_like: str | None = None,
    ) -> list[ReminderView]:
        """List reminders for `inspect`: dead fires, due, pending, or all rows.

        Only `all` includes cancelled rows; `dead` lists dead fires not yet retried. The filters
        are SQL LIKE patterns (`%` any run, `_` one character), case-insensitive for ASCII:
        `subject_like` on the subject, `target_like` on any target's address.
        """
        return self._read(
            lambda run: reads.view(run, self.dialect, view, now, limit, subject_like, target_like),
            "inspect",
        )

    def get(self, reminder_id: int) -> ReminderView | None:
        """Return one reminder, or None when no row has that id."""
        return self._read(lambda run: reads.get(run, self.dialect, reminder_id), "get")

    def deliveries(self, reminder_id: int) -> list[DeliveryRecord]:
        """Return every ledger row of a reminder, oldest first."""
        return self._read(
            lambda run: reads.deliveries(run, self.dialect, reminder_id), "reading the ledger"
        )

    def dead_letters(self, reminder_id: int) -> list[DeadLetter]:
        """Return every dead letter of a reminder, retried ones too, oldest fire first."""
        return self._read(
            lambda run: reads.dead_letters(run, self.dialect, reminder_id), "reading dead letters"
        )

    def pending_retries(self, reminder_id: int) -> list[PendingRetry]:
        """Return a reminder's per-target retries still under way, oldest fire first."""
        return self._read(
            lambda run: retries.pending(run, self.dialect, reminder_id), "reading retries"
        )

    def stats(self, now: int, cap: int | None = None) -> Stats:
        """Count rows by state, due rows and recent ledger outcomes at instant `now`; with
        `cap`, each count stops there (see ops_sql.stats)."""
        d = self.dialect

        def work(run: Run) -> Stats:
            if d.snapshot:
                run(d.snapshot, {})  # one snapshot, so the counts agree with each other
            if d.custom_plans:
                run(d.custom_plans, {})
            found = ops_sql.stats(run, d, now, cap)
            hosts = self.backend.hosts(run, now)
            return dataclasses.replace(found, hosts=hosts) if hosts else found

        return self._read(work, "stats")

    def change(self, reminder_id: int, edit: Edit, now: int) -> None:
        """Apply a reschedule or an edit and record it for history, in one transaction.

        Raise NotFoundError for an unknown id, ChangeRefusedError (nothing written) when the
        reminder is cancelled or done (or dead, for a new schedule), when a tick holds it or one
        of its target retries, or when its pending fire is no longer `edit.seen`.
        """

        def change(run: Run) -> None:
            change_sql.change(run, self.dialect, reminder_id, edit, now)
            if edit.schedule is not None:
                self._due(run, edit.schedule.fire_at)

        # Not repeatable: a repeat after a lost commit would find the pending fire moved (by
        # this very change) and refuse, reporting a change that did happen as refused.
        self._write(change, "change", repeatable=False)

    def changes(self, reminder_id: int) -> list[tuple[int, str]]:
        """Return the changes recorded for a reminder, oldest first: (at, what)."""
        return self._read(
            lambda run: change_sql.changes(run, self.dialect, reminder_id), "reading changes"
        )

    def mark_tick(self, now: int) -> None:
        """Record that a tick started at `now` ended without error (kept if a later one is)."""
        # Repeatable: the mark only ever moves forward.
        self._write(lambda run: ops_sql.mark_tick(run, self.dialect, now), "marking the tick")

    def dashboard(self, now: int, recent_ms: int, cap: int | None = None) -> Dashboard:
        """Return stats and serve's overview reads at `now`, in one snapshot; the lateness is of
        first attempts recorded within `recent_ms` of `now`; with `cap`, the counts stop there
        (see ops_sql.stats)."""
        d = self.dialect

        def work(run: Run) -> Dashboard:
            if d.snapshot:
                run(d.snapshot, {})  # one snapshot, so the counts agree with the charts
            if d.custom_plans:
                run(d.custom_plans, {})
            return dashboard_sql.dashboard(run, d, now, recent_ms, cap)

        return self._read(work, "the overview")

    def browse(
        self, state: BrowseState, search: str | None, before: int | None, limit: int, now: int
    ) -> tuple[list[ReminderView], int | None, bool]:
        """Return a page of reminders in `state`, newest id first, with ids below `before`
        (None: from the newest), the `before` of the next page (None: this is the last), and
        whether a search stopped at its window before the page was full (search_sql.py).
        `search` matches part of what the list shows (subject, key, a target's shown address:
        never a secret), case-insensitively (ASCII)."""
        return self._read(
            lambda run: dashboard_sql.browse(run, self.dialect, state, search, before, limit, now),
            "listing reminders",
        )

    def pending_channels(self) -> set[str]:
        """Return the channels (`email`, `webhook`) of the targets of pending reminders."""
        return self._read(lambda run: reads.pending_channels(run, self.dialect), "pending channels")

    def target_secrets(self, limit: int) -> list[tuple[int, str]]:
        """Return up to `limit` (reminder id, secret) of webhooks with their own secret, of
        reminders not done or cancelled, for `doctor`."""
        return self._read(
            lambda run: reads.target_secrets(run, self.dialect, limit), "webhook secrets"
        )

    def notify_addresses(self, limit: int) -> list[str]:
        """Return up to `limit` distinct notify target URLs, for `doctor`."""
        return self._read(
            lambda run: reads.notify_addresses(run, self.dialect, limit), "notify targets"
        )

    def health(self) -> list[HealthCheck]:
        """Check the database itself (schema version, integrity, journal mode) for `doctor`."""
        return self._read(self.backend.health, "health checks")

    # -- the operator's changes ---------------------------------------------------------------
    # A repeat of cancel, retry, enable or prune after a lost commit finds its work done and
    # changes nothing more (it may then report the rows as skipped).

    def cancel(self, ids: Sequence[int], now: int) -> list[Change]:
        """Mark reminders cancelled (next_fire_at NULL, lease dropped) so they never fire again.

        Dropping the lease makes a running tick's write-back of the row fail, so cancellation
        wins over it. Its per-target retries are dropped with it (even a finished one-shot's).
        Rows already cancelled are skipped with a reason, and so are finished (done) rows
        with no per-target retry left.
        Raise NotFoundError, writing nothing, if an id names no reminder.
        """
        return self._write(lambda run: ops_sql.cancel(run, self.dialect, ids, now), "cancel")

    def cancel_key(self, key: str, now: int) -> list[Change]:
        """Cancel the live reminder (pending or dead) holding `key`, as `cancel` does its id.
        Raise NotFoundError (field `key`), writing nothing, if no live reminder holds it."""
        return self._write(lambda run: ops_sql.cancel_key(run, self.dialect, key, now), "cancel")

    def retry_dead(self, ids: Sequence[int] | None, now: int) -> list[Change]:
        """Re-arm dead fires: the row's pending fire becomes its oldest dead fire not yet
        retried, due at `now` with error_count 0, and that dead letter gets retried_at = now.

        `ids` None means every reminder with such a dead letter. A row is skipped with a reason
        when it has no dead fire to retry, is cancelled, is leased by a tick, or has a pending
        fire already due (a recurring row's regular fire, or a fire re-armed before): re-arming
        then would drop that fire. Raise NotFoundError, writing nothing, if an id names no
        reminder. A later claim of the re-armed fire has `rearmed` set and ignores `permanent`
        outcomes recorded before the retry; targets already `sent` stay sent. Per-target
        retries of the re-armed fire are folded into it (the row now delivers them), and a row
        with one of them leased by a tick is skipped like a leased row.
        """

        def retry(run: Run) -> list[Change]:
            changes = ops_sql.retry_dead(run, self.dialect, ids, now)
            self._due(run, now)  # re-armed fires are due at once
            return changes

        return self._write(retry, "retry")

    def enable_targets(self, ids: Sequence[int], now: int) -> list[Change]:
        """Switch disabled targets of these reminders back on; a reminder with none is skipped
        with a reason. Raise NotFoundError, writing nothing, if an id names no reminder."""
        d = self.dialect

        def work(run: Run) -> list[Change]:
            changed = retries.enable(run, d, ids)
            return shared.enabled(ids, reads.known(run, d, ids), changed)

        return self._write(work, "enable")

    def pause(self, ids: Sequence[int], now: int) -> list[Change]:
        """Pause reminders: no tick delivers their pending fire, nor their per-target retries,
        until `resume`. The pending fire stays in fire_at, next_fire_at becomes NULL.

        Skipped with a reason: a row cancelled, done or dead, already paused, with no pending
        fire, or held by a tick (its lease, or one of its target retries'): the tick's
        write-back would otherwise give it a next fire. Each pause is recorded for history.
        Raise NotFoundError, writing nothing, if an id names no reminder.
        """
        # Repeatable: a repeat finds the rows paused and skips them.
        return self._write(lambda run: pause_sql.pause(run, self.dialect, ids, now), "pause")

    def resume(self, ids: Sequence[int], now: int) -> list[Change]:
        """Resume paused reminders: the pending fire is due again at fire_at (at once, if that
        passed while paused). A row not paused is skipped with a reason. Raise NotFoundError,
        writing nothing, if an id names no reminder."""
        return self._write(lambda run: pause_sql.resume(run, self.dialect, ids, now), "resume")

    def queue_paused(self) -> int | None:
        """Return since when the whole queue is paused (ms), None when it is not. A tick reads
        this before it claims; the claim's statements test it too."""
        return self._read(lambda run: pause_sql.queue_paused(run, self.dialect), "pause check")

    def pause_queue(self, now: int) -> int | None:
        """Pause the whole queue (a pause already there keeps its time); return since when it
        was paused before this call, None if it was not."""
        return self._write(lambda run: pause_sql.pause_queue(run, self.dialect, now), "pause")

    def resume_queue(self) -> int | None:
        """Resume the whole queue; return since when it was paused, None if it was not."""
        return self._write(lambda run: pause_sql.resume_queue(run, self.dialect), "resume")

    def prune(self, before: int, *, dry_run: bool = False) -> PruneCounts:
        """Delete what finished before `before`; return the counts (nothing deleted on dry_run).

        Removed: ledger rows recorded before `before`, except those of a fire that may still be
        delivered (a row's pending fire, a dead fire not yet retried), which keep it from being
        sent twice; done rows finished before `before` that hold no dead fire awaiting retry;
        cancelled rows cancelled before `before`, with their ledger and dead letters. Never
        pending rows, dead one-shots, or dead fires not yet retried of rows not cancelled.
        """

        def work(run: Run) -> PruneCounts:
            counts = ops_sql.prune(run, self.dialect, before)
            if dry_run:
                raise ops_sql.DryRun(counts)  # rolls the deletions back
            return counts

        try:
            return self._write(work, "prune")
        except ops_sql.DryRun as undone:
            return undone.counts
