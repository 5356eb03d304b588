"""serve's reads, written once for every dialect: the overview's charts and lateness, and the
keyset-paged list of reminders (a search's matches come from search_sql.py).

Every query walks an index (0007's for the ledger by time, the rarer states and open dead
letters; reminders_due for what is due; the primary key for the rest), so a page costs about
the same at 10^6 reminders as at 10^3; tests/integration/test_dashboard_plans.py holds that.
"""

from duequeue.store import ops_sql, reads, search_sql
from duequeue.store import rows as shared
from duequeue.store.records import BrowseState, Dashboard, ReminderView
from duequeue.store.sql import Dialect, Run

MINUTE_MS = 60_000
HOUR_MS = 3_600_000
DAY_MS = 24 * HOUR_MS

# The condition of each state on the reminders table (the dead state is read off dead_letters).
# Cancelling clears next_fire_at, so the pending states need not test cancelled_at.
_STATES: dict[str, str] = {
    "all": "TRUE",
    "pending": "r.next_fire_at IS NOT NULL",
    "due": "r.next_fire_at <= :now",
    "retrying": "r.next_fire_at IS NOT NULL AND r.error_count > 0",
    # Cancelling clears paused_at too, so a paused row is never cancelled.
    "paused": "r.paused_at IS NOT NULL",
    "done": "r.done_at IS NOT NULL AND r.cancelled_at IS NULL",
    "cancelled": "r.cancelled_at IS NOT NULL",
}

_NO_CURSOR = 2**63 - 1

# Fires due in each of the next 24 hours: one range count of reminders_due per hour, each
# stopping after :hour_over entries when capped (see hour_cap). Six times faster in SQLite than
# one GROUP BY over the same rows (no expression per row, no sort); uncapped it still walks every
# pending row due within the day (880,000 of 10^6 in benchmarks/serve_pages.py: 70-120 ms).
_PER_HOUR = " UNION ALL ".join(
    f"""SELECT {h}, count(*) FROM (SELECT 1 FROM reminders
        WHERE next_fire_at > :now + {h * HOUR_MS} AND next_fire_at <= :now + {(h + 1) * HOUR_MS}
        LIMIT :hour_over) h{h}"""
    for h in range(24)
)


def hour_cap(cap: int) -> int:
    """Return where each hour's count of the due chart stops under the counts' `cap`: a tenth
    of it, so the chart reads at most 2.4 times `cap` index entries, whatever the queue holds."""
    return max(1, cap // 10)


def dashboard(run: Run, d: Dialect, now: int, recent_ms: int, cap: int | None) -> Dashboard:
    """Return stats and the overview's reads; see Store.dashboard."""
    # The last day's ledger, walked once, newest first: per minute for the chart, summed for
    # stats' counts of the hour and the day. With `cap` it stops after cap + 1 rows, as stats'
    # own walk does: the chart then holds the newest of the day (stats.lower_bounds says so).
    minutes = run(
        d.sql(
            """SELECT (:now - at) / 60000,
                      sum(CASE WHEN outcome = 'sent' THEN 1 ELSE 0 END),
                      sum(CASE WHEN outcome = 'sent' THEN 0 ELSE 1 END), min(at)
               FROM (SELECT at, outcome FROM deliveries WHERE at > :since AND at <= :now
                     ORDER BY at DESC LIMIT :over) l
               GROUP BY (:now - at) / 60000"""
        ),
        {"since": now - DAY_MS, "now": now, "over": d.limit(None if cap is None else cap + 1)},
    )
    per_minute = tuple(sorted((int(m), int(s), int(f)) for m, s, f, _at in minutes))
    hour = [(s, f) for m, s, f in per_minute if m < 60]
    ledger = (
        sum(s for s, _f in hour),
        sum(f for _s, f in hour),
        sum(s for _m, s, _f in per_minute),
        sum(f for _m, _s, f in per_minute),
        sum(s + f for _m, s, f in per_minute),
        min((int(at) for *_, at in minutes), default=None),
    )
    stats = ops_sql.stats(run, d, now, cap, ledger)
    ((late,),) = run(
        d.sql(
            """SELECT max(at - fire_at) FROM deliveries
               WHERE at > :since AND at <= :now AND attempt = 1"""
        ),
        {"since": now - recent_ms, "now": now},
    )
    over = None if cap is None else hour_cap(cap) + 1
    hours = run(d.sql(_PER_HOUR), {"now": now, "hour_over": d.limit(over)})
    return Dashboard(
        stats=stats,
        max_lateness_ms=None if late is None else int(late),
        per_minute=per_minute,
        per_hour=tuple(sorted((int(h), int(n)) for h, n in hours)),
        hour_cap=None if cap is None else hour_cap(cap),
    )


def browse(
    run: Run,
    d: Dialect,
    state: BrowseState,
    search: str | None,
    before: int | None,
    limit: int,
    now: int,
) -> tuple[list[ReminderView], int | None, bool]:
    """Return a page of reminders, the next page's cursor, and whether a search stopped at its
    window before the page was full; see Store.browse."""
    partial = False
    if search is not None:
        ids, cursor, partial = search_sql.find(
            run,
            d,
            search,
            before,
            limit,
            lambda found: _in_state(run, d, state, found, now),
            lambda below, n: _page(run, d, state, below, n, now),
        )
    else:
        ids = _page(run, d, state, before, limit, now)
        cursor = ids[-1] if len(ids) == limit else None
    if not ids:
        return [], cursor, partial
    rows = run(
        d.sql(
            f"""SELECT {shared.VIEW_COLUMNS} FROM reminders r
                WHERE {d.in_ids("r.id", "ids")} ORDER BY r.id DESC"""
        ),
        {"ids": d.ids(ids)},
    )
    targets = reads.targets(run, d, ids)
    return [shared.view(row, targets.get(int(row[0]), ())) for row in rows], cursor, partial


def _page(
    run: Run, d: Dialect, state: BrowseState, before: int | None, limit: int, now: int
) -> list[int]:
    """Return the ids of a page of the list (no search), newest first."""
    # No cursor is the largest id there can be, so that the page is always a range of the
    # index (an `IS NULL OR` would keep SQLite from seeking).
    args = {"now": now, "before": _NO_CURSOR if before is None else before, "lim": limit}
    if state == "dead":
        # Driven by the open dead letters (0007's dead_letters_open), newest reminder first.
        sql = """SELECT DISTINCT d.reminder_id FROM dead_letters d
            JOIN reminders r ON r.id = d.reminder_id
            WHERE d.retried_at IS NULL AND r.cancelled_at IS NULL AND d.reminder_id < :before
            ORDER BY d.reminder_id DESC LIMIT :lim"""
    else:
        sql = f"""SELECT r.id FROM reminders r
            WHERE {_STATES[state]} AND r.id < :before
            ORDER BY r.id DESC LIMIT :lim"""
    return [int(row[0]) for row in run(d.sql(sql), args)]


def _in_state(run: Run, d: Dialect, state: BrowseState, ids: list[int], now: int) -> list[int]:
    """Return those of `ids` (a search's matches) in `state`, newest first."""
    if state == "dead":
        sql = f"""SELECT DISTINCT d.reminder_id FROM dead_letters d
            JOIN reminders r ON r.id = d.reminder_id
            WHERE d.retried_at IS NULL AND r.cancelled_at IS NULL
              AND {d.in_ids("d.reminder_id", "ids")}
            ORDER BY d.reminder_id DESC"""
    else:
        sql = f"""SELECT r.id FROM reminders r WHERE {d.in_ids("r.id", "ids")}
            AND {_STATES[state]} ORDER BY r.id DESC"""
    return [int(row[0]) for row in run(d.sql(sql), {"ids": d.ids(ids), "now": now})]
