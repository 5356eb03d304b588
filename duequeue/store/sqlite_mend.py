"""Text in an SQLite file that is not UTF-8: found, made readable, and its reminder held.

SQLite stores whatever bytes a writer gives it as TEXT; duequeue writes only UTF-8, but a hand
(`sqlite3` with a wrong encoding, a broken tool) can store other bytes, and reading such a cell
fails in the driver: before this, one such row made every tick (and `inspect`) fail, every
minute, for every reminder. The backend calls `mend` when a transaction met such a cell, then
runs it once more: each bad cell is rewritten with its undecodable bytes as U+FFFD, and a
reminder whose sent text (subject, body, data, rule, zone, key, a target's address) was bad is
paused with a last error saying which column and what it held, so that nothing goes out in a
form nobody wrote until an operator has looked (`inspect --all` shows it paused; `resume ID`
sends it). Text no message carries (an error, a lease owner) is only mended. PostgreSQL refuses
such bytes when they are written, so this is SQLite's alone.
"""

from collections.abc import Callable
from typing import Any

import apsw

from duequeue.store import pause_sql
from duequeue.store.sql import Dialect, Row, Run

# The columns whose text a delivery carries: a reminder with a bad one is held for a person.
_SENT = {
    "reminders": ("key", "subject", "body", "data", "rule", "tz"),
    "targets": ("address", "secret"),
}


def _bad(*values: Any) -> int:
    """SQL dq_not_utf8(blob): 1 when the bytes are not UTF-8."""
    (value,) = values
    if not isinstance(value, bytes):
        return 0
    try:
        value.decode("utf-8")
    except UnicodeDecodeError:
        return 1
    return 0


def mend(conn: apsw.Connection, dialect: Dialect, make_run: Callable[[apsw.Cursor], Run]) -> int:
    """Rewrite every text cell that is not UTF-8 and pause the reminders whose sent text it was,
    in one transaction (the caller holds none); return how many cells were rewritten."""
    conn.create_scalar_function("dq_not_utf8", _bad, 1, deterministic=True)
    cur = conn.cursor()
    cur.execute("BEGIN IMMEDIATE")
    try:
        mended, held = _mend_all(cur)
        (stamp,) = cur.execute("SELECT CAST(unixepoch('subsec') * 1000 AS INTEGER)").fetchall()
        now = int(stamp[0])  # type: ignore[arg-type]
        for rid, why in held.items():
            _hold(cur, make_run(cur), dialect, rid, why, now)
        cur.execute("COMMIT")
    except BaseException:
        cur.execute("ROLLBACK")
        raise
    return mended


def _mend_all(cur: apsw.Cursor) -> tuple[int, dict[int, str]]:
    tables = [
        str(r[0])
        for r in cur.execute(
            "SELECT name FROM sqlite_schema WHERE type = 'table' AND sql NOT LIKE 'CREATE VIRTUAL%'"
            " AND name NOT LIKE 'sqlite_%' AND name NOT LIKE 'reminder_search_%'"
        ).fetchall()
    ]
    mended = 0
    held: dict[int, str] = {}
    for table in tables:
        columns = [
            str(r[1])
            for r in cur.execute(f'PRAGMA table_info("{table}")').fetchall()
            if "TEXT" in str(r[2]).upper() or not r[2]
        ]
        has_rowid = _has_rowid(cur, table)
        if not has_rowid:
            continue  # WITHOUT ROWID tables here hold only names duequeue writes itself
        for column in columns:
            rows: list[Row] = cur.execute(
                f'SELECT rowid, CAST("{column}" AS BLOB) FROM "{table}"'
                f' WHERE typeof("{column}") = \'text\' AND dq_not_utf8(CAST("{column}" AS BLOB))'
            ).fetchall()
            for rowid, raw in rows:
                fixed = bytes(raw).decode("utf-8", errors="replace")
                cur.execute(f'UPDATE "{table}" SET "{column}" = ? WHERE rowid = ?', (fixed, rowid))
                mended += 1
                rid = (
                    _reminder_of(cur, table, int(rowid)) if column in _SENT.get(table, ()) else None
                )
                if rid is not None:
                    shown = bytes(raw)[:40].hex() + ("..." if len(raw) > 40 else "")
                    held.setdefault(
                        rid,
                        f"held: {table}.{column} held text that is not UTF-8 (bytes {shown}),"
                        " written outside duequeue; now shown with U+FFFD: check it (edit), then"
                        f" `duequeue resume {rid}`",
                    )
    return mended, held


def _has_rowid(cur: apsw.Cursor, table: str) -> bool:
    try:
        cur.execute(f'SELECT rowid FROM "{table}" LIMIT 0').fetchall()
    except apsw.SQLError:
        return False
    return True


def _reminder_of(cur: apsw.Cursor, table: str, rowid: int) -> int | None:
    if table == "reminders":
        return rowid
    found = cur.execute("SELECT reminder_id FROM targets WHERE rowid = ?", (rowid,)).fetchall()
    return int(found[0][0]) if found else None  # type: ignore[arg-type]


def _hold(cur: apsw.Cursor, run: Run, dialect: Dialect, rid: int, why: str, now: int) -> None:
    changes = pause_sql.pause(run, dialect, [rid], now)
    if changes and changes[0].skipped is None:
        cur.execute("UPDATE reminders SET last_error = ? WHERE id = ?", (why, rid))
