"""Recognise the one invocation cron makes every minute, `duequeue [--db P] [--config F] tick
[--limit N] [--json]` (--db and --config may also follow `tick`, as typer's commands take
them), so that it can run without typer's option machinery.

typer coerces every non-flag option through a pydantic TypeAdapter, and importing pydantic costs
more than the rest of a tick with nothing due. Anything this parser does not recognise exactly
(help, another command, an odd value) returns None and goes through typer as usual, so typer
stays the single definition of the CLI; this is only a shortcut for its most common line.
"""

from collections.abc import Sequence
from typing import NamedTuple

_GLOBAL = ("--db", "--config")


class TickArgs(NamedTuple):
    """The arguments of a plain `tick` invocation."""

    db: str | None = None
    config: str | None = None
    limit: int | None = None
    as_json: bool = False


def tick_args(argv: Sequence[str]) -> TickArgs | None:
    """Return the arguments if `argv` is a plain tick invocation, else None."""
    values: dict[str, str] = {}
    rest = list(argv)
    while rest and rest[0] != "tick":
        if not _take(rest, _GLOBAL, values):
            return None
    if not rest:
        return None
    rest.pop(0)
    as_json = False
    while rest:
        if rest[0] == "--json":
            rest.pop(0)
            as_json = True
        elif not _take(rest, ("--limit", *_GLOBAL), values):
            return None
    limit = values.get("--limit")
    if limit is not None and not (limit.isascii() and limit.isdigit() and int(limit) >= 1):
        return None  # typer reports the bad value
    return TickArgs(
        db=values.get("--db"),
        config=values.get("--config"),
        limit=None if limit is None else int(limit),
        as_json=as_json,
    )


def _take(rest: list[str], names: tuple[str, ...], values: dict[str, str]) -> bool:
    """Consume `--name VALUE` or `--name=VALUE` from the front of `rest`; False if neither."""
    head = rest[0]
    name, eq, value = head.partition("=")
    if name not in names:
        return False
    if eq:
        rest.pop(0)
    elif len(rest) >= 2:
        value = rest[1]
        del rest[:2]
    else:
        return False
    if not value or value.startswith("-"):
        return False  # leave unusual values to typer
    values[name] = value
    return True
