"""duequeue: a cron-driven due-time reminder scheduler backed by SQLite or PostgreSQL.

`duequeue.Queue` is the Python API (api/queue.py); the types its methods return (api/results.py)
and the errors they raise (errors.py) are exported here too. Everything but the errors loads on
first use: cron's plain `tick` imports this package every minute and pays only for what it uses.
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

from duequeue.errors import (
    BadInputError,
    ChangeRefusedError,
    ConfigError,
    DuequeueError,
    KeyConflictError,
    NotFoundError,
    StoreBusyError,
    StoreError,
)

if TYPE_CHECKING:
    from duequeue.api.queue import Queue, check_setup
    from duequeue.api.results import (
        Added,
        Attempt,
        Change,
        Changed,
        Check,
        ConfigReport,
        Contracted,
        DeadLetter,
        DoctorReport,
        Fire,
        Fires,
        History,
        ImportResult,
        Initialized,
        Migrated,
        MovedBy,
        MovedFire,
        Overview,
        Page,
        Preview,
        PruneCounts,
        QueuePause,
        Reminder,
        Revision,
        State,
        Stats,
        Target,
        TargetRetry,
        View,
    )
    from duequeue.engine.summary import TickSummary
    from duequeue.shared.version import __version__

__all__ = [
    "Added",
    "Attempt",
    "BadInputError",
    "Change",
    "ChangeRefusedError",
    "Changed",
    "Check",
    "ConfigError",
    "ConfigReport",
    "Contracted",
    "DeadLetter",
    "DoctorReport",
    "DuequeueError",
    "Fire",
    "Fires",
    "History",
    "ImportResult",
    "Initialized",
    "KeyConflictError",
    "Migrated",
    "MovedBy",
    "MovedFire",
    "NotFoundError",
    "Overview",
    "Page",
    "Preview",
    "PruneCounts",
    "Queue",
    "QueuePause",
    "Recomputed",
    "Reminder",
    "Revision",
    "State",
    "Stats",
    "StoreBusyError",
    "StoreError",
    "Target",
    "TargetRetry",
    "TickSummary",
    "View",
    "__version__",
    "check_setup",
]
# The module each name is loaded from on first use: the API, the tick's summary (the engine's
# own) and the version by name; the rest are the public types.
_FROM = {
    "Queue": "duequeue.api.queue",
    "check_setup": "duequeue.api.queue",
    "TickSummary": "duequeue.engine.summary",
    "__version__": "duequeue.shared.version",
}


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module 'duequeue' has no attribute {name!r}")
    value = getattr(import_module(_FROM.get(name, "duequeue.api.results")), name)
    globals()[name] = value  # found here from now on, without this call
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
