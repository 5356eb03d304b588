"""A tick's claim, written once for every dialect: lease due rows and due target retries, and
read what the ledger holds for each of their fires.

The claim leases rows by walking the due indexes in their ORDER BY, so its cost does not grow
with the rows not due. The ledger decides what each target of a fire still needs: a target
recorded `sent` is never sent again, one whose retries are spent or that was refused is dead,
and one whose last failure asked for a wait is not tried before it (store/records.py TargetLedger).
"""

from collections.abc import Mapping, Sequence
from typing import Any

from duequeue.store import reads
from duequeue.store.pause_sql import REMINDER_NOT_PAUSED
from duequeue.store.sql import Dialect, Row, Run
from duequeue.store.statements import statement
from duequeue.store.tick_records import (
    NO_LEDGER,
    Claim,
    Fire,
    RowClaim,
    Target,
    TargetClaim,
    TargetLedger,
)

# Anything due at all: the read a dialect with one writer makes before taking the write lock.
ANY_DUE = f"""SELECT EXISTS (SELECT 1 FROM reminders WHERE next_fire_at <= :now
    AND error_count < :max AND (lease_until IS NULL OR lease_until < :now))
    OR EXISTS (SELECT 1 FROM target_retries WHERE next_try_at <= :now
    AND (lease_until IS NULL OR lease_until < :now) AND {REMINDER_NOT_PAUSED})"""

# What a claim returns of a reminder, in _fire()'s order.
_PAYLOAD = "subject, body, data, rule_kind, rule, tz, dtstart, misfire_grace_ms"


def claim(
    run: Run, d: Dialect, now: int, limit: int, max_errors: int, lease_ms: int, owner: str
) -> list[Fire]:
    """Lease up to `limit` due rows and `limit` due target retries; see Store.claim."""
    lease = {"owner": owner, "until": now + lease_ms, "now": now, "limit": limit}
    rows = run(due_rows(d), {**lease, "max": max_errors})
    retries = run(_claim_retries(d), lease)
    if not rows and not retries:
        return []
    # RETURNING gives no order: oldest due first, as the claim picked them.
    rows.sort(key=lambda r: (r[-1], r[0]))
    retries.sort(key=lambda r: (r[-1], r[0]))
    reminders = _payloads(run, d, sorted({int(r[1]) for r in retries}))
    fires = [(int(r[0]), int(r[9])) for r in rows] + [(int(r[1]), int(r[3])) for r in retries]
    ledgers, rearmed = _ledgers(run, d, fires)
    row_targets = reads.targets(run, d, [int(r[0]) for r in rows])
    retry_targets = _targets_by_id(run, d, sorted({int(r[2]) for r in retries}))
    claimed = []
    for r in rows:
        rid, fire_at = int(r[0]), int(r[9])
        ledger = ledgers.get((rid, fire_at), NO_LEDGER)
        claimed.append(
            _fire(
                RowClaim(rid),
                rid,
                r[1:9],
                fire_at,
                int(r[10]),
                _settling(row_targets.get(rid, ()), ledger),
                ledger,
                (rid, fire_at) in rearmed,
            )
        )
    for _retry_id, rid, tid, fire_at, failures, _next in retries:
        rid, tid, fire_at = int(rid), int(tid), int(fire_at)
        mine = ledgers.get((rid, fire_at), {}).get(tid)
        ledger = NO_LEDGER if mine is None else {tid: mine}
        # A target retry goes out however late: its fire was on time, the backoff made it late.
        payload = (*reminders[rid][:7], None)
        claimed.append(
            _fire(
                TargetClaim(tid, fire_at),
                rid,
                payload,
                fire_at,
                int(failures),
                (retry_targets[tid],),
                ledger,
                (rid, fire_at) in rearmed,
            )
        )
    return claimed


def due_rows(d: Dialect) -> str:
    """Return the statement that leases up to :limit due rows, oldest due first, walking the
    reminders_due index in its ORDER BY (parameters: owner, until, now, max, limit)."""
    return statement(d, "claim_rows")


def _claim_retries(d: Dialect) -> str:
    return statement(d, "claim_retries")


def _payloads(run: Run, d: Dialect, ids: Sequence[int]) -> dict[int, Row]:
    if not ids:
        return {}
    found = run(
        d.sql(f"SELECT id, {_PAYLOAD} FROM reminders WHERE {d.in_ids('id', 'ids')}"),
        {"ids": d.ids(ids)},
    )
    return {int(r[0]): r[1:] for r in found}


def _targets_by_id(run: Run, d: Dialect, ids: Sequence[int]) -> dict[int, Target]:
    if not ids:
        return {}
    found = run(
        d.sql(
            f"""SELECT id, channel, address, disabled_at, secret FROM targets
                WHERE {d.in_ids("id", "ids")}"""
        ),
        {"ids": d.ids(ids)},
    )
    return {int(r[0]): Target(int(r[0]), r[1], r[2], r[3], r[4]) for r in found}


def _ledgers(
    run: Run, d: Dialect, fires: Sequence[tuple[int, int]]
) -> tuple[dict[tuple[int, int], dict[int, TargetLedger]], set[tuple[int, int]]]:
    """Return, per (reminder, fire), the ledger of each target tried for it, and which of these
    fires an operator re-armed (`retry`)."""
    # Once each: two targets of one fire retried in the same claim name the fire twice, and a
    # pair given twice would read (and count) its ledger rows twice.
    fires = sorted(set(fires))
    rids = [rid for rid, _ in fires]
    retried = {
        (int(rid), int(fire)): int(at)
        for rid, fire, at in run(
            d.sql(
                f"""SELECT reminder_id, fire_at, retried_at FROM dead_letters
                    WHERE retried_at IS NOT NULL AND {d.in_ids("reminder_id", "ids")}"""
            ),
            {"ids": d.ids(sorted(set(rids)))},
        )
    }
    wanted = set(fires)
    rows = run(
        statement(d, "ledger_of_fires"),
        {"rids": d.ids(rids), "fires": d.ids([fire for _, fire in fires])},
    )
    folded: dict[tuple[int, int], dict[int, list[Any]]] = {}
    for rid, fire, tid, outcome, error, attempt, at, retry_at in rows:
        key = (int(rid), int(fire))
        since = retried.get(key)
        state = folded.setdefault(key, {}).setdefault(int(tid), [False, 0, False, None, None, 0])
        state[5] = max(state[5], int(attempt))
        if outcome == "sent":
            state[0] = True
        elif since is None or int(at) >= since:
            # A failure before an operator's retry is what the retry is meant to get past (the
            # receiver was fixed): only those since count against the fire's retries (a tick
            # with a frozen clock may try it in the very millisecond of the retry).
            state[1] += 1
            state[2] = state[2] or outcome == "permanent"
            state[3] = None if retry_at is None else int(retry_at)  # the latest failure's
            state[4] = error
    ledgers = {
        key: {tid: TargetLedger(*state) for tid, state in targets.items()}
        for key, targets in folded.items()
        if key in wanted
    }
    return ledgers, {key for key in retried if key in wanted}


def _settling(
    targets: tuple[Target, ...], ledger: Mapping[int, TargetLedger]
) -> tuple[Target, ...]:
    """Return the targets a row's fire still settles: a disabled target (410 Gone) is left
    out, unless it was already tried for this fire: then its refusal must still count, or the
    fire would end as a success with that target neither sent nor dead-lettered."""
    if any(t.disabled_at is not None for t in targets):
        return tuple(t for t in targets if t.disabled_at is None or t.id in ledger)
    return targets


def _fire(
    claim: Claim,
    rid: int,
    payload: Sequence[Any],
    fire_at: int,
    error_count: int,
    targets: tuple[Target, ...],
    ledger: Mapping[int, TargetLedger],
    rearmed: bool,
) -> Fire:
    subject, body, data, rule_kind, rule, tz, dtstart, grace = payload
    return Fire(
        claim,
        rid,
        subject,
        body,
        data,
        rule_kind,
        rule,
        tz,
        int(dtstart),
        grace,
        fire_at,
        error_count,
        targets,
        ledger,
        rearmed,
    )
