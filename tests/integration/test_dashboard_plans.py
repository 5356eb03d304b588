"""Every query of serve's dashboard (store/dashboard_sql.py) is index-driven, on SQLite (EXPLAIN
QUERY PLAN) and on PostgreSQL (EXPLAIN), over 10^5 reminders, their targets, 10^5 ledger rows
over a month and 10^4 dead letters (500 open): the overview's lateness and two charts, and the
list in every state, with and without a search, first page and a later one. A scan of a
growing table would make a page's cost grow with the queue. A search of 3 characters or more is
answered by the trigram index (FTS5 given the LIKE; pg_trgm), a shorter one by a range of ids.

The overview's counts by state are `stats`' (ops_sql.stats): a count per state off that state's
index on SQLite; benchmarks/serve_pages.py measures the overview with them at 10^6 reminders.
"""

import re
from collections.abc import Callable, Iterator
from typing import Any

from duequeue.store import dashboard_sql, ops_sql
from duequeue.store.sql import Dialect, Row, Run
from tests.stores import Db, is_sqlite

NOW = 1_800_000_000_000
N = 100_000
GROWING = {"reminders", "targets", "deliveries", "dead_letters", "r", "d", "t", "reminder_search"}

_ROWS = f"""
INSERT INTO reminders (id, key, subject, body, tz, dtstart, fire_at, next_fire_at, error_count,
                       done_at, cancelled_at, created_at, updated_at)
SELECT x, 'k' || x, 'Invoice ' || x, 'b', 'UTC', {NOW},
       CASE WHEN x % 10 < 6 THEN {NOW} + x * 1000 END,
       CASE WHEN x % 10 < 6 THEN {NOW} - 86400000 + x * 2000 END,
       CASE WHEN x % 100 = 1 THEN 2 ELSE 0 END,
       CASE WHEN x % 10 IN (6, 7, 8) THEN {NOW} - 1000 END,
       CASE WHEN x % 10 = 9 THEN {NOW} - 1000 END,
       {NOW} - 1000000, {NOW} - 1000000
FROM g;
INSERT INTO targets (id, reminder_id, channel, address)
SELECT x, x, 'webhook', 'https://hooks.example.com/' || x FROM g;
INSERT INTO deliveries (reminder_id, target_id, fire_at, outcome, error, attempt, at)
SELECT x, x, {NOW} - x * CAST(25000 AS BIGINT),
       CASE WHEN x % 7 = 0 THEN 'failed' ELSE 'sent' END, NULL,
       1 + x % 2, {NOW} - x * CAST(25000 AS BIGINT) + 500
FROM g;
INSERT INTO dead_letters (reminder_id, fire_at, error_count, last_error, dead_at, retried_at)
SELECT x, {NOW} - 5000, 3, 'boom', {NOW} - 4000, CASE WHEN x % 200 != 3 THEN {NOW} END
FROM g WHERE x % 10 = 3;
"""
# What search finds of each (search_sql.text), under each dialect's name for the reminder id.
_SEARCH = """INSERT INTO reminder_search ({id}, text)
SELECT x, 'Invoice ' || x || ' k' || x || ' webhook: https://hooks.example.com/' || x FROM g;"""
_SQLITE_FILL = (
    "CREATE TEMP TABLE g AS WITH RECURSIVE s(x) AS (SELECT 1 UNION ALL "
    f"SELECT x + 1 FROM s WHERE x < {N}) SELECT x FROM s;" + _ROWS
    + _SEARCH.format(id="rowid") + "ANALYZE;"
)  # fmt: skip
_PG_FILL = (f"CREATE TEMP TABLE g AS SELECT x FROM generate_series(1, {N}) x;" + _ROWS
            + _SEARCH.format(id="reminder_id") + "ANALYZE;")  # fmt: skip


class Explaining:
    """A Run that runs each statement, and first asks the database for its plan."""

    def __init__(self, run: Run, explain: Callable[[Run, str, Any], list[str]]) -> None:
        self.run = run
        self.explain = explain
        self.plans: list[tuple[str, list[str]]] = []

    def __call__(self, sql: str, args: Any, /) -> list[Row]:
        self.plans.append((sql, self.explain(self.run, sql, args)))
        return self.run(sql, args)

    def many(self, sql: str, rows: Any, /) -> list[Row]:
        raise AssertionError("the dashboard runs no batch")

    def changed(self) -> int:
        return self.run.changed()


def _sqlite_plan(run: Run, sql: str, args: Any) -> list[str]:
    return [str(row[3]) for row in run("EXPLAIN QUERY PLAN " + sql, args)]


def _pg_nodes(node: dict[str, Any]) -> Iterator[str]:
    yield f"{node['Node Type']} {node.get('Relation Name', '')} {node.get('Index Name', '')}"
    for child in node.get("Plans", ()):
        yield from _pg_nodes(child)


def _pg_plan(run: Run, sql: str, args: Any) -> list[str]:
    ((doc,),) = run("EXPLAIN (FORMAT JSON) " + sql, args)
    return list(_pg_nodes(doc[0]["Plan"]))


def _scans(plan: list[str], sqlite: bool) -> list[str]:
    """Return the steps of a plan that read a growing table whole."""
    if sqlite:
        found = [re.match(r"SCAN (\w+)(?: AS \w+)?$", step) for step in plan]
        # FTS5 reads itself whole unless given the LIKE (L), rowids (=) or a range (> and <).
        fts = [
            step
            for step in plan
            if (m := re.match(r"SCAN reminder_search VIRTUAL TABLE INDEX \d+:(\S*)$", step))
            and not ("L" in m[1] or "=" in m[1] or {">", "<"} <= set(m[1]))
        ]
        return [m.group(0) for m in found if m and m.group(1) in GROWING] + fts
    return [s for s in plan if s.startswith("Seq Scan") and s.split()[2] in GROWING]


def test_every_dashboard_query_is_index_driven(db: Db, open_store: Callable[[], Any]) -> None:
    store = open_store()
    sqlite = is_sqlite(db)
    try:
        store.backend.transact(
            lambda run: _fill(run, _SQLITE_FILL if sqlite else _PG_FILL, store.dialect),
            what="fill", write=True,
        )  # fmt: skip
        d: Dialect = store.dialect
        stats_sql: set[str] = set()

        def reads(run: Run) -> list[tuple[str, list[str]]]:
            explaining = Explaining(run, _sqlite_plan if sqlite else _pg_plan)
            before = Explaining(run, _sqlite_plan if sqlite else _pg_plan)
            ops_sql.stats(before, d, NOW)
            stats_sql.update(sql for sql, _ in before.plans)
            explaining.plans += before.plans
            dashboard_sql.dashboard(explaining, d, NOW, 15 * 60_000)
            for state in ("all", "pending", "due", "retrying", "dead", "done", "cancelled"):
                for search in (None, "invoice 12", "12"):
                    for cursor in (None, N // 2):
                        dashboard_sql.browse(explaining, d, state, search, cursor, 50, NOW)  # type: ignore[arg-type]
            return explaining.plans

        plans = store.backend.transact(reads, what="explain", write=False)
    finally:
        store.close()
    # stats' counts are index-driven on SQLite; PostgreSQL may rightly prefer one pass over the
    # table to counting most of its rows off an index whose visibility map is not set yet.
    checked = [(sql, plan) for sql, plan in plans if sqlite or sql not in stats_sql]
    assert len(checked) > 40
    bad = [(sql, _scans(plan, sqlite)) for sql, plan in checked if _scans(plan, sqlite)]
    shown = [(" ".join(sql.split())[:150], scans) for sql, scans in bad]
    assert not shown, "\n".join(map(str, shown))


def _fill(run: Run, script: str, d: Dialect) -> None:
    for statement in script.split(";"):
        if statement.strip():
            run(d.sql(statement), {})
