"""schema.sql (SQLite) and schema_postgres.sql describe the same database.

Both schemas are applied the way duequeue applies them (by opening a store) and read back from
the live databases' catalogs, not from the files: SQLite's PRAGMAs against PostgreSQL's
information_schema and pg_catalog. Tables, columns (name, kind, nullability, default),
foreign keys, indexes (name, columns, uniqueness, partial WHERE) and the schema version must
agree, so a change made to one file alone fails here.

The one part each dialect builds its own way is search's (version 10): an FTS5 table with a
trigger in SQLite, a table with a pg_trgm index in PostgreSQL. Both are left out of the shapes
and checked on their own below.
"""

import re
from pathlib import Path
from typing import Any

import apsw

from duequeue.store.sqlite import SCHEMA_VERSION
from duequeue.store.sqlite import connect as open_sqlite
from tests.pg import admin_connect

# A column's kind: SQLite's INTEGER holds what PostgreSQL keeps in BIGINT or INTEGER.
KINDS = {"integer": "int", "bigint": "int", "text": "text"}

Shape = dict[str, Any]


def _where(text: str | None) -> str | None:
    """Return a partial index's predicate in one spelling (PostgreSQL adds casts, parens)."""
    if text is None:
        return None
    text = re.sub(r"::\w+", "", text.lower())
    return re.sub(r"[()\s]", "", text)


def _key(cols: tuple[str, ...], unique: bool) -> tuple[str, ...]:
    """Return an index's columns as SQLite orders its entries.

    Every SQLite index ends with the rowid (id), so its (a) is PostgreSQL's (a, id), which
    schema_postgres.sql spells out where a query orders by it (reminders_due; test_pg_plans.py
    holds that plan). A unique index is unique on its own columns only.
    """
    return cols if unique or cols[-1:] == ("id",) else (*cols, "id")


def _default(text: str | None) -> str | None:
    return None if text is None else re.sub(r"::\w+", "", text).strip("()' ")


def sqlite_shape(path: Path) -> Shape:
    open_sqlite(path).close()
    conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        tables = sorted(
            str(r[0])
            for r in conn.execute(
                """SELECT name FROM sqlite_schema WHERE type = 'table'
                   AND name NOT LIKE 'sqlite%' AND name NOT LIKE 'reminder_search%'"""
            )
        )
        columns, keys, indexes = set(), set(), set()
        for t in tables:
            for _cid, name, kind, notnull, default, pk in conn.execute(f"PRAGMA table_info({t})"):
                # INTEGER PRIMARY KEY is the rowid: never NULL, though table_info says nullable.
                columns.add((t, name, KINDS[kind.lower()], bool(notnull or pk), _default(default)))
            for fk in conn.execute(f"PRAGMA foreign_key_list({t})"):
                keys.add((t, fk[3], fk[2], fk[4], fk[6].upper()))
            for _seq, index, unique, origin, partial in conn.execute(f"PRAGMA index_list({t})"):
                if origin == "pk":
                    continue
                cols = tuple(str(r[2]) for r in conn.execute(f"PRAGMA index_info({index})"))
                where = None
                if partial:
                    (sql,) = conn.execute(
                        "SELECT sql FROM sqlite_schema WHERE name = ?", (index,)
                    ).fetchone()
                    where = _where(sql.split(" WHERE ", 1)[1])
                # Constraint-backed indexes are named by each database its own way.
                named = index if origin == "c" else ""
                indexes.add((t, named, _key(cols, bool(unique)), bool(unique), where))
        (version,) = conn.execute("PRAGMA user_version").fetchone()
    finally:
        conn.close()
    return {
        "tables": tables,
        "columns": columns,
        "foreign keys": keys,
        "indexes": indexes,
        "version": int(version),
    }


def postgres_shape(url: str) -> Shape:
    from duequeue.store.postgres import connect as open_postgres

    open_postgres(url).close()
    with admin_connect(url) as conn:
        tables = sorted(
            str(r[0])
            for r in conn.execute(
                """SELECT table_name FROM information_schema.tables
                   WHERE table_schema = current_schema()
                     AND table_name NOT IN ('duequeue_meta', 'reminder_search')"""
            )
        )
        columns = {
            (t, name, KINDS[kind], nullable == "NO", _default(default))
            for t, name, kind, nullable, default in conn.execute(
                """SELECT table_name, column_name, data_type, is_nullable, column_default
                   FROM information_schema.columns
                   WHERE table_schema = current_schema()
                     AND table_name NOT IN ('duequeue_meta', 'reminder_search')"""
            )
        }
        actions = {"a": "NO ACTION", "r": "RESTRICT", "c": "CASCADE", "n": "SET NULL"}
        keys = {
            (str(t), col, str(ref), refcol, actions[action])
            for t, col, ref, refcol, action in conn.execute(
                """SELECT c.conrelid::regclass, a.attname, c.confrelid::regclass, r.attname,
                          c.confdeltype
                   FROM pg_constraint c
                   JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = c.conkey[1]
                   JOIN pg_attribute r ON r.attrelid = c.confrelid AND r.attnum = c.confkey[1]
                   WHERE c.contype = 'f' AND c.connamespace = current_schema()::regnamespace
                     AND c.conrelid::regclass::text <> 'reminder_search'"""
            )
        }
        indexes = set()
        for t, index, cols, unique, primary, owned, where in conn.execute(
            """SELECT t.relname, i.relname,
                      ARRAY(SELECT a.attname FROM unnest(x.indkey) WITH ORDINALITY k(n, o)
                            JOIN pg_attribute a ON a.attrelid = x.indrelid AND a.attnum = k.n
                            ORDER BY k.o),
                      x.indisunique, x.indisprimary,
                      EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = x.indexrelid),
                      pg_get_expr(x.indpred, x.indrelid)
               FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid
               JOIN pg_class t ON t.oid = x.indrelid
               WHERE t.relnamespace = current_schema()::regnamespace
                 AND t.relname NOT IN ('duequeue_meta', 'reminder_search')"""
        ):
            if not primary:
                key = _key(tuple(cols), unique)
                indexes.add((t, "" if owned else index, key, unique, _where(where)))
        (version,) = conn.execute(
            "SELECT value FROM duequeue_meta WHERE name = 'schema_version'"
        ).fetchone()
    return {
        "tables": tables,
        "columns": columns,
        "foreign keys": keys,
        "indexes": indexes,
        "version": int(version),
    }


def test_the_sqlite_and_postgresql_schemas_agree(tmp_path: Path, pg_url: str) -> None:
    lite, pg = sqlite_shape(tmp_path / "q.db"), postgres_shape(pg_url)
    for part in ("tables", "columns", "foreign keys", "indexes", "version"):
        if isinstance(lite[part], set):
            assert (lite[part] - pg[part], pg[part] - lite[part]) == (set(), set()), part
        else:
            assert lite[part] == pg[part], part
    assert lite["version"] == SCHEMA_VERSION


def test_it_notices_an_index_or_a_default_changed_on_one_side(tmp_path: Path, pg_url: str) -> None:
    lite = sqlite_shape(tmp_path / "q.db")
    postgres_shape(pg_url)  # applies the schema
    with admin_connect(pg_url) as conn:
        conn.execute("DROP INDEX reminders_due")
        conn.execute(
            "CREATE INDEX reminders_due ON reminders (next_fire_at, id) WHERE done_at IS NULL"
        )
        conn.execute("ALTER TABLE reminders ALTER COLUMN error_count SET DEFAULT 1")
    changed = postgres_shape(pg_url)
    assert changed["indexes"] != lite["indexes"]
    assert changed["columns"] != lite["columns"]


def test_each_dialect_has_its_search_index(tmp_path: Path, pg_url: str) -> None:
    """SQLite: an FTS5 trigram table and the trigger that drops a deleted reminder's text;
    PostgreSQL: a table whose rows go with their reminder, with pg_trgm's GIN index."""
    path = tmp_path / "q.db"
    open_sqlite(path).close()
    conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        found = dict(
            conn.execute(
                "SELECT name, sql FROM sqlite_schema WHERE name IN "
                "('reminder_search', 'reminder_search_delete')"
            ).fetchall()
        )
    finally:
        conn.close()
    assert "fts5(text, tokenize = 'trigram'" in found["reminder_search"]
    assert "AFTER DELETE ON reminders" in found["reminder_search_delete"]
    postgres_shape(pg_url)  # applies the schema
    with admin_connect(pg_url) as pg:
        ((index,),) = pg.execute(
            """SELECT indexdef FROM pg_indexes
               WHERE schemaname = current_schema() AND indexname = 'reminder_search_trigrams'"""
        ).fetchall()
        ((action,),) = pg.execute(
            """SELECT confdeltype FROM pg_constraint
               WHERE conrelid = 'reminder_search'::regclass AND contype = 'f'"""
        ).fetchall()
    assert "USING gin" in index and "gin_trgm_ops" in index
    assert action == "c"


def _mysql_columns(url: str) -> dict[str, dict[str, bool]]:
    """Table -> column -> nullable, of the MySQL database `url` names (generated columns, the
    stand-ins for partial indexes, left out)."""
    from tests.my import query

    found: dict[str, dict[str, bool]] = {}
    for table, column, nullable, extra in query(
        url,
        """SELECT table_name, column_name, is_nullable, extra FROM information_schema.columns
           WHERE table_schema = DATABASE()""",
    ):
        if "GENERATED" not in str(extra).upper():
            found.setdefault(str(table), {})[str(column)] = nullable == "YES"
    return found


def test_the_mysql_schema_has_the_sqlite_tables_and_columns(tmp_path: Path, mysql_url: str) -> None:
    from duequeue.store.mysql import connect as open_mysql

    open_sqlite(tmp_path / "dq.db").close()
    open_mysql(mysql_url).close()
    lite = apsw.Connection(str(tmp_path / "dq.db"))
    tables = [
        str(r[0])
        for r in lite.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
            " AND name NOT LIKE 'reminder_search_%' AND sql NOT LIKE '%VIRTUAL TABLE%'"
        )
    ]
    expected = {
        t: {str(c[1]): not c[3] and not c[5] for c in lite.execute(f"PRAGMA table_info({t})")}
        for t in tables
    }
    expected["reminder_search"] = {"reminder_id": False, "text": False}  # FTS5 there
    lite.close()
    # Every SQLite table, column and NOT NULL is there (duequeue_meta is MySQL's and
    # PostgreSQL's marker, where SQLite has user_version).
    found = _mysql_columns(mysql_url)
    assert set(found) - {"duequeue_meta"} == set(expected)
    assert {t: found[t] for t in expected} == expected
