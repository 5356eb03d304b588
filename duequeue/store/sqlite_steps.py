"""An SQLite database's schema shape, read and written (schema_steps.py has the rules): loaded
only when a database is not at this version's floor, by doctor and by `migrate --contract`."""

from typing import Any, cast

import apsw

from duequeue.errors import StoreError
from duequeue.store import schema, schema_steps
from duequeue.store.sql import Row


def _fetch(cur: apsw.Cursor, sql: str, args: Any = None) -> list[Row]:
    return cast(list[Row], cur.execute(sql, args).fetchall())


def shape(cur: apsw.Cursor, floor: int) -> schema_steps.Shape:
    """Return the shape of the database whose user_version is `floor` (see schema.py)."""
    try:
        rows = _fetch(cur, "SELECT value FROM queue_meta WHERE name = ?", (schema.STEPS_KEY,))
    except apsw.SQLError:
        rows = []  # before version 8: no queue_meta, the version is the floor
    return schema_steps.shape(floor, rows[0][0] if rows else None)


def apply(
    cur: apsw.Cursor,
    found: schema_steps.Shape,
    steps: list[schema.Migration],
    *,
    expand: bool = False,
) -> schema_steps.Shape:
    """Run migration `steps` on the database `found`, in one transaction (the caller's);
    record and return its shape after them (`expand`: to_expand's steps, see schema_steps.after)."""
    done = schema_steps.after(found, steps, expanded=expand)
    if done == found:
        return found
    for step in steps:
        cur.execute(step.sql)
        # A migration may edit a table's stored CREATE text (writable_schema); a higher
        # schema_version makes every connection read the new text. Harmless otherwise.
        changed = int(_fetch(cur, "PRAGMA schema_version")[0][0])
        cur.execute(f"PRAGMA schema_version = {changed + 1}")
    broken = _fetch(cur, "PRAGMA foreign_key_check")
    if broken:
        raise StoreError(f"upgrading the schema broke {len(broken)} foreign keys; nothing changed")
    cur.execute(f"PRAGMA user_version = {done.floor}")
    row = done.steps_row()
    if row is None:
        cur.execute("DELETE FROM queue_meta WHERE name = ?", (schema.STEPS_KEY,))
    else:
        cur.execute(
            "INSERT INTO queue_meta (name, value) VALUES (?, ?) "
            "ON CONFLICT (name) DO UPDATE SET value = excluded.value",
            (schema.STEPS_KEY, row),
        )
    return done
