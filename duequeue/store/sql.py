"""The seam for SQL written once: a Dialect (plain data: what SQLite and PostgreSQL spell
differently) and the Run a statement goes through.

Shared statements use `:name` parameters. A `Dialect` turns them into the driver's style and
spells the few things the two disagree on: a list of ids, SKIP LOCKED, row locks, ILIKE, an
unbounded LIMIT, and the one read whose best plan needs a different shape (the ledger of a batch
of fires). A `Run` executes statements on one open transaction of one backend.
"""

import functools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

Row = tuple[Any, ...]


class Run(Protocol):
    """Run statements of a store's open transaction."""

    def __call__(self, sql: str, args: Mapping[str, Any], /) -> list[Row]:
        """Run `sql` with named parameters; return its rows ([] when it returns none)."""

    def many(self, sql: str, rows: Sequence[Mapping[str, Any]], /) -> list[Row]:
        """Run `sql` once per mapping of named parameters, as one batch (SQLite's executemany,
        a psycopg pipeline); return every row the runs returned, in order."""

    def changed(self) -> int:
        """Return how many rows the last statement inserted, updated or deleted."""


@functools.cache
def _pyformat(text: str) -> str:
    # Cached: shared statements are built from a handful of templates, and a tick runs them
    # on every batch.
    return re.sub(r"(?<![:\w]):(\w+)", r"%(\1)s", text.replace("%", "%%"))


@dataclass(frozen=True, slots=True)
class Dialect:
    """What differs between the SQL dialects, as data."""

    name: Literal["sqlite", "postgresql"]
    paramstyle: Literal["named", "pyformat"]  # `:name` as written, or psycopg's %(name)s
    ids_as: Literal["json", "array"]  # a list of ids: one JSON text, or a driver array
    in_ids_sql: str  # a condition: {column} is one of the ids in :{param}
    in_select_sql: str  # a condition: {column} is one of the values {select} returns
    skip_locked: str  # after a claim's SELECT: pass rows another claim holds
    for_update: str  # after an operator's SELECT: lock its rows until the transaction ends
    ilike: str  # case-insensitive LIKE (for ASCII)
    no_limit: int | None  # the LIMIT parameter meaning none
    # One writer at a time (SQLite): a claim first reads whether anything is due, so the usual
    # tick (nothing due) never takes the write lock.
    read_before_claim: bool
    # The ledger rows of a batch of fires (:rids[i], :fires[i]), oldest first: see LEDGER_*.
    ledger_of_fires: str
    # The first statement of a read whose counts must agree with each other ("" when every
    # read transaction already sees one snapshot).
    snapshot: str
    # serve's search (search_sql.py) over reminder_search: its column of reminder ids; a
    # condition on its `text` that the trigram index answers (:wild, :lowered, :pattern); one
    # that tests the rows of a range of ids, for a term too short for trigrams.
    search_id: str
    search_match: str
    search_scan: str
    # Run in the transaction of a write that makes a fire due (add, import, retry, reschedule):
    # tells a listening `worker` (:fire, unix ms, as text; "" when several) at commit, so it
    # need not wait for its next poll. "" where nothing can listen (SQLite: polling only).
    notify_due: str = ""
    # `reminders r` as a probe of reminders_cancelled (0007: one entry per cancelled id),
    # so that "is this reminder cancelled" reads that small index, not the row: SQLite's planner
    # takes the rowid and reads the row (the open dead letters' count: 38 ms against 2 ms at
    # 10^4 letters over 10^6 reminders).
    cancelled_probe: str = "reminders r"
    # Run after `snapshot` in the counts' reads (stats, the overview): their statements are
    # planned for the parameters of each run. PostgreSQL's driver prepares a statement run
    # five times, and the server then may keep a generic plan, blind to the instant and the
    # LIMIT: serve's /api/v1/stats went from 40 to 300-400 ms at 10^6 after ten requests.
    custom_plans: str = ""

    def sql(self, text: str) -> str:
        """Return `text` with `:name` parameters in the driver's style."""
        return _pyformat(text) if self.paramstyle == "pyformat" else text

    def in_ids(self, column: str, param: str) -> str:
        """Return a condition: `column` is one of the ids passed as `param` (see ids())."""
        return self.in_ids_sql.format(column=column, param=param)

    def ids(self, ids: Sequence[int]) -> Any:
        """Return a list of ids as the parameter value in_ids() expects."""
        if self.ids_as == "array":
            return [int(i) for i in ids]
        return "[" + ",".join(str(int(i)) for i in ids) + "]"

    def texts(self, values: Sequence[str]) -> Any:
        """Return a list of texts as the parameter value in_ids() expects (it takes texts too)."""
        if self.ids_as == "array":
            return list(values)
        import json  # lazy: only import's key checks pass texts; the tick passes ids

        return json.dumps(list(values))

    def in_select(self, column: str, select: str) -> str:
        """Return a condition: `column` is one of the values `select` returns."""
        return self.in_select_sql.format(column=column, select=select)

    def limit(self, n: int | None) -> int | None:
        """Return a LIMIT parameter; None is no limit."""
        return self.no_limit if n is None else n


_LEDGER_COLUMNS = (
    "d.reminder_id, d.fire_at, d.target_id, d.outcome, d.error, d.attempt, d.at, d.retry_at"
)

# One statement for the whole batch (a query per fire cost more than the claim itself). SQLite
# zips the two JSON lists by position and probes deliveries_fire per pair.
LEDGER_SQLITE = f"""SELECT {_LEDGER_COLUMNS}
    FROM json_each(:rids) AS r JOIN json_each(:fires) AS f ON f.key = r.key
    JOIN deliveries AS d ON d.reminder_id = r.value AND d.fire_at = f.value
    ORDER BY d.id"""
# PostgreSQL probes the (reminder_id, fire_at) index once per fire through a LATERAL: a plain
# join lets the planner hash a sequential scan of the whole ledger once a claim is large, a cost
# that grows with history (tests/integration/test_pg_plans.py holds the plan). OFFSET 0 keeps
# the planner from pulling the subquery up into just such a join.
LEDGER_POSTGRES = f"""SELECT {_LEDGER_COLUMNS}
    FROM unnest(CAST(:rids AS bigint[]), CAST(:fires AS bigint[])) AS p(rid, fire)
    CROSS JOIN LATERAL (SELECT * FROM deliveries
                        WHERE reminder_id = p.rid AND fire_at = p.fire OFFSET 0) AS d
    ORDER BY d.id"""

SQLITE = Dialect(
    name="sqlite",
    paramstyle="named",
    ids_as="json",
    # json_each keeps this one statement whatever the batch size (no variable limit).
    in_ids_sql="{column} IN (SELECT value FROM json_each(:{param}))",
    in_select_sql="{column} IN ({select})",
    # One writer at a time: a claim's write transaction (BEGIN IMMEDIATE) already excludes
    # every other writer, so there is nothing to skip or lock.
    skip_locked="",
    for_update="",
    ilike="LIKE",  # SQLite's LIKE is already case-insensitive for ASCII
    no_limit=-1,
    read_before_claim=True,
    ledger_of_fires=LEDGER_SQLITE,
    snapshot="",  # a WAL read transaction is one snapshot
    search_id="rowid",
    # FTS5 answers LIKE from its trigrams only without an ESCAPE clause, so :wild has the
    # term's own % and _ as _; instr() then keeps the rows holding the term itself. Both fold
    # ASCII case only, as LIKE does.
    search_match="text LIKE :wild AND instr(lower(text), :lowered) > 0",
    search_scan="instr(lower(text), :lowered) > 0",
    cancelled_probe="reminders r INDEXED BY reminders_cancelled",
)

POSTGRES = Dialect(
    name="postgresql",
    paramstyle="pyformat",
    ids_as="array",
    in_ids_sql="{column} = ANY(:{param})",
    # The subquery runs once and the outer statement probes `column`'s index, where `IN (...)`
    # may be planned as a hash semi join over a sequential scan once the subquery's LIMIT is
    # large.
    in_select_sql="{column} = ANY(ARRAY({select}))",
    # Concurrent claims on many hosts pass each other by.
    skip_locked="FOR UPDATE SKIP LOCKED",
    # An operator's change locks its rows so a tick cannot claim one between check and change.
    for_update="FOR UPDATE",
    ilike="ILIKE",
    no_limit=None,
    read_before_claim=False,
    ledger_of_fires=LEDGER_POSTGRES,
    snapshot="SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY",
    custom_plans="SET LOCAL plan_cache_mode = force_custom_plan",
    search_id="reminder_id",
    search_match="text ILIKE :pattern ESCAPE '\\'",  # pg_trgm's GIN index answers it
    search_scan="text ILIKE :pattern ESCAPE '\\'",
    # Delivered at commit, once per distinct payload of a transaction (pg_listen.py).
    notify_due="SELECT pg_notify('duequeue_due', :fire)",
)
