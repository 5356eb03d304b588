"""Named statements: SQL kept in files a reviewer reads (store/statements/*.sql), one default
text per name and an override where a database's shape differs, the way procrastinate keeps its
queries (procrastinate/sql/queries.sql).

A file holds statements under headers:

    -- name: waiting
    INSERT ... ON CONFLICT (target_id, fire_at) DO UPDATE SET ...
    -- name: waiting [mysql]
    INSERT ... ON DUPLICATE KEY UPDATE ...

`statement(d, name)` returns the override for d's database when there is one, else the
default, in d's parameter style. Files are read once, on the first statement a process asks for,
and every answer is cached: an SQLite tick with nothing due asks for none.

An override may be two statements separated by a line holding only `;` (a database without
UPDATE ... RETURNING: a SELECT ... FOR UPDATE that picks and locks the rows, then the UPDATE of
`:selected`, the ids in its first column). The backend's Run runs both and returns the SELECT's
rows; store/mysql.py's is the one that needs it.
"""

import functools
import re
from importlib.resources import files

from duequeue.store.sql import Dialect

_HEADER = re.compile(r"^-- name: (\w+)(?: \[(\w+)\])?\s*$", re.MULTILINE)


@functools.cache
def _texts() -> dict[tuple[str, str | None], str]:
    """Return every statement of the package's files: (name, database or None) -> text."""
    found: dict[tuple[str, str | None], str] = {}
    for entry in sorted(files("duequeue.store").joinpath("statements").iterdir(), key=str):
        if not entry.name.endswith(".sql"):
            continue
        text = entry.read_text(encoding="utf-8")
        heads = list(_HEADER.finditer(text))
        for head, after in zip(heads, [*heads[1:], None], strict=True):
            body = text[head.end() : after.start() if after else len(text)]
            sql = "\n".join(
                line for line in body.strip().splitlines() if not line.lstrip().startswith("--")
            )
            key = (head[1], head[2])
            if key in found:
                raise RuntimeError(f"statement {head[1]} [{head[2]}] is named twice")
            found[key] = sql.strip()
    return found


@functools.cache
def statement(d: Dialect, name: str) -> str:
    """Return the statement `name` for d's database, in its parameter style."""
    texts = _texts()
    text = texts.get((name, d.name)) or texts.get((name, None))
    if text is None:
        raise KeyError(f"no statement named {name}")
    return d.sql(text)


def names() -> list[tuple[str, str | None]]:
    """Return every (name, database) the files hold: what the parity tests run."""
    return sorted(_texts(), key=lambda k: (k[0], k[1] or ""))
