"""Copy an SQLite database into an empty MySQL / MariaDB one, ids and all (`duequeue migrate`).

As copy.py does for PostgreSQL: the rows are read in one SQLite read transaction and written in
one MySQL transaction (batched INSERTs), so the target ends up with everything or nothing. Leases
are not copied; the generated columns (schema_mysql.sql) are the server's to compute, and
InnoDB moves each id counter past the ids copied.
"""

from pathlib import Path

import apsw

from duequeue.errors import StoreError
from duequeue.store.copy import _NOT_COPIED, META, TABLES, Copied
from duequeue.store.mysql import Cursor, MySQLBackend
from duequeue.store.sqlite import SQLiteBackend

_BATCH = 1000  # rows an INSERT carries


def sqlite_to_mysql(source: str, target: str) -> Copied:
    """Copy every row of the SQLite database at `source` into the empty MySQL `target`."""
    if not Path(source).is_file():
        raise StoreError(f"no SQLite database at {source} to migrate from")
    SQLiteBackend(source, create=False).close()  # refuses a missing, foreign or newer file
    backend = MySQLBackend(target)
    try:
        conn = apsw.Connection(source, flags=apsw.SQLITE_OPEN_READONLY)
        try:
            conn.execute("BEGIN")  # one snapshot of the whole file
            counts = backend.transact_cursor(
                lambda cur: _copy(conn, cur, backend.where), what="migrate", repeatable=False
            )
        finally:
            conn.close()
    except apsw.Error as exc:
        raise StoreError(f"reading {source}: {exc}") from exc
    finally:
        backend.close()
    return Copied(**counts)


def _copy(conn: apsw.Connection, cur: Cursor, where: str) -> dict[str, int]:
    for table in TABLES:
        # Locks the rows read (none, when empty) and the gap after them: an add or a tick
        # elsewhere waits until the copy commits.
        cur.execute(f"SELECT count(*) FROM {table} FOR UPDATE")
        row = cur.fetchone()
        if row and row[0]:
            raise StoreError(
                f"MySQL {where} already holds {row[0]} {table.replace('_', ' ')}: "
                "migrate copies into an empty database only"
            )
    counts = {}
    for table in TABLES:
        columns = [
            str(r[1])
            for r in conn.execute(f"PRAGMA table_info({table})")
            if str(r[1]) not in _NOT_COPIED
        ]
        counts[table] = _insert(conn, cur, table, columns, f"SELECT {', '.join(columns)}")
    _insert(conn, cur, META, ["name", "value"], "SELECT name, value")
    # What search finds of each reminder (an FTS5 table in SQLite, a plain one here).
    _insert(conn, cur, "reminder_search", ["reminder_id", "text"], "SELECT rowid, text")
    return counts


def _insert(conn: apsw.Connection, cur: Cursor, table: str, columns: list[str], select: str) -> int:
    """Copy `select` (its FROM the table's, ordered by its first column) into `table`."""
    names = ", ".join(f'"{c}"' for c in columns)
    insert = f"INSERT INTO {table} ({names}) VALUES ({', '.join(['%s'] * len(columns))})"
    source = "reminder_search" if table == "reminder_search" else table
    rows = conn.execute(f"{select} FROM {source} ORDER BY 1")
    n = 0
    while batch := [tuple(r) for _, r in zip(range(_BATCH), rows, strict=False)]:
        cur.executemany(insert, batch)  # one multi-row INSERT a batch
        n += len(batch)
    return n
