"""The one SQL store: every Store method written once, over a Backend (backend.py).

Each method is one transaction of the backend's, around a function that runs the SQL written once
for every dialect (claim_sql, commit_sql, add_sql, reads, ops_sql, retries). What differs between
databases is the backend's (connections, transactions, errors, health) or its Dialect's (data).
"""

import dataclasses
from collections.abc import Callable, Iterable, Sequence
from typing import TypeVar

from duequeue.store import (
    add_sql,
    change_sql,
    claim_sql,
    commit_sql,
    dashboard_sql,
    ops_sql,
    reads,
    retries,
    tz_sql,
)
from duequeue.store import rows as shared
from duequeue.store.backend import Backend
from duequeue.store.base import (
    BrowseState,
    Change,
    Claim,
    Committed,
    Dashboard,
    DeadLetter,
    DeliveryRecord,
    Edit,
    Fire,
    FireMove,
    HealthCheck,
    NewReminder,
    PendingRetry,
    PruneCounts,
    Refire,
    ReminderView,
    Resolution,
    StaleFire,
    Stats,
    Store,
    View,
)
from duequeue.store.sql import Run

T = TypeVar("T")


class SQLStore(Store):
    """A Store on one database, through its backend."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self.dialect = backend.dialect

    def _write(self, work: Callable[[Run], T], what: str, *, repeatable: bool = True) -> T:
        return self.backend.transact(work, what=what, write=True, repeatable=repeatable)

    def _read(self, work: Callable[[Run], T], what: str) -> T:
        return self.backend.transact(work, what=what, write=False)

    def close(self) -> None:
        self.backend.close()

    def interrupt(self) -> None:
        cut = getattr(self.backend, "interrupt", None)
        if cut is not None:
            cut()

    def note_tick(self, host: str, host_ms: int) -> int | None:
        note = getattr(self.backend, "note_tick", None)
        return None if note is None else int(note(host, host_ms))

    def server_ms(self) -> int | None:
        read = getattr(self.backend, "server_ms", None)
        return None if read is None else int(read())

    # -- a tick's -----------------------------------------------------------------------------

    def claim(self, now: int, limit: int, max_errors: int, lease_ms: int, owner: str) -> list[Fire]:
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
        d = self.dialect

        def work(run: Run) -> bool:
            if d.read_before_claim:
                # The claim's own first read comes first: a damaged file is then refused before
                # a pass writes anything to it, as it was before there was a pass.
                run(d.sql(claim_sql.ANY_DUE), {"now": now, "max": max_errors})
            return bool(run(d.sql(tz_sql.STALE), {"release": release})[0][0])

        return self._read(work, "tz check")

    def lease_stale(
        self, release: str, now: int, limit: int, lease_ms: int, owner: str
    ) -> list[StaleFire]:
        return self._write(
            lambda run: tz_sql.lease(run, self.dialect, release, now, limit, lease_ms, owner),
            "recompute",
        )

    def read_stale(self, release: str, after_id: int, limit: int) -> list[StaleFire]:
        return self._read(
            lambda run: tz_sql.read(run, self.dialect, release, after_id, limit), "recompute"
        )

    def refire(self, owner: str, release: str, now: int, refires: Sequence[Refire]) -> int:
        # Not repeatable: a repeat after a lost commit would record its moves twice; the
        # leases then run out and the rows are taken again.
        return self._write(
            lambda run: tz_sql.refire(run, self.dialect, owner, release, now, refires),
            "recompute",
            repeatable=False,
        )

    def stale_zones(self, release: str) -> list[tuple[str, str, str | None]]:
        return self._read(lambda run: tz_sql.stale_zones(run, self.dialect, release), "recompute")

    def record_digests(self, release: str, digests: dict[str, str]) -> None:
        self._write(
            lambda run: tz_sql.record_digests(run, self.dialect, release, digests), "recompute"
        )

    def bump_release(self, old: str, tz: str, release: str, now: int, limit: int) -> int:
        return self._write(
            lambda run: tz_sql.bump(run, self.dialect, old, tz, release, now, limit), "recompute"
        )

    def queue_release(self) -> str | None:
        return self._read(lambda run: tz_sql.queue_release(run, self.dialect), "tz release")

    def fire_moves(self, reminder_id: int) -> list[FireMove]:
        return self._read(lambda run: tz_sql.moves(run, self.dialect, reminder_id), "fire moves")

    # -- adding -------------------------------------------------------------------------------

    def add(self, reminder: NewReminder, now: int) -> tuple[int, bool]:
        # Without a key, a repeat after a lost commit could add the reminder twice.
        return self._write(
            lambda run: add_sql.add(run, self.dialect, reminder, now),
            "add",
            repeatable=reminder.key is not None,
        )

    def add_many(self, reminders: Iterable[NewReminder], now: int) -> tuple[int, int]:
        # Keyless reminders would be added twice by a repeat after a lost commit, and a stream
        # (import's spool) is not checked for keys: that would read it all once more.
        keyed = isinstance(reminders, Sequence) and all(r.key is not None for r in reminders)
        return self._write(
            lambda run: add_sql.add_many(run, self.dialect, reminders, now),
            "bulk add",
            repeatable=keyed,
        )

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
        return self._read(
            lambda run: reads.view(run, self.dialect, view, now, limit, subject_like, target_like),
            "inspect",
        )

    def get(self, reminder_id: int) -> ReminderView | None:
        return self._read(lambda run: reads.get(run, self.dialect, reminder_id), "get")

    def deliveries(self, reminder_id: int) -> list[DeliveryRecord]:
        return self._read(
            lambda run: reads.deliveries(run, self.dialect, reminder_id), "reading the ledger"
        )

    def dead_letters(self, reminder_id: int) -> list[DeadLetter]:
        return self._read(
            lambda run: reads.dead_letters(run, self.dialect, reminder_id), "reading dead letters"
        )

    def pending_retries(self, reminder_id: int) -> list[PendingRetry]:
        return self._read(
            lambda run: retries.pending(run, self.dialect, reminder_id), "reading retries"
        )

    def stats(self, now: int) -> Stats:
        d = self.dialect

        def work(run: Run) -> Stats:
            if d.snapshot:
                run(d.snapshot, {})  # one snapshot, so the counts agree with each other
            found = ops_sql.stats(run, d, now)
            hosts = getattr(self.backend, "hosts", None)
            return found if hosts is None else dataclasses.replace(found, hosts=hosts(run, now))

        return self._read(work, "stats")

    def change(self, reminder_id: int, edit: Edit, now: int) -> None:
        # Not repeatable: a repeat after a lost commit would find the pending fire moved (by
        # this very change) and refuse, reporting a change that did happen as refused.
        self._write(
            lambda run: change_sql.change(run, self.dialect, reminder_id, edit, now),
            "change",
            repeatable=False,
        )

    def changes(self, reminder_id: int) -> list[tuple[int, str]]:
        return self._read(
            lambda run: change_sql.changes(run, self.dialect, reminder_id), "reading changes"
        )

    def mark_tick(self, now: int) -> None:
        # Repeatable: the mark only ever moves forward.
        self._write(lambda run: ops_sql.mark_tick(run, self.dialect, now), "marking the tick")

    def dashboard(self, now: int, recent_ms: int) -> Dashboard:
        d = self.dialect

        def work(run: Run) -> Dashboard:
            if d.snapshot:
                run(d.snapshot, {})  # one snapshot, so the counts agree with the charts
            return dashboard_sql.dashboard(run, d, now, recent_ms)

        return self._read(work, "the overview")

    def browse(
        self, state: BrowseState, search: str | None, before: int | None, limit: int, now: int
    ) -> tuple[list[ReminderView], int | None]:
        return self._read(
            lambda run: dashboard_sql.browse(run, self.dialect, state, search, before, limit, now),
            "listing reminders",
        )

    def pending_channels(self) -> set[str]:
        return self._read(lambda run: reads.pending_channels(run, self.dialect), "pending channels")

    def target_secrets(self, limit: int) -> list[tuple[int, str]]:
        return self._read(
            lambda run: reads.target_secrets(run, self.dialect, limit), "webhook secrets"
        )

    def notify_addresses(self, limit: int) -> list[str]:
        return self._read(
            lambda run: reads.notify_addresses(run, self.dialect, limit), "notify targets"
        )

    def health(self) -> list[HealthCheck]:
        return self._read(self.backend.health, "health checks")

    # -- the operator's changes ---------------------------------------------------------------
    # A repeat of cancel, retry, enable or prune after a lost commit finds its work done and
    # changes nothing more (it may then report the rows as skipped).

    def cancel(self, ids: Sequence[int], now: int) -> list[Change]:
        return self._write(lambda run: ops_sql.cancel(run, self.dialect, ids, now), "cancel")

    def retry_dead(self, ids: Sequence[int] | None, now: int) -> list[Change]:
        return self._write(lambda run: ops_sql.retry_dead(run, self.dialect, ids, now), "retry")

    def enable_targets(self, ids: Sequence[int], now: int) -> list[Change]:
        d = self.dialect

        def work(run: Run) -> list[Change]:
            changed = retries.enable(run, d, ids)
            return shared.enabled(ids, reads.known(run, d, ids), changed)

        return self._write(work, "enable")

    def prune(self, before: int, *, dry_run: bool = False) -> PruneCounts:
        def work(run: Run) -> PruneCounts:
            counts = ops_sql.prune(run, self.dialect, before)
            if dry_run:
                raise ops_sql.DryRun(counts)  # rolls the deletions back
            return counts

        try:
            return self._write(work, "prune")
        except ops_sql.DryRun as undone:
            return undone.counts
