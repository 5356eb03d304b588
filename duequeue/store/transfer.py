"""Copy one duequeue database into another, any of SQLite, PostgreSQL and MySQL each way, ids
and all (`duequeue migrate`).

A reader per database streams the source's rows out of one read snapshot; a writer per database
loads them into the target in one transaction (everything or nothing), table by table over the
column lists of copy_rows.py. SQLite's reader and writer are in copy_sqlite.py, PostgreSQL's in
copy.py (COPY), MySQL's in copy_mysql.py (batched INSERTs); the last two load their driver, so
only when a URL names them.
"""

import os
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlsplit

from duequeue.errors import BadInputError
from duequeue.shared.lazy import LazyModule
from duequeue.store import backend_module, safe_url, scheme
from duequeue.store.copy_rows import (
    META,
    META_COLUMNS,
    SEARCH,
    SEARCH_COLUMNS,
    TABLES,
    Copied,
    Load,
    Reader,
    Writer,
    columns,
)
from duequeue.store.copy_sqlite import SQLiteReader, SQLiteWriter
from duequeue.store.schema import STEPS_KEY

if TYPE_CHECKING:
    from duequeue.store import copy as copy_pg
    from duequeue.store import copy_mysql
else:
    # Loaded on first use: they need psycopg or PyMySQL (optional dependencies).
    copy_pg = LazyModule("duequeue.store.copy")
    copy_mysql = LazyModule("duequeue.store.copy_mysql")


# The schemes migrate reads and writes, by database (a scheme register() adds is not among them).
FAMILIES = {
    "sqlite": "sqlite",
    "postgresql": "postgresql",
    "postgres": "postgresql",
    "mysql": "mysql",
    "mariadb": "mysql",
}


def copy(source: str, target: str) -> Copied:
    """Copy every duequeue row of `source` into the empty `target` (SQLite paths or URLs)."""
    for value, field in ((source, "db"), (target, "to")):
        if scheme(value) not in FAMILIES:
            raise BadInputError(
                f"{safe_url(value)}: migrate copies between SQLite files, postgresql:// and "
                "mysql:// databases",
                field=field,
            )
    if _identity(source) == _identity(target):
        raise BadInputError(f"{safe_url(target)} is the database migrate copies from", field="to")
    reader = _reader(source)  # opened through its backend: refused if foreign or newer
    try:
        writer = _writer(target)
        ok = False
        try:
            counts = writer.transact(lambda load: _fill(reader, load))
            ok = True
        finally:
            writer.close(ok)
    finally:
        reader.close()
    return Copied(**counts)


def _fill(reader: Reader, load: Load) -> dict[str, int]:
    load.refuse_unless_empty()
    counts = {}
    for table in TABLES:
        names = columns(table)
        counts[table] = load.insert(table, names, reader.rows(table, names))
        load.move_ids(table)
    # Not the schema's own row: the target's schema is this version's, made when it was opened.
    meta = (row for row in reader.rows(META, META_COLUMNS) if row[0] != STEPS_KEY)
    load.insert(META, META_COLUMNS, meta)
    load.insert(SEARCH, SEARCH_COLUMNS, reader.rows(SEARCH, SEARCH_COLUMNS))
    return counts


def _identity(db: str) -> tuple[str, ...]:
    """What tells two --db values apart: a file's real path, a server's host, port and
    database (the user and options aside)."""
    family = FAMILIES[scheme(db)]
    if family == "sqlite":
        return ("sqlite", os.path.realpath(db))
    parts = urlsplit(db)
    default = {"postgresql": 5432, "mysql": 3306}.get(family)
    try:
        port = parts.port or default
    except ValueError:
        port = None
    host = (parts.hostname or "localhost").lower()
    return (family, host, str(port), unquote(parts.path.lstrip("/")))


def _reader(db: str) -> Reader:
    family = FAMILIES[scheme(db)]
    if family == "sqlite":
        return SQLiteReader(db)
    backend_module(db)  # a clear error when the driver is missing
    if family == "mysql":
        return copy_mysql.MySQLReader(db)
    return copy_pg.PostgresReader(db)


def _writer(db: str) -> Writer:
    family = FAMILIES[scheme(db)]
    if family == "sqlite":
        return SQLiteWriter(db)
    backend_module(db)
    if family == "mysql":
        return copy_mysql.MySQLWriter(db)
    return copy_pg.PostgresWriter(db)
