"""Turn SQLite errors into one-line StoreErrors, for every store method that touches the file."""

import functools
from collections.abc import Callable
from pathlib import Path
from typing import ParamSpec, Protocol, TypeVar, cast

import apsw

from duequeue.errors import StoreBusyError, StoreError


class _HasPath(Protocol):
    path: Path
    busy_timeout_ms: int


P = ParamSpec("P")
R = TypeVar("R")


def guarded(method: Callable[P, R]) -> Callable[P, R]:
    """Turn any SQLite error escaping a store method into a one-line StoreError."""

    @functools.wraps(method)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return method(*args, **kwargs)
        except apsw.Error as exc:
            store = cast("_HasPath", args[0])
            raise store_error(store.path, store.busy_timeout_ms, exc) from exc

    return wrapper


def store_error(path: Path, busy_timeout_ms: int, exc: apsw.Error) -> StoreError:
    if isinstance(exc, apsw.BusyError | apsw.LockedError):
        return StoreBusyError(
            f"database {path} is locked: another process held it for more than "
            f"{busy_timeout_ms / 1000:g}s (DUEQUEUE_BUSY_TIMEOUT)"
        )
    if isinstance(exc, apsw.FullError):
        return StoreBusyError(f"database {path}: the disk is full ({one_line(exc)})")
    if isinstance(exc, apsw.NotADBError):
        return StoreError(f"{path} is not an SQLite database")
    if isinstance(exc, apsw.CantOpenError | apsw.ReadOnlyError | apsw.PermissionsError):
        from duequeue.store.access import problem  # lazy: only an error that needs it

        why = problem(path, write=True)
        if why is not None:
            return StoreError(f"cannot open database {path}: {why}")
    if isinstance(exc, apsw.CorruptError):
        return StoreError(f"database {path} is corrupt ({one_line(exc)}); restore it from a backup")
    return StoreError(f"database {path}: {one_line(exc)}")


def one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__
