"""The exceptions duequeue raises; the CLI maps each to an exit code."""


class DuequeueError(Exception):
    """Base class of every error duequeue reports to the user."""

    exit_code = 1


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


class NotFoundError(DuequeueError):
    """A reminder named by id or key does not exist."""

    exit_code = 2
