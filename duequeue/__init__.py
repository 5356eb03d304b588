"""duequeue: a cron-driven due-time reminder scheduler backed by SQLite.

`duequeue.Queue` is the Python API (api.py); the errors it raises are exported here too.
"""

from typing import TYPE_CHECKING, Any

from duequeue.errors import (
    BadInputError,
    ConfigError,
    DuequeueError,
    NotFoundError,
    StoreBusyError,
    StoreError,
)

if TYPE_CHECKING:
    from duequeue.api import Queue

__version__ = "0.1.0"
__all__ = [
    "BadInputError",
    "ConfigError",
    "DuequeueError",
    "NotFoundError",
    "Queue",
    "StoreBusyError",
    "StoreError",
    "__version__",
]


def __getattr__(name: str) -> Any:
    # Loaded on first use: cron's plain `tick` imports this package every minute and must not
    # pay for the API's imports.
    if name == "Queue":
        from duequeue.api import Queue

        return Queue
    raise AttributeError(f"module 'duequeue' has no attribute {name!r}")
