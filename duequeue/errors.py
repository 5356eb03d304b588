"""The exceptions duequeue raises; the CLI maps each to an exit code.

An error about an input names the input as the Python API spells it, in `field` (`at`,
`webhooks[1]`, `id`; a setting by its name, `smtp_url`): `str(exc)` is `"field: detail"`. Front
ends name the field their own way: the CLI says `--webhook` or `DUEQUEUE_SMTP_URL`, in one
place (cli/report.py). An error of one line of `import` also carries that line's number.
"""

from typing import Any, Self


class DuequeueError(Exception):
    """Base class of every error duequeue reports to the user."""

    exit_code = 1

    def __init__(
        self,
        detail: str,
        *,
        field: str | tuple[str, ...] | None = None,
        line: int | None = None,
    ) -> None:
        super().__init__(detail)
        self.detail = detail
        # Several fields when the fault is their combination (`rrule/cron`: not both).
        self.fields: tuple[str, ...] = (field,) if isinstance(field, str) else (field or ())
        self.line = line

    @property
    def field(self) -> str | None:
        """Return the input at fault (the first, when several are), or None."""
        return self.fields[0] if self.fields else None

    def __str__(self) -> str:
        where = f"line {self.line}: " if self.line is not None else ""
        named = f"{'/'.join(self.fields)}: " if self.fields else ""
        return f"{where}{named}{self.detail}"

    def with_field(self, field: str | tuple[str, ...]) -> Self:
        """Return this error about `field` (a validator's error, named by its caller)."""
        return self._copy(field, self.line)

    def at_line(self, line: int) -> Self:
        """Return this error on line `line` of an import."""
        return self._copy(self.fields, line)

    def _copy(self, field: str | tuple[str, ...], line: int | None) -> Self:
        copy = type(self)(self.detail, field=field, line=line)
        copy.__cause__ = self.__cause__
        return copy


class BadInputError(DuequeueError):
    """A flag, argument or input line is invalid; nothing was written."""

    exit_code = 2


class ConfigError(DuequeueError):
    """The settings (flags, environment or config file) are invalid."""

    exit_code = 1


class StoreError(DuequeueError):
    """The database could not be opened, read or written."""

    exit_code = 1


class StoreBusyError(StoreError):
    """The database could not take a write now but may later: locked by another writer past
    the busy timeout, a full disk, a lost connection.

    A tick keeps what it could not commit and tries again (engine/commit.py): its writes
    are idempotent, and dropping an outcome would mean sending that target again.
    """


class KeyConflictError(DuequeueError):
    """`add --key` names a live reminder (pending or dead) whose content differs: nothing was
    written. The same content is not an error (the add is idempotent)."""

    exit_code = 1

    def __init__(
        self,
        detail: str,
        *,
        field: str | tuple[str, ...] | None = "key",
        line: int | None = None,
        existing: int | None = None,
        conflicts: tuple[tuple[int, str, int, str], ...] = (),
    ) -> None:
        super().__init__(detail, field=field, line=line)
        self.existing = existing  # the id of the reminder holding the key
        # `import`: every line that names a live key with other content, as (line number,
        # key, the id holding it, what differs); the first is `existing`'s.
        self.conflicts = conflicts


class ChangeRefusedError(DuequeueError):
    """`reschedule` or `edit` cannot change the reminder now: a tick holds it (try again), or it
    is finished or cancelled. Nothing was written."""

    exit_code = 1


class NotFoundError(DuequeueError):
    """A reminder named by id or key does not exist."""

    exit_code = 2


class DatabaseLostError(StoreError):
    """A tick lost its database mid-tick: what it sent is not all in the ledger.

    `summary` is the tick's `TickSummary` (duequeue.TickSummary): its `unrecorded` counts the
    sends the ledger could not take, which may go again after the lease ends; `str()` is the
    store's error.
    """

    def __init__(self, detail: str, summary: Any) -> None:
        super().__init__(detail)
        self.summary = summary
