"""The PostgreSQL store (psycopg 3): many hosts tick one queue.

Claims lock their rows with FOR UPDATE SKIP LOCKED inside the claiming UPDATE, so concurrent
ticks on any number of hosts split the due rows without waiting on each other, and the lease
columns carry the ownership past the transaction exactly as on SQLite.
"""

from collections.abc import Iterable, Sequence

from duequeue.store import ops_sql, pg_rows, reads, retries, tick_sql
from duequeue.store import rows as shared
from duequeue.store.base import (
    Change,
    Claimed,
    DeadLetter,
    DeliveryRecord,
    HealthCheck,
    NewReminder,
    PendingRetry,
    PruneCounts,
    ReminderView,
    Stats,
    Store,
    View,
    WriteBack,
)
from duequeue.store.pg_ops import PgRun, add_many, health, insert_reminder
from duequeue.store.pg_session import SCHEMA_VERSION, Cursor, Session
from duequeue.store.sql import POSTGRES

_CLAIM = tick_sql.claim(POSTGRES)

# One statement: the row's update and, for a dead fire, its dead letter, so a tick's write-back
# of one row is one round trip. The dead letter is written only if the update applied.
_WRITE_BACK = """
    WITH done AS (
    UPDATE reminders SET
        fire_at = %(pending)s, next_fire_at = %(next)s, error_count = %(errors)s,
        last_error = %(error)s,
        last_fired_at = CASE WHEN %(fired)s THEN %(fire)s ELSE last_fired_at END,
        skipped_fires = skipped_fires + %(skipped)s,
        done_at = CASE WHEN %(state)s = 'done' THEN %(now)s END,
        dead_at = CASE WHEN %(state)s = 'dead' THEN %(dead_at)s END,
        lease_owner = NULL, lease_until = NULL, updated_at = %(now)s
    WHERE id = %(id)s AND lease_owner = %(owner)s
    RETURNING id),
    letter AS (
    INSERT INTO dead_letters (reminder_id, fire_at, error_count, last_error, dead_at)
    SELECT id, %(fire)s, %(failures)s, %(error)s, %(dead_at)s FROM done WHERE %(dead)s
    ON CONFLICT (reminder_id, fire_at) DO UPDATE SET
        error_count = excluded.error_count, last_error = excluded.last_error,
        dead_at = excluded.dead_at, retried_at = NULL)
    SELECT count(*) FROM done"""


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

    def claim_due(
        self, now: int, limit: int, max_errors: int, lease_ms: int, owner: str
    ) -> list[Claimed]:
        params = {"owner": owner, "until": now + lease_ms, "now": now, "max": max_errors}

        def work(cur: Cursor) -> list[Claimed]:
            run = PgRun(cur)
            again = retries.claim(run, POSTGRES, owner, now, now + lease_ms, limit)
            cur.execute(_CLAIM, {**params, "limit": limit})
            rows = cur.fetchall()
            if not rows:
                return again
            shared.sort_claimed(rows)
            ids = [int(row[0]) for row in rows]
            targets = reads.targets(run, POSTGRES, ids)
            ledger, rearmed = pg_rows.ledger_state(cur, ids, [int(row[9]) for row in rows])
            claimed = [
                shared.claimed(
                    row,
                    targets.get(rid, ()),
                    ledger.get(rid),
                    rid in rearmed,
                )
                for rid, row in zip(ids, rows, strict=True)
            ]
            return claimed + again

        # Repeating is safe: if the lost transaction did commit, its rows stay leased to us
        # unseen and are retaken when the lease runs out, like a crashed tick's; never twice.
        return self.session.transact(work, what="claim", repeatable=True)

    def record(self, records: Sequence[DeliveryRecord]) -> None:
        if not records:
            return
        cols = list(
            zip(
                *(
                    (d.reminder_id, d.target_id, d.fire_at, d.outcome, d.error, d.attempt, d.at)
                    for d in records
                ),
                strict=True,
            )
        )

        def work(cur: Cursor) -> None:
            # A `sent` row is kept once per target and fire by the partial unique index (the
            # ON CONFLICT names it, so the check is that index's probe); the NOT EXISTS makes
            # repeating this insert after a lost commit add no failed attempt twice either. It
            # matches reminder_id too (a target has one reminder) so that each new row is one
            # probe of deliveries_fire, not a hash anti join over the whole ledger.
            cur.execute(
                """INSERT INTO deliveries
                       (reminder_id, target_id, fire_at, outcome, error, attempt, at)
                   SELECT * FROM unnest(%s::bigint[], %s::bigint[], %s::bigint[], %s::text[],
                                        %s::text[], %s::int[], %s::bigint[])
                       AS n(reminder_id, target_id, fire_at, outcome, error, attempt, at)
                   WHERE NOT EXISTS (
                       SELECT 1 FROM deliveries d
                       WHERE d.reminder_id = n.reminder_id AND d.fire_at = n.fire_at
                         AND d.target_id = n.target_id
                         AND d.attempt = n.attempt AND d.outcome = n.outcome)
                   ON CONFLICT (target_id, fire_at) WHERE outcome = 'sent' DO NOTHING""",
                [list(c) for c in cols],
            )

        # If even the repeat fails, StoreError stops the tick: the row's lease runs out and the
        # unrecorded target is sent again (docs/guarantees.md: at least once to the network).
        self.session.transact(
            work, what="recording deliveries", repeatable=True, one_statement=True
        )

    def write_back(self, owner: str, now: int, items: Sequence[WriteBack]) -> int:
        if not items:
            return 0

        rows = [w for w in items if w.retry_id is None]

        def work(cur: Cursor) -> int:
            run = PgRun(cur)
            applied = sum(
                retries.write_retry(run, POSTGRES, w, owner, now)
                for w in items
                if w.retry_id is not None
            )
            if not rows:
                return applied
            # One statement per row, but sent together: psycopg pipelines an executemany, so a
            # batch costs about one round trip instead of one per row (~0.2 ms each even on
            # loopback). Each statement returns how many rows it applied: 0 when the lease
            # was lost and the row is someone else's now.
            cur.executemany(
                _WRITE_BACK,
                [
                    {
                        "pending": w.pending_fire_at,
                        "next": w.next_fire_at,
                        "errors": w.error_count,
                        "error": w.last_error,
                        "fired": w.fired,
                        "fire": w.fire_at,
                        "skipped": w.skipped,
                        "state": w.state,
                        "dead": w.dead_letter,
                        "failures": w.dead_errors,
                        "now": now,
                        "dead_at": now if w.dead_at is None else w.dead_at,
                        "id": w.reminder_id,
                        "owner": owner,
                    }
                    for w in rows
                ],
                returning=True,
            )
            done = []
            while True:
                row = cur.fetchone()
                done.append(int(row[0]) if row else 0)
                if not cur.nextset():
                    break
            for w, n in zip(rows, done, strict=True):
                if n and (w.retries or w.disable):
                    retries.after_row(run, POSTGRES, w, now)
            return applied + sum(done)

        # Repeating is safe: a write-back that did commit cleared our lease, so the repeat
        # matches no row (and counts 0) instead of applying twice.
        return self.session.transact(
            work, what="write-back", repeatable=True, one_statement=len(items) == 1
        )

    def release(self, owner: str, ids: Sequence[int], now: int) -> int:
        if not ids:
            return 0

        rows = [i for i in ids if i > 0]
        again = [-i for i in ids if i < 0]

        def work(cur: Cursor) -> None:
            run = PgRun(cur)
            tick_sql.release(run, POSTGRES, owner, rows, now)
            retries.release(run, POSTGRES, owner, again)

        self.session.transact(work, what="release", repeatable=True, one_statement=not again)
        return len(ids)

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
