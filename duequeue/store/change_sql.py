"""`reschedule` and `edit`, written once for every dialect: change a reminder that no tick holds,
in one transaction, and record the change for `history`.

The rule against a tick in flight is to refuse, not to wait or merge: a row a tick has leased, or
one with a target retry a tick has leased, is not changed (ChangeRefusedError, "try again"). The
row and its target retries are locked first (PostgreSQL; SQLite's one writer needs no lock), so a
claim cannot take them between the check and the change. A change also compares the pending fire
with the one its caller read (`Edit.seen`): if a tick moved it meanwhile, the caller's picture
(and the note it wrote for history) is stale, and the change is refused the same way.

A change clears a lease that has run out (`lease_owner`), as a new claim would: a tick that
outlived its lease can then no longer write its outcome over the change.

Changed targets keep the ledger coherent: a target kept (same channel and address) keeps its id,
ledger, retries and 410 state; a removed one is deleted with its ledger rows and pending retries;
a new one starts with none.
"""

from collections.abc import Sequence

from duequeue.errors import ChangeRefusedError, NotFoundError
from duequeue.store import search_sql
from duequeue.store.records import Edit, NewTarget
from duequeue.store.sql import Dialect, Run

_STATE = """SELECT fire_at, next_fire_at, error_count, lease_until, done_at, dead_at, cancelled_at
    FROM reminders WHERE id = :id"""


def change(run: Run, d: Dialect, reminder_id: int, edit: Edit, now: int) -> None:
    """Apply `edit` to the reminder; see Store.change."""
    found = run(d.sql(f"{_STATE} {d.for_update}"), {"id": reminder_id})
    if not found:
        raise NotFoundError(f"no reminder with id {reminder_id}", field="id")
    fire_at, next_fire_at, errors, lease_until, done_at, dead_at, cancelled_at = found[0]
    what = f"reminder {reminder_id}"
    if cancelled_at is not None:
        raise ChangeRefusedError(f"{what} is cancelled; add a new one", field="id")
    if done_at is not None:
        raise ChangeRefusedError(f"{what} is done; add a new one", field="id")
    if dead_at is not None and edit.schedule is not None:
        raise ChangeRefusedError(
            f"{what} is dead-lettered; `duequeue retry {reminder_id}` re-arms it", field="id"
        )
    retry_leases = run(
        d.sql(f"SELECT lease_until FROM target_retries WHERE reminder_id = :id {d.for_update}"),
        {"id": reminder_id},
    )
    if (lease_until is not None and int(lease_until) >= now) or any(
        r[0] is not None and int(r[0]) >= now for r in retry_leases
    ):
        raise ChangeRefusedError(
            f"a tick is delivering {what}; nothing changed, try again in a moment", field="id"
        )
    if (fire_at, next_fire_at, errors) != edit.seen:
        raise ChangeRefusedError(
            f"a tick moved {what} on while it was being changed; nothing changed, try again",
            field="id",
        )
    values: dict[str, object] = {"id": reminder_id, "now": now}
    sets = ["lease_owner = NULL", "lease_until = NULL", "updated_at = :now"]
    if edit.schedule is not None:
        s = edit.schedule
        sets += [
            "rule_kind = :rule_kind",
            "rule = :rule",
            "tz = :tz",
            "dtstart = :dtstart",
            "fire_at = :fire_at",
            # A paused reminder stays paused: its new fire waits in fire_at for `resume`.
            "next_fire_at = CASE WHEN paused_at IS NULL THEN :fire_at END",
            # The fire in backoff is replaced by the new one: its failures are not the new one's.
            "error_count = 0",
            "last_error = NULL",
            # What the user meant now, so a zone rules change moves the new fire, not the old.
            "start_wall = :start_wall",
            "after_wall = NULL",
            "fire_release = :release",
        ]
        values.update(
            rule_kind=s.rule_kind,
            rule=s.rule,
            tz=s.tz,
            dtstart=s.dtstart,
            fire_at=s.fire_at,
            start_wall=s.start_wall,
            release=s.release,
        )
    for name in ("subject", "body", "data"):
        if name in edit.content:
            sets.append(f"{name} = :{name}")
            values[name] = edit.content[name]
    run(d.sql(f"UPDATE reminders SET {', '.join(sets)} WHERE id = :id"), values)
    if edit.targets is not None:
        _replace_targets(run, d, reminder_id, edit.targets)
    if edit.search is not None:
        search_sql.replace(run, d, reminder_id, edit.search)
    run(
        d.sql(
            """INSERT INTO reminder_changes (reminder_id, at, change)
               VALUES (:id, :now, :change)"""
        ),
        {"id": reminder_id, "now": now, "change": edit.note},
    )


def _replace_targets(run: Run, d: Dialect, rid: int, wanted: Sequence[NewTarget]) -> None:
    stored = {
        (channel, address): (int(tid), secret)
        for tid, channel, address, secret in run(
            d.sql("SELECT id, channel, address, secret FROM targets WHERE reminder_id = :id"),
            {"id": rid},
        )
    }
    keep = {(t.channel, t.address): t for t in wanted}
    run.many(
        d.sql("UPDATE targets SET secret = :secret WHERE id = :tid"),
        [
            {"tid": stored[pair][0], "secret": t.secret}
            for pair, t in keep.items()
            if pair in stored and stored[pair][1] != t.secret
        ],
    )
    run.many(
        d.sql(
            """INSERT INTO targets (reminder_id, channel, address, secret)
               VALUES (:rid, :channel, :address, :secret)"""
        ),
        [
            {"rid": rid, "channel": t.channel, "address": t.address, "secret": t.secret}
            for pair, t in keep.items()
            if pair not in stored
        ],
    )

    # Deleted after the inserts, so that SQLite does not hand a removed target's id to a new one
    # of the same reminder (a rowid is reused once it is the largest).
    gone = [tid for pair, (tid, _) in stored.items() if pair not in keep]
    if gone:
        # Their ledger rows and pending retries go with them (ON DELETE CASCADE).
        run.many(d.sql("DELETE FROM targets WHERE id = :tid"), [{"tid": tid} for tid in gone])


def changes(run: Run, d: Dialect, reminder_id: int) -> list[tuple[int, str]]:
    """Return the recorded changes of a reminder, oldest first: (at, change)."""
    return [
        (int(at), str(text))
        for at, text in run(
            d.sql(
                """SELECT at, change FROM reminder_changes WHERE reminder_id = :id
                   ORDER BY at, id"""
            ),
            {"id": reminder_id},
        )
    ]
