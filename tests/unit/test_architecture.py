"""ARCHITECTURE.md stays true: its layer table is read here and every rule in it checked.

Every module of the package counts, the package roots (`__init__.py`) included, and every import
in it: at module level, inside functions and under `TYPE_CHECKING`. A module is on exactly one
row of the table; it imports only its own layer and what its row allows; it never imports a
library its row forbids; nothing imports itself back; every CLI command is a `Queue` method;
only `api/queue.py` reads the wall clock; an import inside a function says why.
"""

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import typer

from tests.paths import ROOT

PACKAGE = ROOT / "duequeue"
MAP = (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8")


# -- the package's modules and their imports -------------------------------------------------


def _name(path: Path) -> str:
    """Return a file's module name: duequeue/store/__init__.py -> duequeue.store."""
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


FILES = {_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}
MODULES = sorted(FILES)


@dataclass(frozen=True)
class Import:
    """One import statement's target module, where it is, and whether it needs a reason."""

    target: str
    line: int
    in_function: bool


def _resolve(module: str, node: ast.ImportFrom) -> str:
    """Return the absolute module a `from ... import` names (relative ones resolved)."""
    if node.level == 0:
        return node.module or ""
    package = module.split(".") if FILES[module].name == "__init__.py" else module.split(".")[:-1]
    base = package[: len(package) - node.level + 1]
    return ".".join([*base, *([node.module] if node.module else [])])


def imports(module: str) -> Iterator[Import]:
    """Yield every import of `module`, each `from X import Y` of a submodule as that module."""
    tree = ast.parse(FILES[module].read_text(encoding="utf-8"))
    functions = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
    inside = {id(n) for f in functions for n in ast.walk(f) if n is not f}
    for node in ast.walk(tree):
        nested = id(node) in inside
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield Import(alias.name, node.lineno, nested)
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(module, node)
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                yield Import(sub if sub in FILES else base, node.lineno, nested)


def internal(module: str) -> set[str]:
    """Return the package's modules that `module` imports."""
    return {i.target for i in imports(module) if i.target in FILES and i.target != module}


# -- the table --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Layer:
    name: str
    members: tuple[str, ...]  # paths below duequeue/: `cli/` (a package), `errors.py` (a module)
    layers: frozenset[str]  # the layers it may import
    modules: frozenset[str]  # the single modules it may import, as paths
    libraries: frozenset[str]  # what it never imports


def _ticked(cell: str) -> list[str]:
    return re.findall(r"`([^`]+)`", cell)


def _table() -> list[Layer]:
    section = MAP.split("## Layers and what each may import", 1)[1].split("\n## ", 1)[0]
    rows = [r for r in section.splitlines() if r.startswith("| ") and not r.startswith("| layer")]
    layers = []
    for row in rows:
        name, members, may, never = (c.strip() for c in row.strip("|").split("|"))
        words = re.sub(r"`[^`]+`", "", may).replace(",", " ").split()
        layers.append(
            Layer(name, tuple(_ticked(members)), frozenset(words), frozenset(_ticked(may)),
                  frozenset(_ticked(never)))
        )  # fmt: skip
    return layers


TABLE = _table()
BY_NAME = {layer.name: layer for layer in TABLE}


def _path(module: str) -> str:
    """Return a module's path below duequeue/ as the table writes it."""
    return str(FILES[module].relative_to(PACKAGE))


def _is(module: str, member: str) -> bool:
    path = _path(module)
    return path.startswith(member) if member.endswith("/") else path == member


def layer_of(module: str) -> list[str]:
    """Return the layers whose row names `module` (a package's `__init__` is its directory's)."""
    return [layer.name for layer in TABLE if any(_is(module, m) for m in layer.members)]


def test_the_table_names_real_layers_and_modules() -> None:
    assert [layer.name for layer in TABLE] == [
        "CLI", "web", "API", "operations", "config", "rules", "engine", "store", "channels",
        "schedule", "shared",
    ]  # fmt: skip
    for layer in TABLE:
        assert layer.layers <= set(BY_NAME), f"{layer.name} may import an unknown layer"
        paths = {_path(m) for m in MODULES}
        for path in [*layer.members, *layer.modules]:
            assert any(p == path or p.startswith(path) for p in paths), f"no {path} in duequeue/"


@pytest.mark.parametrize("module", MODULES)
def test_every_module_is_on_one_row_and_named_in_the_map(module: str) -> None:
    assert len(layer_of(module)) == 1, f"{module} is on {layer_of(module)} rows of the table"
    name = FILES[module].name
    if name != "__init__.py":
        assert f"`{name}`" in MAP, f"{module} is not described in ARCHITECTURE.md"


@pytest.mark.parametrize("module", MODULES)
def test_a_module_imports_only_what_its_row_allows(module: str) -> None:
    (own,) = layer_of(module)
    layer = BY_NAME[own]
    wrong = []
    for target in internal(module):
        (theirs,) = layer_of(target)
        allowed = (
            theirs == own or theirs in layer.layers or any(_is(target, m) for m in layer.modules)
        )
        if not allowed:
            wrong.append(f"{target} ({theirs})")
    assert wrong == [], f"{module} ({own}) imports {wrong}"


@pytest.mark.parametrize("module", MODULES)
def test_a_module_never_imports_a_library_its_row_forbids(module: str) -> None:
    (own,) = layer_of(module)
    never = BY_NAME[own].libraries
    found = {i.target for i in imports(module) if i.target.split(".")[0] in never}
    assert found == set(), f"{module} ({own}) imports {sorted(found)}"


# The store's `__init__` holds its backend registry (open_store); every other folder's is empty.
FOLDERS = sorted(
    m
    for m in MODULES
    if FILES[m].name == "__init__.py" and m.count(".") == 1 and m != "duequeue.store"
)


@pytest.mark.parametrize("package", FOLDERS)
def test_a_layer_folder_loads_nothing_of_its_own(package: str) -> None:
    """Importing `duequeue.x.y` runs `duequeue/x/__init__.py` first, on cron's empty tick too:
    a folder's `__init__` holds at most a docstring."""
    tree = ast.parse(FILES[package].read_text(encoding="utf-8"))
    docstring = (ast.Expr,)
    assert all(isinstance(n, docstring) for n in tree.body), f"{package}/__init__.py runs code"


# -- no cycles ---------------------------------------------------------------------------------


def cycles() -> list[list[str]]:
    """Return every import cycle of the package (each strongly connected group of modules)."""
    graph = {m: internal(m) for m in MODULES}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:  # Tarjan's algorithm
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in graph[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for module in MODULES:
        if module not in index:
            visit(module)
    return found


def test_no_module_imports_itself_back() -> None:
    """No import cycle, the package roots included, at module level or inside functions: a
    module that needs another's helper while that one needs it back is one module, or the
    helper belongs lower."""
    assert cycles() == []


def test_the_cycle_finder_finds_a_cycle_through_a_package_root() -> None:
    # The cycle this test once missed: a channel importing the package root for __version__,
    # whose lazy __getattr__ imports the API, which reaches the channels again.
    source = (PACKAGE / "channels" / "webhook_sender.py").read_text(encoding="utf-8")
    assert "from duequeue import " not in source
    assert "duequeue.shared.version" in internal("duequeue.channels.webhook_sender")
    assert "duequeue.api.queue" in internal("duequeue")
    assert "duequeue.channels.registry" in _reachable("duequeue.api.queue")


def _reachable(start: str) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        for nxt in internal(todo.pop()) - seen:
            seen.add(nxt)
            todo.append(nxt)
    return seen


# -- imports at the top; the clock in one place ----------------------------------------------


@pytest.mark.parametrize("module", MODULES)
def test_an_import_inside_a_function_says_why(module: str) -> None:
    lines = FILES[module].read_text(encoding="utf-8").splitlines()
    silent = []
    for i in imports(module):
        if not i.in_function:
            continue
        here = lines[i.line - 1]
        above = i.line - 2  # the reason may head a block of imports
        while lines[above].strip().startswith(("import ", "from ")):
            above -= 1
        if "#" not in here and not lines[above].strip().startswith("#"):
            silent.append(f"line {i.line}: {here.strip()}")
    assert silent == [], f"{module}: lazy imports without a reason: {silent}"


@pytest.mark.parametrize("module", MODULES)
def test_a_module_loaded_on_first_use_is_imported_for_the_type_checker(module: str) -> None:
    """A LazyModule("x") hides an import from the graph unless `x` is imported (under
    TYPE_CHECKING) in the same file; so it must be."""
    tree = ast.parse(FILES[module].read_text(encoding="utf-8"))
    lazy = {
        node.args[0].value
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "LazyModule"
        and isinstance(node.args[0], ast.Constant)
        and str(node.args[0].value).startswith("duequeue")  # the graph holds the package's own
    }
    assert lazy <= internal(module), f"{module}: {sorted(lazy - internal(module))} not imported"


_CLOCKS = {("datetime", "now"), ("datetime", "utcnow"), ("date", "today"), ("time", "time"),
           ("time", "time_ns")}  # fmt: skip


@pytest.mark.parametrize("module", MODULES)
def test_only_the_api_reads_the_wall_clock(module: str) -> None:
    tree = ast.parse(FILES[module].read_text(encoding="utf-8"))
    reads = [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name)
        and (node.func.value.id, node.func.attr) in _CLOCKS
    ]
    if module != "duequeue.api.queue":
        assert reads == [], f"{module} reads the wall clock on lines {reads}"


# -- the CLI is a renderer over Queue --------------------------------------------------------

# Commands whose Queue method is named otherwise (`import` is a keyword).
METHOD = {"import": "import_lines", "next": "next_fires"}
# Commands that are front ends of their own over Queue (duequeue/web/), not one call of it.
FRONT_ENDS = {"serve"}


def test_every_cli_command_is_a_queue_method() -> None:
    from duequeue.api.queue import Queue
    from duequeue.cli.app import app

    group = typer.main.get_command(app)
    names = sorted(getattr(group, "commands", {}))
    assert len(names) == 22
    missing = [
        n
        for n in names
        if n not in FRONT_ENDS and not callable(getattr(Queue, METHOD.get(n, n), None))
    ]
    assert missing == []


def test_the_cli_imports_nothing_below_the_api() -> None:
    below = {
        (m, t)
        for m in MODULES
        if layer_of(m) in (["CLI"], ["web"])
        for t in internal(m)
        if layer_of(t) not in (["CLI"], ["web"], ["API"]) and t != "duequeue.errors"
    }
    assert below == set()
