"""Modules imported on first use, for the parts of an operation cron's plain `tick` never runs.

Cron starts `duequeue tick` every minute and almost every time nothing is due, so what that run
imports is most of what it costs. A module that declares a dependency as a `LazyModule` keeps its
imports at the top, where a reader looks for them (the real import sits under `TYPE_CHECKING`,
for the type checker and the architecture test), while the dependency is imported only when one
of its names is first used.
"""

from importlib import import_module
from types import ModuleType
from typing import Any


class LazyModule:
    """Module `name`, imported when one of its attributes is first read.

    Thread-safe as any import is (importlib's module locks); afterwards each attribute read is a
    lookup of the imported module, which is all it costs.
    """

    __slots__ = ("_module", "_name")

    def __init__(self, name: str) -> None:
        self._name = name
        self._module: ModuleType | None = None

    def __getattr__(self, attr: str) -> Any:
        module = self._module
        if module is None:
            module = self._module = import_module(self._name)
        return getattr(module, attr)

    def __repr__(self) -> str:
        return f"<LazyModule {self._name!r}>"
