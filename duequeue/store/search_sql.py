"""serve's search, written once for every dialect: what it finds of a reminder, kept by the
writes, and the reminders whose text holds a term, newest first, read off a trigram index.

What search finds is what the list shows and nothing else: the subject, the key and each target
as `channel: address`, the address as its channel shows it (a notify URL's tokens masked), one
per line, in `reminder_search` (schema version 10). A secret (a password or token in a notify
URL, a webhook's signing secret, the SMTP credentials) is never in it, so no search can test one
character by character. It is written by add, import and edit, never by a tick.

A term with 3 characters in a row (none of them `%` or `_`) is looked up in the trigram index
(SQLite's FTS5, PostgreSQL's pg_trgm), so a rare one costs what it finds, not the table; shorter
terms have no trigram and are tested on a range of ids instead. Beside that, the page's state is
walked on its own index and each row tested for the term, and whichever way fills the page first
answers (`find`). Either way a page reads at most WINDOW rows: when they run out before the page
is full, the page ends early with a cursor below what was read, and says so (`partial`); the
next page goes on there.
"""

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, cast

from duequeue.store.records import NewTarget
from duequeue.store.sql import Dialect, Run

# The most rows of reminder_search one page reads (candidates of the index, or ids of a range).
# A rare term reads only its matches; a common term fills a page from its first ones. What this
# bounds is a common term in a rare state (or a short rare term): 20,000 rows is about 40 ms.
WINDOW = 20_000
# The first read's size, as a multiple of the page (most terms in most states fill the page
# from it); each later read is FACTOR times the one before, until the window is spent. Few
# rounds: PostgreSQL's trigram index costs about the same whatever the LIMIT (it intersects
# whole posting lists, ~140 ms for a term of common trigrams at 10^6 on a loaded machine).
FACTOR = 8

_NO_CURSOR = 2**63 - 1


def text(subject: str, key: str | None, targets: Iterable[NewTarget]) -> str:
    """Return what search finds of a reminder: subject, key, `channel: shown address` lines."""
    lines = [subject, key or ""]
    lines += [f"{t.channel}: {t.address if t.shown is None else t.shown}" for t in targets]
    return "\n".join(lines)


def put(run: Run, d: Dialect, texts: Sequence[tuple[int, str]]) -> None:
    """Write the search text of new reminders: (id, text) pairs."""
    rows = (
        cast(Sequence[Mapping[str, Any]], texts)  # apsw binds pairs by position (add_sql.bind)
        if d.paramstyle == "named"
        else [{"rid": rid, "text": found} for rid, found in texts]
    )
    run.many(d.sql(f"INSERT INTO reminder_search ({d.search_id}, text) VALUES (:rid, :text)"), rows)


def replace(run: Run, d: Dialect, reminder_id: int, found: str) -> None:
    """Replace a reminder's search text (an edit of its subject or targets)."""
    run(d.sql(f"DELETE FROM reminder_search WHERE {d.search_id} = :rid"), {"rid": reminder_id})
    put(run, d, [(reminder_id, found)])


def indexed(term: str) -> bool:
    """Return whether the trigram index can answer `term`: 3 characters in a row, none a
    LIKE wildcard (SQLite's FTS5 reads `%` and `_` as wildcards)."""
    run = 0
    for char in term:
        run = 0 if char in "%_" else run + 1
        if run >= 3:
            return True
    return False


def _args(term: str) -> dict[str, Any]:
    escaped = term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return {
        "wild": "%" + term.replace("%", "_") + "%",
        "lowered": term.lower(),
        "pattern": f"%{escaped}%",
    }


class _Source:
    """One way to a page of matches, newest first: what it found, the id everything at or above
    which it has looked at (`low`), and whether it reached the end."""

    def __init__(self, step: Callable[[int, int], tuple[list[int], int, int, bool]], low: int):
        self._step = step  # (low, n) -> (matches, new low, rows read, reached the end)
        self.low = low
        self.found: list[int] = []
        self.done = False

    def step(self, n: int) -> int:
        """Look at up to `n` more rows; return how many were read."""
        found, self.low, spent, self.done = self._step(self.low, n)
        self.found += found
        return spent


def find(
    run: Run,
    d: Dialect,
    term: str,
    before: int | None,
    limit: int,
    keep: Callable[[list[int]], list[int]],
    walk: Callable[[int, int], list[int]],
) -> tuple[list[int], int | None, bool]:
    """Return up to `limit` ids below `before` (None: from the newest) of reminders in the
    page's state whose search text holds `term`, the next page's cursor, and whether the page
    ended at WINDOW before it was full.

    `keep(ids)` returns those of `ids` in the state, newest first; `walk(before, n)` the next
    `n` ids of the state below `before`. Two ways to the page run side by side, in reads that
    grow eightfold: the term's matches (the index) tested for the state, and the state's rows
    (its index) tested for the term. The first to fill the page or reach its end answers, so a
    rare term costs its matches and a small state its rows, whichever is less.
    """
    args = _args(term)
    start = _NO_CURSOR if before is None else before

    def by_term(low: int, n: int) -> tuple[list[int], int, int, bool]:
        if indexed(term):
            ids = _matches(run, d, args, low, n)
            return keep(ids) if ids else [], (ids[-1] if ids else low), len(ids), len(ids) < n
        floor = max(low - n, 0)  # no trigram: the search table a range of ids at a time
        ids = _scan(run, d, args, floor, low)
        return keep(ids) if ids else [], floor, low - floor, floor <= 0

    def by_state(low: int, n: int) -> tuple[list[int], int, int, bool]:
        ids = walk(low, n)
        found = _holding(run, d, args, ids) if ids else []
        return found, (ids[-1] if ids else low), len(ids), len(ids) < n

    term_low = start
    if not indexed(term):
        ((top,),) = run(d.sql(f"SELECT max({d.search_id}) FROM reminder_search"), {})
        term_low = min(start, 0 if top is None else int(top) + 1)
    sources = (_Source(by_term, term_low), _Source(by_state, start))
    budget = WINDOW
    size = max(limit, 16)
    while budget > 0:
        for source in sources:
            if budget <= 0:
                break
            budget -= source.step(min(size, budget))
            if len(source.found) >= limit:
                return source.found[:limit], source.found[limit - 1], False
            if source.done:
                return source.found, None, False
        size *= FACTOR
    # The window is spent: the source that got further down answers, and the next page goes
    # on below it.
    best = min(sources, key=lambda source: source.low)
    return best.found, best.low, True


def _holding(run: Run, d: Dialect, args: dict[str, Any], ids: list[int]) -> list[int]:
    """Return those of `ids` whose text holds the term, newest first."""
    rid = d.search_id
    rows = run(
        d.sql(
            f"""SELECT {rid} FROM reminder_search WHERE {d.in_ids(rid, "ids")}
                AND {d.search_scan} ORDER BY {rid} DESC"""
        ),
        {**args, "ids": d.ids(ids)},
    )
    return [int(row[0]) for row in rows]


def _matches(run: Run, d: Dialect, args: dict[str, Any], before: int, n: int) -> list[int]:
    """Return up to `n` ids below `before` whose text holds the term, newest first (the index)."""
    rid = d.search_id
    rows = run(
        d.sql(
            f"""SELECT {rid} FROM reminder_search WHERE {d.search_match} AND {rid} < :before
                ORDER BY {rid} DESC LIMIT :n"""
        ),
        {**args, "before": before, "n": n},
    )
    return [int(row[0]) for row in rows]


def _scan(run: Run, d: Dialect, args: dict[str, Any], low: int, before: int) -> list[int]:
    """Return the ids from `low` up to `before` whose text holds the term, newest first."""
    rid = d.search_id
    rows = run(
        d.sql(
            f"""SELECT {rid} FROM reminder_search
                WHERE {rid} >= :low AND {rid} < :before AND {d.search_scan}
                ORDER BY {rid} DESC"""
        ),
        {**args, "low": low, "before": before},
    )
    return [int(row[0]) for row in rows]
