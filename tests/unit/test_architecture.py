"""ARCHITECTURE.md stays true: every module is on the map, and no layer imports one above it."""

import ast
import re
from pathlib import Path

import pytest

from tests.paths import ROOT

PACKAGE = ROOT / "duequeue"
MAP = (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8")


def modules() -> list[Path]:
    return sorted(p.relative_to(PACKAGE) for p in PACKAGE.rglob("*.py") if p.name != "__init__.py")


def imports(module: Path) -> set[str]:
    """Return the duequeue modules `module` imports, as dotted names below the package."""
    tree = ast.parse((PACKAGE / module).read_text(encoding="utf-8"))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("duequeue"):
            base = node.module.removeprefix("duequeue").lstrip(".")
            for alias in node.names:  # `from duequeue.store import retries` names a module
                found.add(f"{base}.{alias.name}".lstrip("."))
                found.add(base)
        elif isinstance(node, ast.Import):
            found |= {a.name.removeprefix("duequeue.") for a in node.names if a.name != "duequeue"}
    return {f for f in found if f}


@pytest.mark.parametrize("module", modules(), ids=str)
def test_every_module_is_on_the_map(module: Path) -> None:
    assert re.search(rf"`{re.escape(module.name)}`", MAP), f"{module} is missing in ARCHITECTURE.md"


# What each lower layer must never import (by dotted prefix), per DESIGN.md's layer table.
ABOVE = (
    "cli",
    "service",
    "ops",
    "output",
    "doctor",
    "worker",
)
FORBIDDEN = {
    "store/": (*ABOVE, "engine", "channels", "schedule", "policy", "config"),
    "channels/": (*ABOVE, "engine", "store", "policy", "config"),
    "schedule/": (*ABOVE, "engine", "store", "channels", "policy", "config"),
    "policy.py": (*ABOVE, "engine", "store", "schedule", "config", "channels.webhook"),
    "engine/": ABOVE,
    "config.py": (*ABOVE, "engine", "store"),
}


@pytest.mark.parametrize("module", modules(), ids=str)
def test_no_layer_imports_one_above_it(module: Path) -> None:
    rules = [v for k, v in FORBIDDEN.items() if str(module).startswith(k)]
    wrong = {
        name
        for name in imports(module)
        for rule in rules
        for banned in rule
        if name == banned or name.startswith(banned + ".")
    }
    assert not wrong, f"{module} imports {sorted(wrong)}, above its layer"


def test_no_module_imports_itself_back() -> None:
    """No import cycle, at module level or inside functions: a module that needs another's
    helper while that one needs it back is one module, or the helper belongs lower."""
    names = {".".join(m.with_suffix("").parts): m for m in modules()}
    graph = {
        name: {i for i in imports(path) if i in names and i != name} for name, path in names.items()
    }
    cycles = []
    for start in graph:
        stack, seen = [(start, [start])], set()
        while stack:
            node, path = stack.pop()
            for nxt in graph[node]:
                if nxt == start:
                    cycles.append(" -> ".join([*path, start]))
                elif nxt not in seen:
                    seen.add(nxt)
                    stack.append((nxt, [*path, nxt]))
    assert cycles == []
