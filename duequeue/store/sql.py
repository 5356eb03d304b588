"""The seam for SQL written once: a Dialect for what SQLite and PostgreSQL spell differently,
and the runner a shared statement goes through.

Shared statements use `:name` parameters. A `Dialect` turns them into the driver's style and
spells the few things the two disagree on (a list of ids, SKIP LOCKED, row locks, ILIKE, an
unbounded LIMIT); a `Run` executes a statement on one store's cursor. Modules that write SQL once
(`reads.py`, `ops_sql.py`, `retries.py`, `tick_sql.py`) take both, so `sqlite*.py` and `pg*.py`
hold only what truly differs: connections, transactions, claims' ledger reads, bulk writes, errors.
"""

import functools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

Row = tuple[Any, ...]


class Run(Protocol):
    """Run one statement of a store's open transaction."""

    def __call__(self, sql: str, args: Mapping[str, Any], /) -> list[Row]:
        """Run `sql` with named parameters; return its rows ([] when it returns none)."""

    def changed(self) -> int:
        """Return how many rows the last statement inserted, updated or deleted."""


@functools.cache
def _pyformat(text: str) -> str:
    # Cached: shared statements are built from a handful of templates, and the tick's claim
    # runs this on every batch.
    return re.sub(r"(?<![:\w]):(\w+)", r"%(\1)s", text.replace("%", "%%"))


@dataclass(frozen=True, slots=True)
class Dialect:
    """What differs between the stores for the statements written once."""

    pg: bool

    def sql(self, text: str) -> str:
        """Return `text` with `:name` parameters in the driver's style."""
        return _pyformat(text) if self.pg else text

    def in_ids(self, column: str, param: str) -> str:
        """Return a condition: `column` is one of the ids passed as `param` (see ids())."""
        if self.pg:
            return f"{column} = ANY(:{param})"
        # json_each keeps this one statement whatever the batch size (no variable limit).
        return f"{column} IN (SELECT value FROM json_each(:{param}))"

    def ids(self, ids: Sequence[int]) -> Any:
        """Return a list of ids as the parameter value in_ids() expects."""
        if self.pg:
            return [int(i) for i in ids]
        return "[" + ",".join(str(int(i)) for i in ids) + "]"

    def in_select(self, column: str, select: str) -> str:
        """Return a condition: `column` is one of the values `select` returns.

        On PostgreSQL as `= ANY(ARRAY(...))`: the subquery runs once and the outer statement
        probes `column`'s index, where `IN (...)` may be planned as a hash semi join over a
        sequential scan of the table once the subquery's LIMIT is large.
        """
        return f"{column} = ANY(ARRAY({select}))" if self.pg else f"{column} IN ({select})"

    @property
    def skip_locked(self) -> str:
        # SQLite has one writer at a time; PostgreSQL's concurrent claims pass each other by.
        return "FOR UPDATE SKIP LOCKED" if self.pg else ""

    @property
    def for_update(self) -> str:
        # SQLite's write transaction (BEGIN IMMEDIATE) already excludes every other writer;
        # PostgreSQL locks the rows so a tick cannot claim one between a check and a change.
        return "FOR UPDATE" if self.pg else ""

    @property
    def ilike(self) -> str:
        # SQLite's LIKE is already case-insensitive for ASCII; PostgreSQL's is not.
        return "ILIKE" if self.pg else "LIKE"

    def limit(self, n: int | None) -> int | None:
        """Return a LIMIT parameter; None is no limit (which SQLite spells -1)."""
        return -1 if n is None and not self.pg else n


SQLITE = Dialect(pg=False)
POSTGRES = Dialect(pg=True)
