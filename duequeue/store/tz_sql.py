"""Zone rules changes, written once for every dialect: find the pending fires an older tz
release computed, compute them again and write them back in one short transaction per small
batch (rows a tick leases or another transaction locks are skipped, never waited for or held),
record each moved fire, and keep the queue's newest release.

Every read walks reminders_release (fire_release, id) WHERE next_fire_at IS NOT NULL from its
start: a release compares as text, which orders IANA releases of one length of letters
(2025b < 2026a < 2026f), and '' (unknown: stored before releases were recorded) comes first.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from duequeue.shared.lazy import LazyModule
from duequeue.store.sql import Dialect, Row, Run
from duequeue.store.statements import statement

if TYPE_CHECKING:
    from duequeue.store import records
    from duequeue.store.records import FireMove, Refire, StaleFire
else:
    # On first use: cron's tick with nothing due never builds these (tick_records.py).
    records = LazyModule("duequeue.store.records")

# The tick's check: one probe of the index (the first entry below the release) and one of the
# queue's release (a queue that has not recorded this release yet gets a pass, which finds no
# row to compute and records the release and its zones' digests).
STALE = """SELECT EXISTS (SELECT 1 FROM reminders
        WHERE fire_release < :release AND next_fire_at IS NOT NULL)
    OR NOT EXISTS (SELECT 1 FROM queue_meta WHERE name = 'tz_release' AND value >= :release)"""

# Which (release, zone) pairs the stale rows hold: read once a pass, over the stale rows only.
_STALE_ZONES = """SELECT DISTINCT fire_release, tz FROM reminders
    WHERE fire_release < :release AND next_fire_at IS NOT NULL"""

_READ_DIGEST = "SELECT value FROM queue_meta WHERE name = :name"
# Writing a digest, the queue's tz release and the last tick's: named statements (put_meta_once,
# set_tz_release, set_tick_release in statements/add.sql).

_COLUMNS = """id, rule_kind, rule, tz, dtstart, start_wall, after_wall, fire_at, next_fire_at,
    error_count, fire_release"""

_READ = f"""SELECT {_COLUMNS} FROM reminders
    WHERE fire_release < :release AND next_fire_at IS NOT NULL AND id > :after
    ORDER BY id LIMIT :limit"""

# The rows are locked by the transaction that computed them (recompute()): nobody changed them
# since. Any lease on them had ended; it is cleared, so a tick that held one and answers late
# has its write-back refused (its fire is no longer the row's).
_REFIRE = """UPDATE reminders SET dtstart = :dtstart, fire_at = :fire, next_fire_at = :next,
        start_wall = :start_wall, after_wall = :after_wall, fire_release = :release,
        lease_owner = NULL, lease_until = NULL, updated_at = :now
    WHERE id = :id AND fire_release < :release
    RETURNING id"""

_MOVE = """INSERT INTO fire_moves
        (reminder_id, old_fire_at, new_fire_at, old_release, new_release, moved_at)
    VALUES (:id, :old, :new, :old_release, :release, :now)"""

_META = "SELECT value FROM queue_meta WHERE name = 'tz_release'"


def stale_batch(d: Dialect) -> str:
    """Return the statement that takes a batch of stale rows (its plan: an index walk of
    reminders_release, benchmarks/catch_up_plan.py)."""
    # Skip locked, never wait: a row a claim or another pass is taking right now is theirs.
    # The rows taken stay locked only until the transaction ends, milliseconds later.
    return d.sql(
        f"""SELECT {_COLUMNS} FROM reminders
            WHERE fire_release < :release AND next_fire_at IS NOT NULL
              AND (lease_until IS NULL OR lease_until < :now)
            ORDER BY fire_release, id LIMIT :limit {d.skip_locked}"""
    )


def recompute(
    run: Run,
    d: Dialect,
    release: str,
    now: int,
    limit: int,
    compute: Callable[[list[StaleFire]], list[Refire]],
) -> tuple[list[Refire], int]:
    """Compute again up to `limit` stale rows nobody holds, in the caller's transaction; see
    Store.recompute_stale."""
    rows = run(stale_batch(d), {"release": release, "now": now, "limit": limit})
    if not rows:
        return [], 0
    refires = compute([_stale(r) for r in rows])
    written = {
        int(r[0])
        for r in run.many(
            d.sql(_REFIRE),
            [
                {
                    "id": f.reminder_id,
                    "dtstart": f.dtstart,
                    "fire": f.fire_at,
                    "next": f.next_fire_at,
                    "start_wall": f.start_wall,
                    "after_wall": f.after_wall,
                    "release": release,
                    "now": now,
                }
                for f in refires
            ],
        )
    }
    moved = [
        {
            "id": f.reminder_id,
            "old": f.old_fire_at,
            "new": f.fire_at,
            "old_release": f.old_release,
            "release": release,
            "now": now,
        }
        for f in refires
        if f.reminder_id in written and f.fire_at != f.old_fire_at
    ]
    run.many(d.sql(_MOVE), moved)
    raise_queue_release(run, d, release)
    return [f for f in refires if f.reminder_id in written], len(moved)


def stale_zones(run: Run, d: Dialect, release: str) -> list[tuple[str, str, str | None]]:
    """Return each (older release, zone) the stale rows hold, with the digest recorded for the
    zone under that release (None when none was); see Store.stale_zones."""
    pairs = [(str(r[0]), str(r[1])) for r in run(d.sql(_STALE_ZONES), {"release": release})]
    if not pairs:
        return []
    found = []
    for rel, tz in pairs:  # a pair per zone and release: a few hundred at most
        value = run(d.sql(_READ_DIGEST), {"name": _digest_name(rel, tz)})
        found.append((rel, tz, str(value[0][0]) if value else None))
    return found


def record_digests(run: Run, d: Dialect, release: str, digests: dict[str, str]) -> None:
    """Record each zone's digest under `release` (kept once written) and raise the queue's
    release to `release`."""
    run.many(
        statement(d, "put_meta_once"),
        [{"name": _digest_name(release, tz), "digest": v} for tz, v in sorted(digests.items())],
    )
    raise_queue_release(run, d, release)


def bump(run: Run, d: Dialect, old: str, tz: str, release: str, now: int, limit: int) -> int:
    """Mark up to `limit` pending rows of zone `tz` computed by `old` as computed by `release`,
    unchanged (the zone's rules are the same in both), skipping rows a tick holds."""
    rows = f"""SELECT id FROM reminders
        WHERE fire_release = :old AND next_fire_at IS NOT NULL AND tz = :tz
          AND (lease_until IS NULL OR lease_until < :now)
        ORDER BY fire_release, id LIMIT :limit {d.skip_locked}"""
    done = run(
        d.sql(
            f"""UPDATE reminders SET fire_release = :release
                WHERE {d.in_select("id", rows)} RETURNING id"""
        ),
        {"old": old, "tz": tz, "release": release, "now": now, "limit": limit},
    )
    return len(done)


def _digest_name(release: str, tz: str) -> str:
    return f"zone:{release}:{tz}"


def read(run: Run, d: Dialect, release: str, after_id: int, limit: int) -> list[StaleFire]:
    """Return stale rows past `after_id`, leasing nothing; see Store.read_stale."""
    rows = run(d.sql(_READ), {"release": release, "after": after_id, "limit": limit})
    return [_stale(r) for r in rows]


def raise_queue_release(run: Run, d: Dialect, release: str) -> None:
    """Set the queue's tz release to `release` unless it holds a newer one already."""
    run(statement(d, "set_tz_release"), {"release": release})


def queue_release(run: Run, d: Dialect) -> str | None:
    """Return the queue's tz release, if one was recorded."""
    found = run(d.sql(_META), {})
    return str(found[0][0]) if found else None


def moves(run: Run, d: Dialect, reminder_id: int) -> list[FireMove]:
    """Return a reminder's moved fires, oldest first."""
    rows = run(
        d.sql(
            """SELECT reminder_id, old_fire_at, new_fire_at, old_release, new_release, moved_at
               FROM fire_moves WHERE reminder_id = :id ORDER BY id"""
        ),
        {"id": reminder_id},
    )
    return [records.FireMove(int(r[0]), int(r[1]), int(r[2]), r[3], r[4], int(r[5])) for r in rows]


# The tz release the last tick read, on a database one host ticks (SQLite; PostgreSQL notes one
# per host beside its clock, store/postgres.py): written only when it changes.
TICK_RELEASE = "tick_tz_release"
_READ_TICK_RELEASE = f"SELECT value FROM queue_meta WHERE name = '{TICK_RELEASE}'"


def tick_release(run: Run, d: Dialect) -> str | None:
    """Return the tz release the last tick read, where one is recorded (SQLite)."""
    found = run(d.sql(_READ_TICK_RELEASE), {})
    return str(found[0][0]) if found else None


def count_moves(run: Run, d: Dialect) -> int:
    """Return how many fires zone rules changes have moved (stats)."""
    ((total,),) = run(d.sql("SELECT count(*) FROM fire_moves"), {})
    return int(total)


def _stale(r: Row) -> StaleFire:
    values: list[Any] = list(r)
    return records.StaleFire(
        reminder_id=int(values[0]),
        rule_kind=values[1],
        rule=values[2],
        tz=values[3],
        dtstart=int(values[4]),
        start_wall=values[5],
        after_wall=values[6],
        fire_at=int(values[7]),
        next_fire_at=int(values[8]),
        error_count=int(values[9]),
        release=values[10],
    )
