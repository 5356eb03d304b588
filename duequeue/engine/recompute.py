"""A zone rules change caught up: every pending fire an older tz release computed is computed
again from what the user meant (schedule/intent.py), in bounded batches, before a tick claims.

The pass leases its batch as a claim does and writes it back only while the lease is its own
(store/tz_sql.py), so a row a tick holds is left to that tick and a tick never claims a row
half computed. A row is only ever computed forward: the store hands out rows whose release is
older than the one in use here, so a host with older data leaves newer rows alone.
"""

import uuid
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

BATCH = 2_000
# A batch is computed and written in well under a second; a pass that dies leaves its rows
# leased this long at most.
LEASE_MS = 120_000
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
    owner = "recompute-" + uuid.uuid4().hex
    done = Pass(release)
    seen: set[str] = set()
    for old, tz, recorded in store.stale_zones(release):
        seen.add(tz)
        if recorded is not None and recorded == zones.digest(tz):
            while marked := store.bump_release(old, tz, release, now, batch):
                done.checked += marked
    while True:
        rows = store.lease_stale(release, now, batch, LEASE_MS, owner)
        if not rows:
            break
        seen.update(row.tz for row in rows)
        refires = [refire(row) for row in rows]
        done.moved += store.refire(owner, release, now, refires)
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
