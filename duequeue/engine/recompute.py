"""A zone rules change caught up: every pending fire an older tz release computed is computed
again from what the user meant (schedule/intent.py), in small batches, before a tick claims.

Each batch is locked, computed and written back in one short transaction (store/tz_sql.py):
a row a tick holds is left to that tick, a row another transaction has locked is skipped (never
waited for), and nothing is leased, so a claim on another host beside the pass finds every row
the pass is not writing at that moment, and a pass that dies holds nothing. A row is only ever
computed forward: the store hands out rows whose release is older than the one in use here, so
a host with older data leaves newer rows alone.
"""

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from duequeue.errors import DuequeueError
from duequeue.shared.lazy import LazyModule
from duequeue.store.records import Refire, StaleFire
from duequeue.store.store import Store

if TYPE_CHECKING:
    from duequeue.schedule import intent, zones
else:
    # Loaded on first use: a pass with no row to compute (a new queue records its release) or
    # no pending zone to read stays free of zoneinfo and the recurrence libraries, so cron's
    # tick does not pay for them.
    intent = LazyModule("duequeue.schedule.intent")
    zones = LazyModule("duequeue.schedule.zones")

# Rows a batch locks while it computes them (a few milliseconds): small, so that ticks on other
# hosts claiming beside the pass find the rest (the claim skips locked rows), and a tick's
# default claim (100 rows) is never starved by one batch.
BATCH = 200
SHOWN = 1_000  # moves a report keeps to list


@dataclass(slots=True)
class Pass:
    """What a recompute did (or, on a dry run, would do)."""

    release: str
    checked: int = 0
    moved: int = 0
    moves: list[Refire] = field(default_factory=list)  # the first SHOWN moved fires


def catch_up(store: Store, now: int, release: str, *, batch: int = BATCH) -> Pass:
    """Compute again every pending row an older release computed and nobody holds.

    Rows of a zone whose compiled rules are the same under their release and this one (most
    zones, most updates) are only marked as this release's: their fires cannot change. At the
    end the digests of the pending rows' zones are recorded under this release, for the next.
    """
    done = Pass(release)
    seen: set[str] = set()
    for old, tz, recorded in store.stale_zones(release):
        seen.add(tz)
        if recorded is not None and recorded == zones.digest(tz):
            while marked := store.bump_release(old, tz, release, now, batch):
                done.checked += marked

    def compute(rows: list[StaleFire]) -> list[Refire]:
        seen.update(row.tz for row in rows)
        return [refire(row) for row in rows]

    while True:
        refires, moved = store.recompute_stale(release, now, batch, compute)
        if not refires:
            break
        done.moved += moved
        _count(done, refires)
    seen.discard("UTC")
    digests = {tz: d for tz in sorted(seen) if (d := zones.digest(tz)) is not None}
    store.record_digests(release, digests)
    return done


def dry_run(store: Store, release: str, *, batch: int = BATCH) -> Pass:
    """Return what catch_up would move now, writing nothing (rows a tick holds included)."""
    done = Pass(release)
    for rows in _pages(store, release, batch):
        refires = [refire(row) for row in rows]
        done.moved += sum(1 for f in refires if f.fire_at != f.old_fire_at)
        _count(done, refires)
    return done


def _pages(store: Store, release: str, batch: int) -> Iterator[list[StaleFire]]:
    after = 0
    while rows := store.read_stale(release, after, batch):
        yield rows
        after = rows[-1].reminder_id


def _count(done: Pass, refires: list[Refire]) -> None:
    done.checked += len(refires)
    room = SHOWN - len(done.moves)
    if room > 0:
        done.moves.extend([f for f in refires if f.fire_at != f.old_fire_at][:room])


def refire(row: StaleFire) -> Refire:
    """Return a stale row computed again under the release in use.

    A row stored before releases were recorded ('') gets its walls from its instants and keeps
    its fire; a row whose rule cannot be evaluated any more keeps its fire too (the tick that
    claims it parks it, saying why).
    """
    try:
        if row.release == "":
            found = intent.backfill(row.rule_kind, row.tz, row.dtstart, row.fire_at)
        else:
            found = intent.recompute(
                row.rule_kind,
                row.rule,
                row.tz,
                row.dtstart,
                row.start_wall,
                row.after_wall,
                row.fire_at,
            )
    except (DuequeueError, ValueError, OverflowError):
        found = intent.Intent(row.dtstart, row.fire_at, row.start_wall, row.after_wall)
    nxt = found.fire_at
    if row.error_count > 0 or row.next_fire_at != row.fire_at:
        # Held for a retry (backoff, or re-armed by `retry`): no target has this fire yet, and
        # it is not tried before its wait is over.
        nxt = max(nxt, row.next_fire_at)
    return Refire(
        reminder_id=row.reminder_id,
        old_fire_at=row.fire_at,
        old_release=row.release,
        dtstart=found.dtstart,
        fire_at=found.fire_at,
        next_fire_at=nxt,
        start_wall=found.start_wall,
        after_wall=found.after_wall,
    )
