"""A tick's commit, written once for every dialect: the one place the order of its writes lives.

One transaction, in this order:

1. **Records** (the ledger): facts about sends that happened, so they always land, whoever holds
   the claim now. A second `sent` of one target and fire is a no-op (the partial unique index
   deliveries_sent_once), and so is the same attempt recorded again (a commit repeated after a
   lost connection, or by a tick taking over a failed commit helper's batches). A target whose
   endpoint answered 410 Gone is switched off with its record.
2. **Resolutions**, each only while `owner` still holds its claim's lease (fencing: a tick that
   outran its lease, or was cut off, never overwrites what another tick or an operator did
   since). A row claim's row gets its new state; a target claim's retry row is taken back. Then,
   for the resolutions that applied: the targets left retrying on their own, the dead letters,
   targets switched off after 410 Gone, and a row's "partial" error cleared once the last
   target retry of it got through.
3. **Releases**, for claims the tick did not finish, again only while `owner` holds them.

Records come first so that a claim never leaves our lease (written back or released) before the
ledger holds what was sent for it: whoever claims it next sees those sends, and a target
recorded as sent is never sent the fire again.
"""

from collections.abc import Sequence
from typing import Any

from duequeue.store.sql import Dialect, Run
from duequeue.store.statements import statement
from duequeue.store.tick_records import (
    SENT_DONE,
    Claim,
    Committed,
    DeliveryRecord,
    Resolution,
    RowClaim,
    TargetClaim,
)

MAX_ERROR_TEXT = 1000

# The record, resolution and upsert statements are named (statements/commit.sql): their shape
# differs by database.
_DISABLE = """UPDATE targets SET disabled_at = :now, disabled_reason = :reason
    WHERE id = :id AND disabled_at IS NULL"""

# A target retry that got its fire through may leave its row's "partial: ..." with nothing left
# to say: no target still retrying, no dead letter of that fire or a later one awaiting retry.
_HEALED = """UPDATE reminders SET last_error = NULL, updated_at = :now
    WHERE id = :rid AND last_error LIKE 'partial:%'
      AND NOT EXISTS (SELECT 1 FROM target_retries WHERE reminder_id = :rid)
      AND NOT EXISTS (SELECT 1 FROM dead_letters
                      WHERE reminder_id = :rid AND fire_at >= :fire AND retried_at IS NULL)"""

_RELEASE_RETRY = """UPDATE target_retries SET lease_owner = NULL, lease_until = NULL
    WHERE target_id = :tid AND fire_at = :fire AND lease_owner = :owner"""


def commit(
    run: Run,
    d: Dialect,
    owner: str,
    now: int,
    records: Sequence[DeliveryRecord],
    resolutions: Sequence[Resolution],
    releases: Sequence[Claim],
) -> Committed:
    """Record, resolve and release, in that order, inside the caller's transaction."""
    if records:
        rows = [_record(r) for r in records]
        run.many(statement(d, "record"), _unrecorded(run, d, rows) if d.read_then_write else rows)
        # A 410 Gone is remembered with its record, not with the claim's resolution: a claim
        # handed back (the budget, a stop signal) or refused resolves nothing, and the next
        # fire would call the gone endpoint again.
        gone = [{"id": r.target_id, "now": r.at, "reason": r.error} for r in records if r.gone]
        if gone:
            run.many(d.sql(_DISABLE), gone)
    applied, refused = _resolve(run, d, owner, now, resolutions)
    _release(run, d, owner, now, releases)
    return Committed(tuple(applied), tuple(refused), len(releases))


def _record(r: DeliveryRecord) -> dict[str, Any]:
    return {
        "rid": r.reminder_id,
        "tid": r.target_id,
        "fire": r.fire_at,
        "outcome": r.outcome,
        "error": r.error,
        "attempt": r.attempt,
        "at": r.at,
        "retry_at": r.retry_at,
    }


def _unrecorded(run: Run, d: Dialect, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Return the records the ledger does not hold yet, each once: what the default statement's
    NOT EXISTS keeps, read for the whole batch in one statement (Dialect.read_then_write)."""
    keys = sorted({(r["rid"], r["fire"]) for r in rows})
    held = {
        (int(rid), int(fire), int(tid), int(attempt), outcome)
        for rid, fire, tid, outcome, _, attempt, _, _ in run(
            statement(d, "ledger_of_fires"),
            {"rids": d.ids([k[0] for k in keys]), "fires": d.ids([k[1] for k in keys])},
        )
    }
    fresh = []
    for r in rows:
        key = (r["rid"], r["fire"], r["tid"], r["attempt"], r["outcome"])
        if key not in held:
            held.add(key)  # the same attempt twice in one batch: the first lands
            fresh.append(r)
    return fresh


def _still_ours(run: Run, d: Dialect, owner: str, ids: Sequence[int]) -> set[int]:
    """Return which of these reminder rows `owner` still holds the lease of."""
    if not ids:
        return set()
    found = run(
        d.sql(f"SELECT id FROM reminders WHERE {d.in_ids('id', 'ids')} AND lease_owner = :owner"),
        {"ids": d.ids(sorted(set(ids))), "owner": owner},
    )
    return {int(r[0]) for r in found}


def _resolve(
    run: Run, d: Dialect, owner: str, now: int, resolutions: Sequence[Resolution]
) -> tuple[list[Resolution], list[Resolution]]:
    """Apply the resolutions whose lease is still ours; return (applied, refused)."""
    done = [
        {"fire": r.fire_at, "now": now, "id": r.reminder_id, "owner": owner}
        for r in resolutions
        if r.row is SENT_DONE
    ]
    rows = [
        _row(r, now, owner) for r in resolutions if r.row is not None and r.row is not SENT_DONE
    ]
    taken = [r.claim for r in resolutions if isinstance(r.claim, TargetClaim)]
    if d.read_then_write:
        ids = [r.reminder_id for r in resolutions if r.row is SENT_DONE]
        kept_rows = _still_ours(run, d, owner, ids)
        run.many(statement(d, "resolve_done"), [p for p in done if p["id"] in kept_rows])
    else:
        kept_rows = {int(found[0]) for found in run.many(statement(d, "resolve_done"), done)}
    kept_rows.update(int(found[0]) for found in run.many(statement(d, "resolve_row"), rows))
    kept_retries = {
        (int(tid), int(fire))
        for tid, fire in run.many(
            statement(d, "take_retry"),
            [{"tid": c.target_id, "fire": c.fire_at, "owner": owner} for c in taken],
        )
    }
    applied: list[Resolution] = []
    refused: list[Resolution] = []
    for r in resolutions:
        c = r.claim
        ours = (
            c.reminder_id in kept_rows
            if isinstance(c, RowClaim)
            else (c.target_id, c.fire_at) in kept_retries
        )
        (applied if ours else refused).append(r)
    run.many(
        statement(d, "waiting"),
        [
            {
                "rid": r.reminder_id,
                "tid": w.target_id,
                "fire": r.fire_at,
                "errors": w.failures,
                "error": w.last_error,
                "next": w.next_try_at,
                "now": now,
            }
            for r in applied
            for w in r.waiting
        ],
    )
    run.many(
        statement(d, "dead"),
        [
            {
                "rid": r.reminder_id,
                "fire": r.fire_at,
                "errors": r.dead.error_count,
                "error": r.dead.last_error,
                "dead_at": now if r.dead.dead_at is None else r.dead.dead_at,
                "max": MAX_ERROR_TEXT,
            }
            for r in applied
            if r.dead is not None
        ],
    )
    run.many(
        d.sql(_DISABLE),
        [
            {"id": tid, "now": now, "reason": r.dead.last_error if r.dead else None}
            for r in applied
            for tid in r.disable
        ],
    )
    run.many(
        d.sql(_HEALED),
        [
            {"rid": r.reminder_id, "fire": r.fire_at, "now": now}
            for r in applied
            if isinstance(r.claim, TargetClaim) and r.verdict == "sent"
        ],
    )
    return applied, refused


def _row(r: Resolution, now: int, owner: str) -> dict[str, Any]:
    row = r.row
    assert row is not None
    return {
        "pending": row.pending_fire_at,
        "next": row.next_fire_at,
        "errors": row.error_count,
        "error": row.last_error,
        "fired": row.fired,
        "fire": r.fire_at,
        "skipped": row.skipped,
        "state": row.state,
        "now": now,
        "dead_at": now if row.dead_at is None else row.dead_at,
        "id": r.reminder_id,
        "owner": owner,
        "after_wall": row.after_wall,
        "release": row.release,
    }


def _release(run: Run, d: Dialect, owner: str, now: int, releases: Sequence[Claim]) -> None:
    """Drop `owner`'s lease on claims it did not finish (not on any another tick took since)."""
    rows = [c.reminder_id for c in releases if isinstance(c, RowClaim)]
    if rows:
        run(
            d.sql(
                f"""UPDATE reminders SET lease_owner = NULL, lease_until = NULL,
                       updated_at = :now
                    WHERE {d.in_ids("id", "ids")} AND lease_owner = :owner"""
            ),
            {"now": now, "ids": d.ids(rows), "owner": owner},
        )
    run.many(
        d.sql(_RELEASE_RETRY),
        [
            {"tid": c.target_id, "fire": c.fire_at, "owner": owner}
            for c in releases
            if isinstance(c, TargetClaim)
        ],
    )
