"""The one mapping of a DuequeueError to the command line: the input it names (a field of
`duequeue.Queue`, a setting) as the flag, argument or variable a user typed, one line on stderr,
and the exit code. Light enough for cron's plain `tick` (no typer here)."""

import sys

from duequeue.errors import ConfigError, DuequeueError

# Fields of Queue's methods whose flag is not `--` and the field with dashes.
_FLAGS = {
    "id": "ID",
    "ids": "ID",
    "emails": "--email",
    "webhooks": "--webhook",
    "targets": "--target",
    "data_json": "--data",
    "file": "FILE",
}


def flag(field: str) -> str:
    """Return the flag or argument of a field: `webhooks[1]` -> `--webhook (the 2nd)`."""
    name, bracket, rest = field.partition("[")
    named = _FLAGS.get(name) or "--" + name.replace("_", "-")
    index = rest.removesuffix("]")
    if not bracket or not index.isdigit() or int(index) == 0:
        return named
    return f"{named} (the {_ordinal(int(index) + 1)})"


def setting(field: str) -> str:
    """Return the environment variable of a setting: `smtp_url` -> DUEQUEUE_SMTP_URL."""
    return "DUEQUEUE_" + field.upper()


def setting_source(field: str, source: str) -> str:
    """Return where a setting came from as `config` shows it: a flag, a variable, the file."""
    return flag(field) if source == "argument" else source


def message(exc: DuequeueError) -> str:
    """Return the error as one line naming what the user typed."""
    if exc.line is not None or not exc.fields:
        # An import line's fields are named as in the file, which is what the user wrote.
        return str(exc)
    name = setting if isinstance(exc, ConfigError) else flag
    named = list(dict.fromkeys(name(f) for f in exc.fields))
    return f"{'/'.join(named)}: {exc.detail}"


def report(exc: DuequeueError) -> int:
    """Say what went wrong in one line on stderr; return the exit code (the one mapping of
    DuequeueError to the command line, for typer's commands and cron's plain `tick` alike)."""
    print(f"duequeue: error: {message(exc)}", file=sys.stderr)
    return exc.exit_code


_SUFFIXES = {1: "st", 2: "nd", 3: "rd"}


def _ordinal(n: int) -> str:
    suffix = "th" if n % 100 in (11, 12, 13) else _SUFFIXES.get(n % 10, "th")
    return f"{n}{suffix}"
