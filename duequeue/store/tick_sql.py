"""A tick's statements written once for both stores: the claim of due rows and the release of
leases a tick did not use.

What differs stays with each store: SQLite reads before it takes the write lock, PostgreSQL
claims with SKIP LOCKED; a claimed batch's ledger is read through json_each on SQLite and a
LATERAL probe per row on PostgreSQL; ledger rows and write-backs are batched each the driver's
fastest way.
"""

from collections.abc import Sequence

from duequeue.store.rows import CLAIM_RETURNING
from duequeue.store.sql import Dialect, Run


def claim(d: Dialect) -> str:
    """Return the statement that leases up to :limit due rows, oldest due first.

    Parameters: owner, until, now, max (errors), limit. It walks the reminders_due index in
    its ORDER BY, so its cost does not grow with the rows not due.
    """
    due = f"""SELECT id FROM reminders
        WHERE next_fire_at <= :now AND error_count < :max
          AND (lease_until IS NULL OR lease_until < :now)
        ORDER BY next_fire_at, id LIMIT :limit
        {d.skip_locked}"""
    return d.sql(
        f"""UPDATE reminders SET lease_owner = :owner, lease_until = :until, updated_at = :now
            WHERE {d.in_select("id", due)}
            RETURNING {CLAIM_RETURNING}"""
    )


def release(run: Run, d: Dialect, owner: str, ids: Sequence[int], now: int) -> None:
    """Drop `owner`'s lease on these rows (not on any that another tick took since)."""
    if ids:
        run(
            d.sql(
                f"""UPDATE reminders SET lease_owner = NULL, lease_until = NULL,
                       updated_at = :now
                    WHERE {d.in_ids("id", "ids")} AND lease_owner = :owner"""
            ),
            {"now": now, "ids": d.ids(ids), "owner": owner},
        )
