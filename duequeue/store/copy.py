"""Copy an SQLite database into an empty PostgreSQL one, ids and all (`duequeue migrate`).

The rows are read in one SQLite read transaction and written with COPY in one PostgreSQL
transaction: the target ends up with everything or nothing. Leases are not copied: a lease names
a tick on the old database, and cron should be stopped while migrating anyway.
"""

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import apsw

from duequeue.errors import StoreError
from duequeue.store import schema
from duequeue.store.postgres import Cursor, PostgresBackend
from duequeue.store.sqlite import SQLiteBackend

# Parents before children, so the foreign keys hold row by row.
TABLES = (
    "reminders",
    "targets",
    "deliveries",
    "dead_letters",
    "target_retries",
    "reminder_changes",
    "tick_marks",
    "fire_moves",
)
# Copied as they are, without ids: the queue's tz release and its zones' digests.
META = "queue_meta"
STEPS_KEY = schema.STEPS_KEY
_NOT_COPIED = {"lease_owner", "lease_until"}


@dataclass(frozen=True, slots=True)
class Copied:
    """How many rows of each table went over."""

    reminders: int
    targets: int
    deliveries: int
    dead_letters: int
    target_retries: int
    reminder_changes: int = 0  # what reschedule and edit did (history)
    tick_marks: int = 0  # the last successful tick's time (one row at most)
    fire_moves: int = 0


def sqlite_to_postgres(source: str, target: str) -> Copied:
    """Copy every row of the SQLite database at `source` into the empty PostgreSQL `target`."""
    if not Path(source).is_file():
        raise StoreError(f"no SQLite database at {source} to migrate from")
    SQLiteBackend(source, create=False).close()  # refuses a missing, foreign or newer file;
    # brings an older one up to date
    backend = PostgresBackend(target)
    try:
        conn = apsw.Connection(source, flags=apsw.SQLITE_OPEN_READONLY)
        try:
            conn.execute("BEGIN")  # one snapshot of the whole file
            counts = backend.transact_cursor(
                lambda cur: _copy(conn, cur, backend.where),
                what="migrate",
                repeatable=False,  # a lost connection rolls it all back; run migrate again
            )
        finally:
            conn.close()
    except apsw.Error as exc:
        raise StoreError(f"reading {source}: {exc}") from exc
    finally:
        backend.close()
    return Copied(**counts)


def _copy(conn: apsw.Connection, cur: Cursor, where: str) -> dict[str, int]:
    # Nobody may add or tick in between the emptiness check and the copy.
    cur.execute(f"LOCK TABLE {', '.join(TABLES)}, {META} IN EXCLUSIVE MODE")
    for table in TABLES:
        cur.execute(f"SELECT count(*) FROM {table}")
        row = cur.fetchone()
        if row and row[0]:
            raise StoreError(
                f"PostgreSQL {where} already holds {row[0]} {table.replace('_', ' ')}: "
                "migrate copies into an empty database only"
            )
    counts = {}
    for table in TABLES:
        columns = [
            str(r[1])
            for r in conn.execute(f"PRAGMA table_info({table})")
            if str(r[1]) not in _NOT_COPIED
        ]
        names = ", ".join(columns)
        n = 0
        with cur.copy(f"COPY {table} ({names}) FROM STDIN".encode()) as copy:
            for values in _rows(conn, f"SELECT {names} FROM {table} ORDER BY id"):
                copy.write_row(values)
                n += 1
        counts[table] = n
        # Rows came with their ids: move the id sequence past them, or the next add collides.
        cur.execute(
            f"""SELECT setval(pg_get_serial_sequence('{table}', 'id'),
                              (SELECT coalesce(max(id), 0) + 1 FROM {table}), false)""".encode()
        )
    # Not the schema's own row: the new database's schema is this version's (schema.py).
    with cur.copy(f"COPY {META} (name, value) FROM STDIN".encode()) as copy:
        for values in _rows(
            conn, f"SELECT name, value FROM {META} WHERE name <> '{STEPS_KEY}' ORDER BY name"
        ):
            copy.write_row(values)
    # What search finds of each reminder (an FTS5 table in SQLite, a plain one here).
    with cur.copy(b"COPY reminder_search (reminder_id, text) FROM STDIN") as copy:
        for values in _rows(conn, "SELECT rowid, text FROM reminder_search ORDER BY rowid"):
            copy.write_row(values)
    return counts


def _rows(conn: apsw.Connection, sql: str) -> Iterator[tuple[Any, ...]]:
    yield from conn.execute(sql)
