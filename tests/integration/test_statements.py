"""Every named statement (store/statements/*.sql), as each database gets it, is compiled by that
database against its real schema: SQLite prepares it, PostgreSQL PREPAREs it (inferring every
parameter's type from where it stands), MySQL PREPAREs it. A statement whose override does not
parse, or names a column its schema lacks, fails here rather than in a tick.

What each statement does is the store contract's to check (tests/store_contract.py, on all
three); the tick statements' plans are test_pg_plans.py's.
"""

import re
from pathlib import Path

import pytest

from duequeue.store import statements
from duequeue.store.sql import MYSQL, POSTGRES, SQLITE
from tests.stores import Db, is_mysql, is_sqlite

NAMES = sorted({name for name, _ in statements.names()})


def _parts(text: str) -> list[str]:
    """The statements of a named one (an override may hold two, statements.py)."""
    return [part for part in text.split("\n;\n") if part.strip()]


@pytest.mark.mysql
def test_every_named_statement_compiles_on_its_database(db: Db) -> None:
    from duequeue.store import open_store

    open_store(db).close()  # the schema, as duequeue makes it
    if is_sqlite(db):
        import apsw

        conn = apsw.Connection(str(db))
        for name in NAMES:
            for part in _parts(statements.statement(SQLITE, name)):
                # EXPLAIN compiles without running; every parameter bound to NULL.
                names = set(re.findall(r"(?<![:\w]):(\w+)", part))
                conn.execute("EXPLAIN " + part, dict.fromkeys(names)).fetchall()
        conn.close()
        return
    if is_mysql(db):
        from tests.my import admin_connect

        with admin_connect(str(db)) as my, my.cursor() as cur:
            cur.execute("SET SESSION sql_mode = 'ANSI_QUOTES,PIPES_AS_CONCAT'")
            for name in NAMES:
                for part in _parts(statements.statement(MYSQL, name)):
                    # A tuple parameter (`IN :ids`) is one value for the check.
                    text = re.sub(r"IN %\(\w+\)s", "IN (?)", part)
                    text = re.sub(r"%\(\w+\)s", "?", text).replace("%%", "%")
                    cur.execute("PREPARE checked FROM %s", (text,))
                    cur.execute("DEALLOCATE PREPARE checked")
        return
    import psycopg

    from tests.pg import admin_connect

    with admin_connect(str(db)) as pg:
        for name in NAMES:
            for part in _parts(statements.statement(POSTGRES, name)):
                order: list[str] = []

                def number(match: re.Match[str], order: list[str] = order) -> str:
                    if match[1] not in order:
                        order.append(match[1])
                    return f"${order.index(match[1]) + 1}"

                text = re.sub(r"%\((\w+)\)s", number, part).replace("%%", "%")
                try:
                    pg.execute(f"PREPARE checked AS {text}".encode())
                except psycopg.errors.DatatypeMismatch:
                    # A parameter whose type nothing around it gives (`CASE ... THEN :now`)
                    # is guessed as text; the driver binds it typed. The names resolved.
                    continue
                pg.execute("DEALLOCATE checked")


def test_each_override_names_a_default_and_a_known_database() -> None:
    found = statements.names()
    defaults = {name for name, where in found if where is None}
    for name, where in found:
        assert name in defaults, f"{name} [{where}] overrides no default"
        assert where in (None, "sqlite", "postgresql", "mysql"), f"{name}: unknown database {where}"
    # The statements whose shape the issue names: each has MySQL's own.
    for name in ("claim_rows", "claim_retries", "ledger_of_fires", "waiting", "dead", "record"):
        assert (name, "mysql") in found


def test_statements_are_read_once() -> None:
    assert statements.statement(SQLITE, "claim_rows") is statements.statement(SQLITE, "claim_rows")
    assert Path(statements.__file__).with_name("statements").is_dir()
