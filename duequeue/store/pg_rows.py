"""A claimed batch's ledger state on PostgreSQL: one LATERAL probe per row (SQLite reads it
through json_each in sqlite.py)."""

from collections.abc import Sequence

from duequeue.store.pg_session import Cursor
from duequeue.store.rows import LedgerState


def ledger_state(
    cur: Cursor, ids: Sequence[int], fires: Sequence[int]
) -> tuple[dict[int, LedgerState], set[int]]:
    """Return, per claimed row, the ledger of its pending fire, and which rows' fires were
    re-armed by `retry`, in one query per batch."""
    # Looked up row by row (a correlated subquery, an aggregating LATERAL) so that each claimed
    # row costs one probe of the (reminder_id, fire_at) indexes: a plain join lets the planner
    # hash a sequential scan of the whole ledger once a claim is large, a cost growing with
    # history.
    cur.execute(
        """SELECT c.rid, d.target_id, d.outcome, d.n, d.last,
                  (SELECT x.retried_at FROM dead_letters x
                   WHERE x.reminder_id = c.rid AND x.fire_at = c.fire)
           FROM unnest(%s::bigint[], %s::bigint[]) AS c(rid, fire)
           LEFT JOIN LATERAL (
               SELECT target_id, outcome, count(*) AS n, max(at) AS last FROM deliveries
               WHERE reminder_id = c.rid AND fire_at = c.fire
               GROUP BY target_id, outcome) d ON TRUE""",
        (list(ids), list(fires)),
    )
    state: dict[int, LedgerState] = {}
    rearmed: set[int] = set()
    for rid, tid, outcome, n, last, retried_at in cur.fetchall():
        ledger = state.setdefault(int(rid), LedgerState())
        if retried_at is not None:
            rearmed.add(int(rid))
        if tid is not None:  # None: no ledger rows for this fire yet
            ledger.add(int(tid), outcome, int(n), int(last), retried_at)
    return state, rearmed
