"""The seam for SQL written once: a Dialect (plain data: what SQLite, PostgreSQL and MySQL
spell differently) and the Run a statement goes through.

Shared statements use `:name` parameters. A `Dialect` turns them into the driver's style and
spells the few things they disagree on in words: a list of ids, SKIP LOCKED, row locks, ILIKE,
an unbounded LIMIT. What differs in shape (the claim, the upserts, the ledger of a batch of
fires) is a named statement with an override per database instead (statements.py). A `Run`
executes statements on one open transaction of one backend.
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
def _pyformat(text: str, rewrites: tuple[tuple[str, str], ...] = ()) -> str:
    # Cached: shared statements are built from a handful of templates, and a tick runs them
    # on every batch.
    for pattern, replacement in rewrites:
        text = re.sub(pattern, replacement, text)
    return re.sub(r"(?<![:\w]):(\w+)", r"%(\1)s", text.replace("%", "%%"))


@dataclass(frozen=True, slots=True)
class Dialect:
    """What differs between the SQL dialects, as data."""

    name: Literal["sqlite", "postgresql", "mysql"]
    paramstyle: Literal["named", "pyformat"]  # `:name` as written, or psycopg's %(name)s
    # A list of ids: one JSON text, a driver array, or a tuple the driver spells `(1, 2, 3)`.
    ids_as: Literal["json", "array", "tuple"]
    in_ids_sql: str  # a condition: {column} is one of the ids in :{param}
    in_select_sql: str  # a condition: {column} is one of the values {select} returns
    skip_locked: str  # after a claim's SELECT: pass rows another claim holds
    for_update: str  # after an operator's SELECT: lock its rows until the transaction ends
    ilike: str  # case-insensitive LIKE (for ASCII)
    no_limit: int | None  # the LIMIT parameter meaning none
    # One writer at a time (SQLite): a claim first reads whether anything is due, so the usual
    # tick (nothing due) never takes the write lock.
    read_before_claim: bool
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
    # Spellings a shared statement needs on this database, as (regex, replacement) pairs applied
    # once per statement text (cached): a reserved word quoted, a CAST type renamed. What differs
    # in shape is a named statement's override instead (statements.py).
    rewrites: tuple[tuple[str, str], ...] = ()
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
    # One writer, whose write transaction holds the lock from its start (SQLite's BEGIN
    # IMMEDIATE): what a commit reads stays true until it ends. So a commit reads which of its
    # claims are still ours and which records the ledger has in one statement each, then
    # writes with statements that neither return rows nor read the table they insert into:
    # SQLite builds a temporary b-tree for every run of UPDATE ... RETURNING and of INSERT ...
    # SELECT from the same table, which cost about a tenth of a tick's SQLite share per row
    # (commit_sql.py; BENCHMARKS.md, issue 34: the delivery path, step by step).
    read_then_write: bool = False

    def sql(self, text: str) -> str:
        """Return `text` with `:name` parameters in the driver's style."""
        return _pyformat(text, self.rewrites) if self.paramstyle == "pyformat" else text

    def in_ids(self, column: str, param: str) -> str:
        """Return a condition: `column` is one of the ids passed as `param` (see ids())."""
        return self.in_ids_sql.format(column=column, param=param)

    def ids(self, ids: Sequence[int]) -> Any:
        """Return a list of ids as the parameter value in_ids() expects."""
        if self.ids_as == "array":
            return [int(i) for i in ids]
        if self.ids_as == "tuple":
            # `x IN ()` is not SQL: no ids is a list holding only NULL, which nothing equals.
            return tuple(int(i) for i in ids) or (None,)
        return "[" + ",".join(str(int(i)) for i in ids) + "]"

    def texts(self, values: Sequence[str]) -> Any:
        """Return a list of texts as the parameter value in_ids() expects (it takes texts too)."""
        if self.ids_as == "array":
            return list(values)
        if self.ids_as == "tuple":
            return tuple(values) or (None,)
        import json  # lazy: only import's key checks pass texts; the tick passes ids

        return json.dumps(list(values))

    def in_select(self, column: str, select: str) -> str:
        """Return a condition: `column` is one of the values `select` returns."""
        return self.in_select_sql.format(column=column, select=select)

    def limit(self, n: int | None) -> int | None:
        """Return a LIMIT parameter; None is no limit."""
        return self.no_limit if n is None else n


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
    snapshot="",  # a WAL read transaction is one snapshot
    read_then_write=True,
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
    snapshot="SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY",
    custom_plans="SET LOCAL plan_cache_mode = force_custom_plan",
    search_id="reminder_id",
    search_match="text ILIKE :pattern ESCAPE '\\'",  # pg_trgm's GIN index answers it
    search_scan="text ILIKE :pattern ESCAPE '\\'",
    # Delivered at commit, once per distinct payload of a transaction (pg_listen.py).
    notify_due="SELECT pg_notify('duequeue_due', :fire)",
)

# MariaDB >= 10.6 and MySQL >= 8.0 (store/mysql.py), with the session's sql_mode ANSI_QUOTES and
# PIPES_AS_CONCAT: "x" is a name and || joins texts, as in the other two.
MYSQL = Dialect(
    name="mysql",
    paramstyle="pyformat",
    ids_as="tuple",
    # PyMySQL spells a tuple parameter as `(1, 2, 3)`.
    in_ids_sql="{column} IN :{param}",
    # Neither allows LIMIT in an IN subquery; a derived table is materialised first, which
    # also lets an UPDATE name the table it updates.
    in_select_sql="{column} IN (SELECT * FROM ({select}) AS chosen)",
    skip_locked="FOR UPDATE SKIP LOCKED",
    for_update="FOR UPDATE",
    # Texts compare byte for byte (utf8mb4_bin): a LIKE that folds case names a collation that
    # does (it folds some accents too, where SQLite's and PostgreSQL's fold ASCII only).
    ilike="COLLATE utf8mb4_general_ci LIKE",
    no_limit=18446744073709551615,  # the manual's "no limit"
    read_before_claim=False,
    # InnoDB's REPEATABLE READ, for this transaction only: its reads share one snapshot. The
    # level of an open transaction cannot change: store/mysql.py's Run starts this one anew.
    snapshot="START TRANSACTION READ ONLY, WITH CONSISTENT SNAPSHOT",
    search_id="reminder_id",
    # No trigram index: search reads a bounded window of reminder_search (search_sql.WINDOW)
    # and tests each row, folding case as SQLite's does (FULLTEXT finds words, not parts).
    search_match="instr(lower(text), :lowered) > 0",
    search_scan="instr(lower(text), :lowered) > 0",
    rewrites=(
        # Reserved words used as column names, quoted (ANSI_QUOTES); not a :parameter's name,
        # nor the upper-case KEY of ON DUPLICATE KEY.
        (r'(?<![:\w"])(key|change)(?![\w"])', r'"\1"'),
        (r"\bAS (BIGINT|INTEGER)\)", "AS SIGNED)"),
        (r"\bAS TEXT\)", "AS CHAR)"),
        # No aggregate FILTER: the count of a CASE that is NULL for the rows left out.
        (r"count\(\*\) FILTER \(WHERE ([^()]*)\)", r"count(CASE WHEN \1 THEN 1 END)"),
    ),
)
