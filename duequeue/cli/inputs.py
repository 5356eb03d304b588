"""What add and edit read from a file or stdin rather than argv: `--body -`, `--notify-file`,
`--webhook-secret-file`. A token or secret typed after a flag is in the process list (`ps`,
/proc/PID/cmdline) while the command runs; one read from a file or stdin is not."""

import sys

from duequeue.errors import BadInputError

# A body longer than this is refused by validate.body anyway; reading one byte more lets it
# say so without reading an endless stdin first.
_BODY_MAX = 64 * 1024


def stdin_once(**named: str | None) -> None:
    """Refuse two flags that both read stdin (`-`): it can be read only once."""
    dashed = [name for name, value in named.items() if value == "-"]
    if len(dashed) > 1:
        raise BadInputError(
            "stdin (-) can be read once: give all but one of these a file", field=tuple(dashed)
        )


def body(value: str | None) -> str | None:
    """Return --body as given, or the text on stdin for `-` (one trailing newline dropped, as
    `echo` and an editor add it)."""
    if value != "-":
        return value
    _hint("the body")
    raw = sys.stdin.buffer.read(_BODY_MAX + 1)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise BadInputError("stdin is not UTF-8 text", field="body") from None
    return text.removesuffix("\n")


def notify_lines(path: str | None) -> list[str]:
    """Return the --notify URLs of --notify-file: the non-blank lines of a file (`-`: stdin),
    a `#` line being a comment."""
    if path is None:
        return []
    found = _lines(path, "notify_file", "the --notify URLs")
    if not found:
        raise BadInputError(f"{path} holds no URL", field="notify_file")
    return found


def webhook_secrets(given: list[str] | None, path: str | None) -> list[str] | None:
    """Return the webhook secrets of --webhook-secret, or of --webhook-secret-file (one line
    per --webhook in order, or one line for all; `-`: stdin); None for neither."""
    if path is None:
        return given or None
    if given:
        raise BadInputError(
            "give the secrets one way, not both", field=("webhook_secret", "webhook_secret_file")
        )
    found = _lines(path, "webhook_secret_file", "the webhook secrets")
    if not found:
        raise BadInputError(f"{path} holds no secret", field="webhook_secret_file")
    return found


def _lines(path: str, field: str, what: str) -> list[str]:
    """Return the non-blank, non-comment lines of a file or of stdin (`-`), stripped."""
    try:
        if path == "-":
            _hint(what)
            text = sys.stdin.buffer.read().decode("utf-8")
        else:
            with open(path, encoding="utf-8") as f:
                text = f.read()
    except (OSError, UnicodeDecodeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else "not UTF-8 text"
        raise BadInputError(f"cannot read {path}: {why}", field=field) from None
    lines = [line.strip() for line in text.splitlines()]
    return [line for line in lines if line and not line.startswith("#")]


def _hint(what: str) -> None:
    """Say what a command waits for when stdin is a terminal, not a pipe or a file."""
    isatty = getattr(sys.stdin, "isatty", None)
    if isatty is not None and isatty():
        print(f"duequeue: reading {what} from stdin; end with Ctrl-D", file=sys.stderr)
