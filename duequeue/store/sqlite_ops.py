"""The operator's Store methods on SQLite: transactions around ops_sql's shared queries, and
what only SQLite does (bulk add with given ids, PRAGMA health checks).

`OperatorQueries` gives SQLiteStore these Store methods; each opens one transaction and hands its
cursor to a function, which never commits or reads the clock.
"""

import contextlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, cast

import apsw

from duequeue.store import ops_sql, reads
from duequeue.store.base import (
    Change,
    DeadLetter,
    HealthCheck,
    NewReminder,
    PruneCounts,
    Stats,
)
from duequeue.store.rows import REMINDER_COLUMNS, REMINDER_FIELDS, add_chunks, reminder_values
from duequeue.store.sql import SQLITE, Row
from duequeue.store.sqlite_errors import guarded


class OperatorQueries:
    """The operator's Store methods, mixed into SQLiteStore (which provides _conn and _write)."""

    path: Path
    _conn: apsw.Connection
    schema_version: int

    def _write(self) -> contextlib.AbstractContextManager[apsw.Cursor]:
        raise NotImplementedError  # pragma: no cover - SQLiteStore's own

    @guarded
    def add_many(self, reminders: Iterable[NewReminder], now: int) -> tuple[int, int]:
        with self._write() as cur:
            return add_many(cur, reminders, now)

    @guarded
    def dead_letters(self, reminder_id: int) -> list[DeadLetter]:
        return reads.dead_letters(SQLiteRun(self._conn.cursor()), SQLITE, reminder_id)

    @guarded
    def cancel(self, ids: Sequence[int], now: int) -> list[Change]:
        with self._write() as cur:
            return ops_sql.cancel(SQLiteRun(cur), SQLITE, ids, now)

    @guarded
    def retry_dead(self, ids: Sequence[int] | None, now: int) -> list[Change]:
        with self._write() as cur:
            return ops_sql.retry_dead(SQLiteRun(cur), SQLITE, ids, now)

    @guarded
    def stats(self, now: int) -> Stats:
        with self._read() as cur:  # one snapshot, so the counts agree with each other
            return ops_sql.stats(SQLiteRun(cur), SQLITE, now)

    @guarded
    def prune(self, before: int, *, dry_run: bool = False) -> PruneCounts:
        try:
            with self._write() as cur:
                counts = ops_sql.prune(SQLiteRun(cur), SQLITE, before)
                if dry_run:
                    raise ops_sql.DryRun(counts)  # rolls the deletions back
        except ops_sql.DryRun as undone:
            counts = undone.counts
        return counts

    @guarded
    def pending_channels(self) -> set[str]:
        return reads.pending_channels(SQLiteRun(self._conn.cursor()), SQLITE)

    def notify_addresses(self, limit: int) -> list[str]:
        return reads.notify_addresses(SQLiteRun(self._conn.cursor()), SQLITE, limit)

    def health(self) -> list[HealthCheck]:
        return health(self._conn, str(self.path), self.schema_version)

    @contextlib.contextmanager
    def _read(self) -> Iterator[apsw.Cursor]:
        self._conn.execute("BEGIN")
        try:
            yield self._conn.cursor()
        finally:
            self._conn.execute("COMMIT")


def _fetch(cur: apsw.Cursor, sql: str, args: Any = None) -> list[Row]:
    return cast(list[Row], cur.execute(sql, args).fetchall())


class SQLiteRun:
    """A cursor as the Run that SQL written once goes through (see sql.py)."""

    __slots__ = ("_cur",)

    def __init__(self, cur: apsw.Cursor) -> None:
        self._cur = cur

    def __call__(self, sql: str, args: Mapping[str, Any], /) -> list[Row]:
        return _fetch(self._cur, sql, args)

    def many(self, sql: str, rows: Sequence[Mapping[str, Any]], /) -> list[Row]:
        if not rows:
            return []
        return cast(list[Row], self._cur.executemany(sql, rows).fetchall())

    def changed(self) -> int:
        return int(self._cur.connection.changes())


def add_many(cur: apsw.Cursor, reminders: Iterable[NewReminder], now: int) -> tuple[int, int]:
    """Insert reminders and their targets a chunk at a time; return (added, skipped)."""
    return add_chunks(reminders, lambda chunk: _add_chunk(cur, chunk, now))


def _add_chunk(cur: apsw.Cursor, reminders: Sequence[NewReminder], now: int) -> tuple[int, int]:
    # Ids are given, not returned one by one, so both inserts run as executemany (about twice as
    # fast for 100,000 rows). Safe: the transaction holds the write lock, and max(id) + n is the
    # id SQLite would pick itself. The UNIQUE key still decides, as in `add`: a key seen before,
    # even earlier in this batch, inserts nothing, and its id is simply left unused.
    base = int(_fetch(cur, "SELECT coalesce(max(id), 0) FROM reminders")[0][0])
    cur.executemany(
        f"""INSERT INTO reminders (id, {REMINDER_COLUMNS})
           VALUES (?, {REMINDER_PARAMS})
           ON CONFLICT (key) DO NOTHING""",
        [(base + i, *reminder_values(r, now)) for i, r in enumerate(reminders, 1)],
    )
    added = {int(row[0]) for row in _fetch(cur, "SELECT id FROM reminders WHERE id > ?", (base,))}
    cur.executemany(
        "INSERT OR IGNORE INTO targets (reminder_id, channel, address, secret) VALUES (?, ?, ?, ?)",
        [
            (base + i, t.channel, t.address, t.secret)
            for i, r in enumerate(reminders, 1)
            if base + i in added
            for t in r.targets
        ],
    )
    return len(added), len(reminders) - len(added)


def health(conn: apsw.Connection, path: str, expected_version: int) -> list[HealthCheck]:
    """Check schema version, integrity and journal mode."""
    cur = conn.cursor()
    version = int(_fetch(cur, "PRAGMA user_version")[0][0])
    checks = [ops_sql.schema_check(path, version, expected_version)]
    problems = [str(r[0]) for r in _fetch(cur, "PRAGMA integrity_check(20)")]
    ok = problems == ["ok"]
    checks.append(
        HealthCheck(
            "database integrity",
            ok,
            "PRAGMA integrity_check: ok" if ok else "; ".join(problems),
            None
            if ok
            else "stop cron, copy the file, then `sqlite3 FILE '.recover' | sqlite3 NEW` "
            "and point --db at NEW",
        )
    )
    mode = str(_fetch(cur, "PRAGMA journal_mode")[0][0]).lower()
    checks.append(
        HealthCheck(
            "database journal",
            mode == "wal",
            f"journal_mode={mode}",
            None if mode == "wal" else "`sqlite3 FILE 'PRAGMA journal_mode=WAL'`",
        )
    )
    return checks


REMINDER_PARAMS = ", ".join("?" for _ in REMINDER_FIELDS)
