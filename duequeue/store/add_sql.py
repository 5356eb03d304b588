"""Adding reminders, written once for every dialect: one with its targets, or a stream of them
in chunks (`import`).

A key is unique among live reminders (pending or dead); a done or cancelled one frees it. The
database's partial unique index decides (reminders_live_key), not a check before the insert, so
concurrent adds of one key land once. `add` of a live key writes nothing: with the same content
it returns the existing id (idempotent), with other content it raises KeyConflictError;
`add_many` counts a live key with the same content as skipped and refuses other content, as
`add` does, after checking every row.
"""

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, cast

from duequeue.errors import KeyConflictError
from duequeue.store import reads, search_sql
from duequeue.store.records import NewReminder
from duequeue.store.rows import REMINDER_FIELDS, add_chunks, reminder_values
from duequeue.store.sql import Dialect, Row, Run
from duequeue.store.statements import statement

# The predicate of reminders_live_key (the inserts are named: statements/add.sql).
LIVE = "done_at IS NULL AND cancelled_at IS NULL"

_KEYS_AT_ONCE = 500  # keys an import's conflict check looks up in one query
# SQLite's page cache (KiB) while add_many writes; the default is 2,000 KiB.
BULK_CACHE_KIB = 16_384

# What makes two adds of one key the same reminder, in NewReminder's names.
_CONTENT = ("subject", "body", "data", "rule_kind", "rule", "tz", "dtstart", "misfire_grace_ms")
_BY_KEY = f"SELECT id, {', '.join(_CONTENT)} FROM reminders WHERE key = :key AND {LIVE}"


def add(run: Run, d: Dialect, r: NewReminder, now: int) -> tuple[int, bool]:
    """Insert a reminder and its targets; return (id, created). See Store.add."""
    if r.key is not None:
        # Looked up first so that repeating a keyed add does not use up an id.
        found = run(d.sql(_BY_KEY), {"key": r.key})
        if found:
            return _same(run, d, r, found[0]), False
    rows = run(statement(d, "insert_reminder"), _values(r, now))
    if not rows:  # another add of the key committed between the lookup and the insert
        (existing,) = run(d.sql(_BY_KEY), {"key": r.key})
        return _same(run, d, r, existing), False
    rid = int(rows[0][0])
    _targets(run, d, [(rid, r)])
    _digests(run, d, [r])
    _search(run, d, [(rid, r)])
    return rid, True


def _same(run: Run, d: Dialect, r: NewReminder, row: Row) -> int:
    """Return the id of the live reminder `row` holding r's key if it is r, else raise."""
    rid = int(row[0])
    named = _differ(r, row[1:], reads.targets(run, d, [rid]).get(rid, ()))
    if named:
        raise KeyConflictError(
            f"{r.key!r} is the key of reminder {rid}, which differs ({named}); nothing added "
            f"(`duequeue edit {rid}` / `reschedule {rid}` change it, `cancel {rid}` frees the key)",
            existing=rid,
        )
    return rid


def _differ(r: NewReminder, stored: Sequence[Any], targets: Iterable[Any]) -> str:
    """Return what differs between r and the live reminder holding its key (its _CONTENT
    values and its targets), named for the user; '' when it is the same reminder."""
    differ = [
        name
        for name, value in zip(_CONTENT, stored, strict=True)
        if value != getattr(r, name) and not (name == "dtstart" and r.relative)
    ]
    if {(t.channel, t.address, t.secret) for t in targets} != {
        (t.channel, t.address, t.secret) for t in r.targets
    }:
        differ.append("targets")
    return ", ".join("time" if n == "dtstart" else n for n in differ)


def add_many(run: Run, d: Dialect, reminders: Iterable[NewReminder], now: int) -> tuple[int, int]:
    """Insert reminders and their targets a chunk at a time; return (added, skipped).

    A reminder whose key a live one holds is skipped when it is that reminder (as `add` is
    idempotent); with other content it is a conflict: KeyConflictError, after every chunk is
    checked, with each conflict's position in `reminders` (from 1) as its line number.
    """
    if d.name != "sqlite":
        return _add_many(run, d, reminders, now)
    # One transaction dirties pages of the key index all over: with SQLite's default 2 MB
    # cache they were spilled into the WAL again and again (BENCHMARKS.md, issue 34's import).
    was = int(run("PRAGMA cache_size", {})[0][0])  # KiB when negative, else pages (of 4 KiB)
    if (-was if was < 0 else 4 * was) >= BULK_CACHE_KIB:
        return _add_many(run, d, reminders, now)
    run(f"PRAGMA cache_size = -{BULK_CACHE_KIB}", {})
    try:
        return _add_many(run, d, reminders, now)
    finally:
        run(f"PRAGMA cache_size = {was}", {})


def _add_many(run: Run, d: Dialect, reminders: Iterable[NewReminder], now: int) -> tuple[int, int]:
    conflicts: list[tuple[int, str, int, str]] = []
    seen = 0

    def add_chunk(chunk: list[NewReminder]) -> tuple[int, int]:
        nonlocal seen
        counts = _add_chunk(run, d, chunk, now, seen, conflicts)
        seen += len(chunk)
        return counts

    counts = add_chunks(reminders, add_chunk)
    if conflicts:
        line, key, rid, _ = conflicts[0]
        raise KeyConflictError(
            f"{len(conflicts)} reminders name a live key with other content (the first, "
            f"{line}: {key!r}, the key of reminder {rid})",
            existing=rid,
            conflicts=tuple(conflicts),
        )
    return counts


def _add_chunk(
    run: Run,
    d: Dialect,
    chunk: Sequence[NewReminder],
    now: int,
    offset: int,
    conflicts: list[tuple[int, str, int, str]],
) -> tuple[int, int]:
    # One batch for the chunk. Each insert still runs in order, so the UNIQUE key decides as in
    # `add`: a key seen before, even earlier in this chunk, inserts nothing and returns no row.
    values = [reminder_values(r, now) for r in chunk]
    returned = run.many(statement(d, "insert_reminder"), bind(d, REMINDER_FIELDS, values))
    added, skipped = _added(chunk, returned)
    _targets(run, d, added)
    _digests(run, d, [r for _, r in added])
    _search(run, d, added)
    if skipped:
        _conflicts(run, d, [(offset + i + 1, chunk[i]) for i in skipped], conflicts)
    return len(added), len(chunk) - len(added)


def _conflicts(
    run: Run,
    d: Dialect,
    skipped: Sequence[tuple[int, NewReminder]],
    found: list[tuple[int, str, int, str]],
) -> None:
    """Append to `found` each skipped reminder that differs from the live one holding its key
    (read after the chunk's inserts, so a key earlier in the same import counts too): one
    query for the chunk's keys and one for their targets, never one a row."""
    keys = sorted({r.key for _, r in skipped if r.key is not None})
    live: dict[str, Row] = {}
    targets: dict[int, tuple[Any, ...]] = {}
    # In slices: PostgreSQL plans `key = ANY(10,000 keys)` as a sequential scan of a million
    # rows (0.6 s), 500 keys as an index scan (~3 ms).
    for start in range(0, len(keys), _KEYS_AT_ONCE):
        rows = run(
            d.sql(f"SELECT id, key, {', '.join(_CONTENT)} FROM reminders WHERE {LIVE} AND "
                  f"{d.in_ids('key', 'keys')}"),
            {"keys": d.texts(keys[start : start + _KEYS_AT_ONCE])},
        )  # fmt: skip
        live.update((row[1], row) for row in rows)
        targets.update(reads.targets(run, d, [int(row[0]) for row in rows]))
    for position, r in skipped:
        row = live[str(r.key)]  # skipped: so it has a key, which a live row holds
        rid = int(row[0])
        named = _differ(r, row[2:], targets.get(rid, ()))
        if named:
            found.append((position, str(r.key), rid, named))


def _added(
    chunk: Sequence[NewReminder], returned: Sequence[Row]
) -> tuple[list[tuple[int, NewReminder]], list[int]]:
    """Pair the rows an insert batch returned (id, key), in order, with the reminders they are;
    return them and the positions in the chunk of the reminders skipped.

    A keyless reminder always inserts; a keyed one returns its row only if it did. So walking
    the chunk in order, a reminder was added exactly when the next returned row has its key.
    """
    rows = iter(returned)
    upcoming = next(rows, None)
    added = []
    skipped = []
    for i, r in enumerate(chunk):
        if upcoming is not None and upcoming[1] == r.key:
            added.append((int(upcoming[0]), r))
            upcoming = next(rows, None)
        else:
            skipped.append(i)
    return added, skipped


def _targets(run: Run, d: Dialect, added: Sequence[tuple[int, NewReminder]]) -> None:
    values = [(rid, t.channel, t.address, t.secret) for rid, r in added for t in r.targets]
    names = ("rid", "channel", "address", "secret")
    run.many(statement(d, "insert_target"), bind(d, names, values))


def bind(
    d: Dialect, names: Sequence[str], rows: list[tuple[Any, ...]]
) -> Sequence[Mapping[str, Any]]:
    """Return rows of values for a batch (`names`: the parameters, in the order the statement
    first names them) as the driver binds them fastest.

    SQLite (apsw) binds a tuple to `:name` parameters by position, about a microsecond a row
    less than a dict whose every name it looks up (issue 34's import); psycopg's `%(name)s`
    needs the dict. Typed as the mappings Run.many declares, which is what they stand for.
    """
    if d.paramstyle == "named":
        return cast(Sequence[Mapping[str, Any]], rows)
    return [dict(zip(names, row, strict=True)) for row in rows]


def _search(run: Run, d: Dialect, added: Sequence[tuple[int, NewReminder]]) -> None:
    search_sql.put(
        run, d, [(rid, search_sql.text(r.subject, r.key, r.targets)) for rid, r in added]
    )


# The digest of a zone's rules under the release that computed a new row's fires: a later tz
# data update that leaves the zone's rules alone then marks the row instead of computing it.
def _digests(run: Run, d: Dialect, added: Sequence[NewReminder]) -> None:
    found = {
        f"zone:{r.release}:{r.tz}": r.zone_digest for r in added if r.zone_digest and r.release
    }
    run.many(
        statement(d, "put_meta_once"), [{"name": n, "digest": v} for n, v in sorted(found.items())]
    )


def _values(r: NewReminder, now: int) -> dict[str, Any]:
    return dict(zip(REMINDER_FIELDS, reminder_values(r, now), strict=True))
