"""The operator's queries written once for every dialect: cancel, retry, stats, prune.

Each function runs inside the transaction the store opened (see sql.py for the Run and Dialect
seam); none of them commits or reads the clock.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from duequeue.errors import NotFoundError
from duequeue.shared.lazy import LazyModule
from duequeue.store import pause_sql, retries, tz_sql
from duequeue.store.rows import cancel_refusal, retry_refusal
from duequeue.store.sql import Dialect, Row, Run
from duequeue.store.statements import statement

if TYPE_CHECKING:
    from duequeue.store import records
    from duequeue.store.records import Change, PruneCounts, Stats
else:
    # On first use: cron's tick with nothing due never builds these (tick_records.py).
    records = LazyModule("duequeue.store.records")

HOUR_MS = 3_600_000
DAY_MS = 24 * HOUR_MS


class DryRun(Exception):
    """Raised inside a prune's transaction to roll it back, carrying what it would have done."""

    def __init__(self, counts: PruneCounts) -> None:
        super().__init__("dry run")
        self.counts = counts


def states(run: Run, d: Dialect, ids: Sequence[int]) -> dict[int, Row]:
    """Return id -> (rule, fire_at, lease_until, done_at, cancelled_at, paused_at); raise on
    unknown ids.

    On PostgreSQL the rows are locked, in id order, so that a tick cannot claim one between
    the check and the change.
    """
    rows = run(
        d.sql(
            f"""SELECT id, rule, fire_at, lease_until, done_at, cancelled_at, paused_at
                FROM reminders
                WHERE {d.in_ids("id", "ids")} ORDER BY id {d.for_update}"""
        ),
        {"ids": d.ids(ids)},
    )
    found = {int(row[0]): row[1:] for row in rows}
    missing = [i for i in ids if i not in found]
    if missing:
        raise NotFoundError(f"no reminder with id {missing[0]}")
    return found


def cancel(run: Run, d: Dialect, ids: Sequence[int], now: int) -> list[Change]:
    """Cancel rows; see Store.cancel."""
    found = states(run, d, ids)
    changes = []
    for rid in dict.fromkeys(ids):
        refusal = cancel_refusal(found[rid], retries.has_any(run, d, rid))
        if refusal is not None:
            changes.append(records.Change(rid, skipped=refusal))
            continue
        retries.drop(run, d, rid, None, None)
        # Clearing the lease is what makes cancellation win: a running tick's write-back
        # requires its lease, so it cannot put a next fire back on this row.
        run(
            d.sql(
                """UPDATE reminders SET cancelled_at = :now, next_fire_at = NULL,
                       paused_at = NULL,
                       lease_owner = NULL, lease_until = NULL, updated_at = :now
                   WHERE id = :id"""
            ),
            {"now": now, "id": rid},
        )
        changes.append(records.Change(rid))
    return changes


def cancel_key(run: Run, d: Dialect, key: str, now: int) -> list[Change]:
    """Cancel the live reminder holding `key`; see Store.cancel_key."""
    # Off the unique index of live keys (reminders_live_key): at most one row holds it.
    found = run(
        d.sql(
            """SELECT id FROM reminders
               WHERE key = :key AND done_at IS NULL AND cancelled_at IS NULL"""
        ),
        {"key": key},
    )
    if not found:
        raise NotFoundError(f"no live reminder with key {key[:64]!r}", field="key")
    return cancel(run, d, [int(found[0][0])], now)


def retry_dead(run: Run, d: Dialect, ids: Sequence[int] | None, now: int) -> list[Change]:
    """Re-arm dead fires; see Store.retry_dead."""
    if ids is None:
        rows = run(
            d.sql(
                """SELECT DISTINCT d.reminder_id FROM dead_letters d
                   JOIN reminders r ON r.id = d.reminder_id
                   WHERE d.retried_at IS NULL AND r.cancelled_at IS NULL
                   ORDER BY d.reminder_id"""
            ),
            {},
        )
        ids = [int(r[0]) for r in rows]
    found = states(run, d, ids)
    changes = []
    for rid in dict.fromkeys(ids):
        ((oldest,),) = run(
            d.sql(
                """SELECT min(fire_at) FROM dead_letters
                   WHERE reminder_id = :id AND retried_at IS NULL"""
            ),
            {"id": rid},
        )
        reason = retry_refusal(found[rid], oldest, now)
        if reason is None and oldest is not None and not _deliverable(run, d, rid, int(oldest)):
            # Re-arming would deliver to nobody and dead-letter the fire again at the next tick.
            reason = (
                "every target that lacks this fire is disabled (410 Gone); "
                f"`duequeue enable {rid}` first"
            )
        # The re-armed fire delivers to every target that lacks it, so it takes over its
        # targets' own retries; not while a tick is sending one of them.
        if (
            reason is None
            and oldest is not None
            and not retries.drop(run, d, rid, int(oldest), now)
        ):
            reason = "a tick is delivering it; retry after the tick"
        if reason is not None or oldest is None:  # no dead fire always has a reason
            changes.append(records.Change(rid, skipped=reason))
            continue
        run(
            d.sql(
                """UPDATE reminders SET fire_at = :fire, next_fire_at = :now, error_count = 0,
                       last_error = NULL, dead_at = NULL, done_at = NULL,
                       lease_owner = NULL, lease_until = NULL, updated_at = :now
                   WHERE id = :id"""
            ),
            {"fire": oldest, "now": now, "id": rid},
        )
        run(
            d.sql(
                """UPDATE dead_letters SET retried_at = :now
                   WHERE reminder_id = :id AND fire_at = :fire"""
            ),
            {"fire": oldest, "now": now, "id": rid},
        )
        changes.append(records.Change(rid, fire_at=int(oldest)))
    return changes


def _deliverable(run: Run, d: Dialect, rid: int, fire: int) -> bool:
    """Return whether the fire has a target not disabled that has not got it yet."""
    ((count,),) = run(
        d.sql(
            """SELECT count(*) FROM targets t
               WHERE t.reminder_id = :id AND t.disabled_at IS NULL
                 AND NOT EXISTS (SELECT 1 FROM deliveries dl
                                 WHERE dl.reminder_id = :id AND dl.target_id = t.id
                                   AND dl.fire_at = :fire AND dl.outcome = 'sent')"""
        ),
        {"id": rid, "fire": fire},
    )
    return int(count) > 0


# The state counts, each off the index of that state (0007), not a pass over the table. Cancelling
# clears next_fire_at, so a row with a next fire is never cancelled; a lease is taken on due rows
# only, so a leased row is due (claim_sql.py). dead_letters: open ones, of rows not cancelled.
# `id > 0` (every id is) makes SQLite walk reminders_retrying: without it, it walks all of
# reminders_due reading each row (a second at 10^6), its planner taking IS NOT NULL for a range.
_OPEN_LETTERS = """dead_letters d WHERE d.retried_at IS NULL AND NOT EXISTS
    (SELECT 1 FROM {cancelled} WHERE r.id = d.reminder_id AND r.cancelled_at IS NOT NULL)"""
_COUNTED: dict[str, str] = {
    "pending": "reminders WHERE next_fire_at IS NOT NULL",
    "done": "reminders WHERE done_at IS NOT NULL AND cancelled_at IS NULL",
    "dead": "reminders WHERE dead_at IS NOT NULL AND cancelled_at IS NULL",
    "cancelled": "reminders WHERE cancelled_at IS NOT NULL",
    "due": "reminders WHERE next_fire_at <= :now",
    "retrying": "reminders WHERE error_count > 0 AND next_fire_at IS NOT NULL AND id > 0",
    "leased": "reminders WHERE next_fire_at <= :now AND lease_until >= :now",
    # An anti-join on reminders_cancelled (every letter has its reminder: a foreign key), which
    # PostgreSQL merges index-only; the inner join it replaced was a hash join over all of
    # reminders there (220 ms at 10^6). SQLite is told to probe that index (Dialect).
    "dead_letters": _OPEN_LETTERS,
    # The reminders those letters belong to (what every view marks `dead`).
    "dead_reminders": _OPEN_LETTERS,
    "paused": "reminders WHERE paused_at IS NOT NULL",  # off 0011's index
}


# These two read a row per index entry (the lease; the reminder of a dead letter), about ten
# times what an entry alone costs, so a capped count of them stops at a tenth of the cap.
_READS_ROWS = ("leased", "dead_letters", "dead_reminders")


def _count(name: str, rows: str, capped: bool) -> str:
    """Return a scalar subquery counting `rows` (`table WHERE ...`): all of them, or when
    `capped` at most :over (or :over_rows) of them, one more than the cap so that a count above
    it shows it was reached. A capped count walks a bounded part of an index, whatever the
    table holds."""
    what = "DISTINCT d.reminder_id" if name == "dead_reminders" else "1"
    if not capped:
        return f"(SELECT count({'*' if what == '1' else what}) FROM {rows})"
    over = ":over_rows" if name in _READS_ROWS else ":over"
    return f"(SELECT count(*) FROM (SELECT {what} FROM {rows} LIMIT {over}) c)"


def caps(cap: int) -> dict[str, int]:
    """Return where each count of stats(cap=cap) stops (the first leased or dead letter counts
    stop at a tenth of it): what serve names beside a figure shown with a "+"."""
    return {name: max(1, cap // 10) if name in _READS_ROWS else cap for name in _COUNTED}


def stats(
    run: Run,
    d: Dialect,
    now: int,
    cap: int | None = None,
    ledger: tuple[int, int, int, int, int, int | None] | None = None,
) -> Stats:
    """Count rows by state and recent ledger outcomes (in one snapshot: the store's to open).

    With `cap`, each count stops after `cap` rows (leased and dead letters after a tenth of it:
    see caps): serve's overview and /api/v1/stats read these at every refresh, and a state of
    10^6 rows costs half a second to count. A count that reached its cap is the cap and is
    named in Stats.lower_bounds, as are the ledger's counts of the day when the last day holds
    more than `cap` rows (and of the hour, when the walk, newest first, ended inside it).
    `ledger` is that walk already made (see ledger_of_day), so the overview walks it once."""
    capped = cap is not None
    stops = caps(cap or 1)
    args = {"now": now, "over": stops["pending"] + 1, "over_rows": stops["leased"] + 1}
    counts = ", ".join(
        _count(name, rows.format(cancelled=d.cancelled_probe), capped)
        for name, rows in _COUNTED.items()
    )
    (found,) = run(
        d.sql(
            f"""SELECT {counts},
                 (SELECT min(next_fire_at) FROM reminders WHERE next_fire_at <= :now)"""
        ),
        args,
    )
    state = dict(zip(_COUNTED, (int(n) for n in found[:-1]), strict=False))
    oldest = found[-1]
    if ledger is None:
        ledger_rows = "deliveries WHERE at > :day AND at <= :now"
        if capped:  # newest first, so that the walk covers the last hour before the rest
            ledger_rows = f"(SELECT at, outcome FROM {ledger_rows} ORDER BY at DESC LIMIT :over) l"
        (row,) = run(
            d.sql(
                f"""SELECT
                     count(*) FILTER (WHERE outcome = 'sent' AND at > :hour),
                     count(*) FILTER (WHERE outcome != 'sent' AND at > :hour),
                     count(*) FILTER (WHERE outcome = 'sent'),
                     count(*) FILTER (WHERE outcome != 'sent'),
                     count(*), min(at)
                   FROM {ledger_rows}"""
            ),
            {**args, "hour": now - HOUR_MS, "day": now - DAY_MS},
        )
        ledger = (int(row[0]), int(row[1]), int(row[2]), int(row[3]), int(row[4]), _int(row[5]))
    lower: list[str] = []
    if cap is not None:
        for name, n in state.items():
            if n > stops[name]:
                state[name] = stops[name]
                lower.append(name)
        if ledger[4] > cap:
            lower += ["sent_last_day", "failed_last_day"]
            if ledger[5] is not None and ledger[5] > now - HOUR_MS:  # it ended in the hour
                lower += ["sent_last_hour", "failed_last_hour"]
    retrying_targets, disabled = retries.counts(run, d)
    return records.Stats(
        retrying_targets=retrying_targets,
        disabled_targets=disabled,
        pending=state["pending"],
        done=state["done"],
        dead=state["dead"],
        cancelled=state["cancelled"],
        due=state["due"],
        retrying=state["retrying"],
        leased=state["leased"],
        dead_letters=state["dead_letters"],
        oldest_due_at=None if oldest is None else int(oldest),
        sent_last_hour=ledger[0],
        failed_last_hour=ledger[1],
        sent_last_day=ledger[2],
        failed_last_day=ledger[3],
        last_tick_ok_at=last_tick_ok(run, d),
        moved_fires=tz_sql.count_moves(run, d),
        lower_bounds=tuple(lower),
        paused=state["paused"],
        dead_reminders=state["dead_reminders"],
        queue_paused_at=pause_sql.queue_paused(run, d),
        tick_release=tz_sql.tick_release(run, d),
    )


def _int(value: Any) -> int | None:
    return None if value is None else int(value)


def last_tick_ok(run: Run, d: Dialect) -> int | None:
    """Return when a tick last ended without error; None if none ever did."""
    found = run(d.sql("SELECT last_ok_at FROM tick_marks WHERE id = 1"), {})
    return int(found[0][0]) if found else None


def mark_tick(run: Run, d: Dialect, now: int) -> None:
    """Record that a tick that started at `now` ended without error (a later one's mark stays:
    overlapping ticks end in any order)."""
    run(statement(d, "mark_tick"), {"now": now})  # statements/tick.sql


# Ledger rows of a fire that may still be delivered: the row's pending fire, or a dead fire
# awaiting retry. Deleting them would let that fire reach a target a second time.
_PROTECTED = (
    """EXISTS (SELECT 1 FROM reminders r
                        WHERE r.id = deliveries.reminder_id AND r.fire_at = deliveries.fire_at)
             OR EXISTS (SELECT 1 FROM dead_letters x
                        WHERE x.reminder_id = deliveries.reminder_id
                          AND x.fire_at = deliveries.fire_at AND x.retried_at IS NULL)
             OR """
    + retries.PROTECTED
)

_DOOMED = f"""(done_at < :before AND cancelled_at IS NULL AND NOT EXISTS (
                 SELECT 1 FROM dead_letters x WHERE x.reminder_id = reminders.id
                   AND x.retried_at IS NULL) AND NOT {retries.RETRYING})
             OR cancelled_at < :before"""


def prune(run: Run, d: Dialect, before: int) -> PruneCounts:
    """Delete finished rows and old ledger rows; see Store.prune."""
    args = {"before": before}
    ((done, cancelled, letters, ledger),) = run(
        d.sql(
            f"""SELECT count(*) FILTER (WHERE cancelled_at IS NULL),
                       count(*) FILTER (WHERE cancelled_at IS NOT NULL),
                       (SELECT count(*) FROM dead_letters
                        WHERE reminder_id IN (SELECT id FROM reminders WHERE {_DOOMED})),
                       (SELECT count(*) FROM deliveries
                        WHERE reminder_id IN (SELECT id FROM reminders WHERE {_DOOMED}))
                FROM reminders WHERE {_DOOMED}"""
        ),
        args,
    )
    run(d.sql(f"DELETE FROM reminders WHERE {_DOOMED}"), args)  # cascades to targets, ledger
    run(d.sql(f"DELETE FROM deliveries WHERE at < :before AND NOT ({_PROTECTED})"), args)
    return records.PruneCounts(
        deliveries=int(ledger) + run.changed(),
        done=int(done),
        cancelled=int(cancelled),
        dead_letters=int(letters),
    )
