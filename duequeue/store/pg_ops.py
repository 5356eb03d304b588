"""What only PostgreSQL does: the cursor as a Run, bulk add, and health checks.

The operator's other queries are written once in ops_sql.py. Each function runs inside a
transaction the PostgresStore opened and gets its cursor; none of them commits or reads the clock.
"""

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from duequeue.store import ops_sql
from duequeue.store.base import HealthCheck, NewReminder
from duequeue.store.pg_session import Cursor
from duequeue.store.rows import REMINDER_COLUMNS, REMINDER_FIELDS, add_chunks, reminder_values
from duequeue.store.sql import Row


class PgRun:
    """A cursor as the Run that SQL written once goes through (see sql.py)."""

    __slots__ = ("_cur",)

    def __init__(self, cur: Cursor) -> None:
        self._cur = cur

    def __call__(self, sql: str, args: Mapping[str, Any], /) -> list[Row]:
        self._cur.execute(sql.encode(), args)
        return self._cur.fetchall() if self._cur.description is not None else []

    def many(self, sql: str, rows: Sequence[Mapping[str, Any]], /) -> list[Row]:
        if not rows:
            return []
        # Pipelined: the batch costs about one round trip, not one per row.
        self._cur.executemany(sql.encode(), rows, returning=True)
        found: list[Row] = []
        while True:
            if self._cur.description is not None:
                found.extend(self._cur.fetchall())
            if not self._cur.nextset():
                return found

    def changed(self) -> int:
        return self._cur.rowcount


_INSERT = f"""INSERT INTO reminders ({REMINDER_COLUMNS})
             VALUES ({", ".join("%s" for _ in REMINDER_FIELDS)})
             ON CONFLICT (key) DO NOTHING RETURNING id"""


def _insert_targets(cur: Cursor, added: Sequence[tuple[int, NewReminder]]) -> None:
    """Insert the targets of added reminders in one statement, in their given order."""
    rows = [(rid, t.channel, t.address, t.secret) for rid, r in added for t in r.targets]
    if not rows:
        return
    rids, channels, addresses, secrets = (list(c) for c in zip(*rows, strict=True))
    cur.execute(
        """INSERT INTO targets (reminder_id, channel, address, secret)
           SELECT rid, c, a, s FROM unnest(%s::bigint[], %s::text[], %s::text[], %s::text[])
               WITH ORDINALITY AS t(rid, c, a, s, n)
           ORDER BY n ON CONFLICT DO NOTHING""",
        (rids, channels, addresses, secrets),
    )


def insert_reminder(cur: Cursor, r: NewReminder, now: int) -> int | None:
    """Insert one reminder and its targets; return its id, or None if its key exists."""
    cur.execute(_INSERT, reminder_values(r, now))
    row = cur.fetchone()
    if row is None:
        return None
    rid = int(row[0])
    _insert_targets(cur, [(rid, r)])
    return rid


def add_many(cur: Cursor, reminders: Iterable[NewReminder], now: int) -> tuple[int, int]:
    """Insert reminders and their targets a chunk at a time; return (added, skipped)."""
    return add_chunks(reminders, lambda chunk: _add_chunk(cur, chunk, now))


def _add_chunk(cur: Cursor, reminders: Sequence[NewReminder], now: int) -> tuple[int, int]:
    # Pipelined: one round trip for the batch, not one per reminder. Each statement still runs
    # in order, so the UNIQUE key decides as in `add`: a key seen before (even earlier in this
    # batch) inserts nothing and returns no row.
    cur.executemany(_INSERT, [reminder_values(r, now) for r in reminders], returning=True)
    added: list[tuple[int, NewReminder]] = []
    for r in reminders:
        row = cur.fetchone()
        if row is not None:
            added.append((int(row[0]), r))
        cur.nextset()
    _insert_targets(cur, added)
    return len(added), len(reminders) - len(added)


def health(cur: Cursor, where: str, expected_version: int) -> list[HealthCheck]:
    """Check the schema version, the server, and the index that holds the core rule."""
    cur.execute("SELECT value FROM duequeue_meta WHERE name = 'schema_version'")
    row = cur.fetchone()
    version = int(row[0]) if row else 0
    checks = [ops_sql.schema_check(where, version, expected_version)]
    cur.execute("SHOW server_version")
    server = cur.fetchone()
    checks.append(
        HealthCheck("database server", True, f"PostgreSQL {server[0] if server else '?'}")
    )
    # The "one sent per target and fire" rule lives in this unique index; a failed concurrent
    # rebuild can leave it invalid, and then nothing stops a second `sent`.
    cur.execute(
        """SELECT i.indisvalid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
           WHERE c.relname = 'deliveries_sent_once'
             AND c.relnamespace = current_schema()::regnamespace"""
    )
    index = cur.fetchone()
    ok = bool(index and index[0])
    checks.append(
        HealthCheck(
            "database integrity",
            ok,
            "index deliveries_sent_once: valid"
            if ok
            else "index deliveries_sent_once: " + ("invalid" if index else "missing"),
            None
            if ok
            else "stop cron, then in psql `REINDEX INDEX deliveries_sent_once` (if invalid) or "
            "create it as schema_postgres.sql does (if missing)",
        )
    )
    return checks
