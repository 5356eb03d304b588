"""Named statements: SQL kept in files a reviewer reads (store/statements/*.sql), one default
text per name and an override where a database's shape differs, the way procrastinate keeps its
queries (procrastinate/sql/queries.sql).

A file holds statements under headers:

    -- name: waiting
    INSERT ... ON CONFLICT (target_id, fire_at) DO UPDATE SET ...
    -- name: waiting [mysql]
    INSERT ... ON DUPLICATE KEY UPDATE ...

`statement(d, name)` returns the override for d's database when there is one, else the
default, in d's parameter style. Each file is read once, when a statement not read yet is asked
for, and every answer is cached: an SQLite tick with nothing due reads tick.sql alone.

An override may be two statements separated by a line holding only `;` (a database without
UPDATE ... RETURNING: a SELECT ... FOR UPDATE that picks and locks the rows, then the UPDATE of
`:selected`, the ids in its first column). The backend's Run runs both and returns the SELECT's
rows; store/mysql.py's is the one that needs it.
"""

import functools
import os

from duequeue.store.sql import Dialect

# The files, read in this order, each only when a statement not found yet is asked for: cron's
# empty tick on SQLite asks for one (mark_tick) and reads tick.sql alone. A plain path, not
# importlib.resources: what that costs to import is most of what an empty tick may add.
_DIR = os.path.join(os.path.dirname(__file__), "statements")
FILES = ("tick", "claim", "commit", "add")
_texts: dict[tuple[str, str | None], str] = {}
_read: list[str] = []


def _parse(file: str) -> None:
    """Add the statements of one file to _texts: (name, database or None) -> text."""
    with open(os.path.join(_DIR, file + ".sql"), encoding="utf-8") as f:
        lines = f.read().splitlines()
    key: tuple[str, str | None] | None = None
    body: list[str] = []
    for line in [*lines, "-- name: "]:  # the sentinel ends the last statement
        if line.startswith("-- name: "):
            if key is not None:
                if key in _texts:
                    raise RuntimeError(f"statement {key[0]} [{key[1]}] is named twice")
                _texts[key] = "\n".join(body).strip()
            name, _, where = line.removeprefix("-- name: ").strip().partition(" ")
            key, body = (name, where.strip("[]") or None), []
        elif not line.lstrip().startswith("--"):
            body.append(line)
    _read.append(file)


@functools.cache
def statement(d: Dialect, name: str) -> str:
    """Return the statement `name` for d's database, in its parameter style."""
    while (name, None) not in _texts and len(_read) < len(FILES):
        _parse(FILES[len(_read)])
    text = _texts.get((name, d.name)) or _texts.get((name, None))
    if text is None:
        raise KeyError(f"no statement named {name}")
    return d.sql(text)


def names() -> list[tuple[str, str | None]]:
    """Return every (name, database) the files hold: what the parity tests run."""
    while len(_read) < len(FILES):
        _parse(FILES[len(_read)])
    return sorted(_texts, key=lambda k: (k[0], k[1] or ""))
