"""Reading rows on PostgreSQL: targets, a claimed batch's ledger state, and inspect's views."""

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from duequeue.store.base import ReminderView, Target
from duequeue.store.pg_session import Cursor

VIEW_COLUMNS = """r.id, r.key, r.subject, r.rule_kind, r.rule, r.tz,
    CASE WHEN r.cancelled_at IS NOT NULL THEN 'cancelled'
         WHEN r.dead_at IS NOT NULL THEN 'dead'
         WHEN r.done_at IS NOT NULL THEN 'done' ELSE 'pending' END,
    r.fire_at, r.next_fire_at, r.error_count, r.last_error, r.last_fired_at, r.skipped_fires,
    r.created_at, r.dead_at,
    (SELECT min(d.at) FROM deliveries d WHERE d.reminder_id = r.id
        AND d.fire_at = r.last_fired_at AND d.outcome = 'sent'),
    r.dtstart"""


def targets(cur: Cursor, ids: Sequence[int]) -> dict[int, tuple[Target, ...]]:
    found: dict[int, list[Target]] = {}
    cur.execute(
        """SELECT reminder_id, id, channel, address FROM targets
           WHERE reminder_id = ANY(%s) ORDER BY id""",
        (list(ids),),
    )
    for rid, tid, channel, address in cur.fetchall():
        found.setdefault(int(rid), []).append(Target(int(tid), channel, address))
    return {rid: tuple(ts) for rid, ts in found.items()}


LedgerState = tuple[set[int], set[int], dict[int, int], bool]


def ledger_state(cur: Cursor, ids: Sequence[int], fires: Sequence[int]) -> dict[int, LedgerState]:
    """Return, per claimed row, the targets already sent / refused for good for its pending fire,
    the attempts so far and whether the fire was re-armed by `retry`, in one query per batch."""
    cur.execute(
        """SELECT c.rid, d.target_id, d.outcome, count(d.id), max(d.at), x.retried_at
           FROM unnest(%s::bigint[], %s::bigint[]) AS c(rid, fire)
           LEFT JOIN dead_letters x
             ON x.reminder_id = c.rid AND x.fire_at = c.fire AND x.retried_at IS NOT NULL
           LEFT JOIN deliveries d ON d.reminder_id = c.rid AND d.fire_at = c.fire
           GROUP BY c.rid, d.target_id, d.outcome, x.retried_at""",
        (list(ids), list(fires)),
    )
    state: dict[int, LedgerState] = {}
    for rid, tid, outcome, n, last, retried_at in cur.fetchall():
        sent, permanent, attempts, _ = state.get(int(rid), (set(), set(), {}, False))
        state[int(rid)] = (sent, permanent, attempts, retried_at is not None)
        if tid is None:
            continue  # no ledger rows for this fire yet
        attempts[int(tid)] = attempts.get(int(tid), 0) + int(n)
        if outcome == "sent":
            sent.add(int(tid))
        elif outcome == "permanent" and (retried_at is None or last > retried_at):
            # A refusal from before an operator's retry is what the retry is meant to get
            # past (the receiver was fixed), so only a later one counts.
            permanent.add(int(tid))
    return state


def view(row: Sequence[Any], targets: tuple[Target, ...]) -> ReminderView:
    view = ReminderView(
        id=row[0],
        key=row[1],
        subject=row[2],
        rule_kind=row[3],
        rule=row[4],
        tz=row[5],
        state=row[6],
        fire_at=row[7],
        next_fire_at=row[8],
        error_count=row[9],
        last_error=row[10],
        last_fired_at=row[11],
        skipped_fires=row[12],
        created_at=row[13],
        dead_at=row[14],
        last_sent_at=row[15],
        dtstart=row[16],
        targets=targets,
    )
    if len(row) > 17:  # a dead letter: its fire, errors and time, beside the row's own state
        view = replace(
            view, dead_fire_at=row[17], error_count=row[18], last_error=row[19], dead_at=row[20]
        )
    return view
