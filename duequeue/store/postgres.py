"""The PostgreSQL store (psycopg 3): many hosts tick one queue.

Claims lock their rows with FOR UPDATE SKIP LOCKED inside the claiming UPDATE, so concurrent
ticks on any number of hosts split the due rows without waiting on each other, and the lease
columns carry the ownership past the transaction exactly as on SQLite.
"""

from collections.abc import Iterable, Sequence

from duequeue.store import claim_sql, commit_sql, ops_sql, reads, retries
from duequeue.store import rows as shared
from duequeue.store.base import (
    Change,
    Claim,
    Committed,
    DeadLetter,
    DeliveryRecord,
    Fire,
    HealthCheck,
    NewReminder,
    PendingRetry,
    PruneCounts,
    ReminderView,
    Resolution,
    Stats,
    Store,
    View,
)
from duequeue.store.pg_ops import PgRun, add_many, health, insert_reminder
from duequeue.store.pg_session import SCHEMA_VERSION, Cursor, Session
from duequeue.store.sql import POSTGRES


class PostgresStore(Store):
    """A Store on one PostgreSQL database (the tables live in the connection's current schema)."""

    def __init__(self, url: str) -> None:
        self.session = Session(url)

    def close(self) -> None:
        self.session.close()

    # -- writes -----------------------------------------------------------------------------

    def add(self, reminder: NewReminder, now: int) -> tuple[int, bool]:
        r = reminder

        def work(cur: Cursor) -> tuple[int, bool]:
            if r.key is not None:
                # Looked up first so that repeating a keyed add does not use up an id.
                cur.execute("SELECT id FROM reminders WHERE key = %s", (r.key,))
                if found := cur.fetchone():
                    return int(found[0]), False
            # The UNIQUE key decides, not the lookup: concurrent adds of one key land once.
            rid = insert_reminder(cur, r, now)
            if rid is None:
                cur.execute("SELECT id FROM reminders WHERE key = %s", (r.key,))
                existing = cur.fetchone()
                assert existing is not None
                return int(existing[0]), False
            return rid, True

        # Without a key a repeat after a lost commit could add the reminder twice: not repeated.
        return self.session.transact(work, what="add", repeatable=r.key is not None)

    def claim(self, now: int, limit: int, max_errors: int, lease_ms: int, owner: str) -> list[Fire]:
        # Repeating is safe: if the lost transaction did commit, its rows stay leased to us
        # unseen and are retaken when the lease runs out, like a crashed tick's; never twice.
        return self.session.transact(
            lambda cur: claim_sql.claim(
                PgRun(cur), POSTGRES, now, limit, max_errors, lease_ms, owner
            ),
            what="claim",
            repeatable=True,
        )

    def commit(
        self,
        owner: str,
        now: int,
        records: Sequence[DeliveryRecord],
        resolutions: Sequence[Resolution],
        releases: Sequence[Claim],
    ) -> Committed:
        # Repeating is safe: a record already there is not added again, and a resolution or
        # release that did commit cleared our lease, so the repeat finds nothing to change. If
        # even the repeat fails, StoreError stops the tick: its leases run out and a target sent
        # but not recorded is sent again (docs/guarantees.md: at least once to the network).
        return self.session.transact(
            lambda cur: commit_sql.commit(
                PgRun(cur), POSTGRES, owner, now, records, resolutions, releases
            ),
            what="commit",
            repeatable=True,
        )

    def pending_retries(self, reminder_id: int) -> list[PendingRetry]:
        return self.session.transact(
            lambda cur: retries.pending(PgRun(cur), POSTGRES, reminder_id),
            what="reading retries",
            repeatable=True,
        )

    def enable_targets(self, ids: Sequence[int], now: int) -> list[Change]:
        def work(cur: Cursor) -> list[Change]:
            run = PgRun(cur)
            changed = retries.enable(run, POSTGRES, ids)
            return shared.enabled(ids, reads.known(run, POSTGRES, ids), changed)

        return self.session.transact(work, what="enable", repeatable=True)

    # -- reads ------------------------------------------------------------------------------

    def list_view(
        self,
        view: View,
        now: int,
        limit: int | None = None,
        *,
        subject_like: str | None = None,
        target_like: str | None = None,
    ) -> list[ReminderView]:
        return self.session.transact(
            lambda cur: reads.view(
                PgRun(cur), POSTGRES, view, now, limit, subject_like, target_like
            ),
            what="inspect",
            repeatable=True,
        )

    def get(self, reminder_id: int) -> ReminderView | None:
        return self.session.transact(
            lambda cur: reads.get(PgRun(cur), POSTGRES, reminder_id), what="get", repeatable=True
        )

    def deliveries(self, reminder_id: int) -> list[DeliveryRecord]:
        return self.session.transact(
            lambda cur: reads.deliveries(PgRun(cur), POSTGRES, reminder_id),
            what="reading the ledger",
            repeatable=True,
        )

    def dead_letters(self, reminder_id: int) -> list[DeadLetter]:
        return self.session.transact(
            lambda cur: reads.dead_letters(PgRun(cur), POSTGRES, reminder_id),
            what="reading dead letters",
            repeatable=True,
        )

    def stats(self, now: int) -> Stats:
        # One REPEATABLE READ snapshot, so the counts agree with each other.
        def work(cur: Cursor) -> Stats:
            cur.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
            return ops_sql.stats(PgRun(cur), POSTGRES, now)

        return self.session.transact(work, what="stats", repeatable=True)

    def pending_channels(self) -> set[str]:
        return self.session.transact(
            lambda cur: reads.pending_channels(PgRun(cur), POSTGRES),
            what="pending channels",
            repeatable=True,
        )

    def notify_addresses(self, limit: int) -> list[str]:
        return self.session.transact(
            lambda cur: reads.notify_addresses(PgRun(cur), POSTGRES, limit),
            what="notify targets",
            repeatable=True,
        )

    def health(self) -> list[HealthCheck]:
        return self.session.transact(
            lambda cur: health(cur, self.session.where, SCHEMA_VERSION),
            what="health checks",
            repeatable=True,
        )

    # -- operator writes --------------------------------------------------------------------

    def add_many(self, reminders: Iterable[NewReminder], now: int) -> tuple[int, int]:
        # Keyless reminders would be added twice by a repeat after a lost commit, and a stream
        # (import's spool) is not checked for keys: that would read it all once more.
        return self.session.transact(
            lambda cur: add_many(cur, reminders, now),
            what="bulk add",
            repeatable=isinstance(reminders, Sequence)
            and all(r.key is not None for r in reminders),
        )

    # A repeat of cancel, retry or prune after a lost commit finds its work done and changes
    # nothing more (it may then report the rows as skipped).
    def cancel(self, ids: Sequence[int], now: int) -> list[Change]:
        return self.session.transact(
            lambda cur: ops_sql.cancel(PgRun(cur), POSTGRES, ids, now),
            what="cancel",
            repeatable=True,
        )

    def retry_dead(self, ids: Sequence[int] | None, now: int) -> list[Change]:
        return self.session.transact(
            lambda cur: ops_sql.retry_dead(PgRun(cur), POSTGRES, ids, now),
            what="retry",
            repeatable=True,
        )

    def prune(self, before: int, *, dry_run: bool = False) -> PruneCounts:
        def work(cur: Cursor) -> PruneCounts:
            counts = ops_sql.prune(PgRun(cur), POSTGRES, before)
            if dry_run:
                raise ops_sql.DryRun(counts)  # rolls the deletions back
            return counts

        try:
            return self.session.transact(work, what="prune", repeatable=True)
        except ops_sql.DryRun as undone:
            return undone.counts
