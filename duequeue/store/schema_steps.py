"""How two versions of duequeue share one database while a fleet upgrades host by host
(docs/upgrading.md): the rules, the same for every dialect; each backend reads and writes the
two numbers where its database keeps them.

The schema's numbered migration files (schema.py) are, since version 11, of two kinds, named in
the file name:

- `NNNN_expand_name.sql` adds what a newer version needs without breaking the versions before
  it (a table, a nullable column, an index). The first process of the newer version that opens
  the database applies it, in the transaction that opens it; older processes keep running.
- `NNNN_contract_name.sql` removes or tightens the old shape. Only `duequeue migrate --contract`
  applies it, once every host runs a version that knows it.

A database records two numbers, its `Shape`:

- the **floor**: the oldest schema version whose code may run on it. It is the number every
  version since 1 reads as "the schema version" (SQLite's user_version, PostgreSQL's
  duequeue_meta 'schema_version'), so a version from before this scheme, which runs only where
  that number equals its own, keeps running through expand steps: they leave it alone. A
  contract step raises it to its own number; the steps up to 11 (no kind in the name: they
  predate the scheme) raised it too, and are still applied on open, as they always were.
- the **version**: the newest step the database was expanded to, kept in queue_meta
  ('schema_steps') while it is above the floor (no row: the same as the floor). Every expand
  step up to it is applied; a contract step up to it is applied if it is at or below the floor,
  pending if above.

Code of schema VERSION runs on a database whose floor is at most VERSION; if the database's
version is below VERSION it applies its pending expand steps first. Contract steps above the
floor stay pending until `migrate --contract`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from duequeue.shared.lazy import LazyModule
from duequeue.store import schema
from duequeue.store.schema import Migration

if TYPE_CHECKING:
    from duequeue.store import records
    from duequeue.store.records import HealthCheck
else:
    records = LazyModule("duequeue.store.records")


class Shape:
    """What a database records of its schema: its floor and the newest step applied.

    A plain class: it is made on the import every tick pays for, and a dataclass or a
    NamedTuple costs that import far more to make.
    """

    __slots__ = ("floor", "version")

    def __init__(self, floor: int, version: int) -> None:
        self.floor = floor
        self.version = version

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Shape):
            return NotImplemented
        return (self.floor, self.version) == (other.floor, other.version)

    def __hash__(self) -> int:
        return hash((self.floor, self.version))

    def __repr__(self) -> str:
        return f"Shape(floor={self.floor}, version={self.version})"

    def runs(self, code: int | None = None) -> bool:
        """Say whether code of schema version `code` (None: this one) may run on it."""
        return self.floor <= (schema.VERSION if code is None else code)

    def steps_row(self) -> str | None:
        """Return the value of queue_meta's 'schema_steps' row (None: no row, the version is
        the floor)."""
        return str(self.version) if self.version > self.floor else None


def shape(floor: int, steps: object = None) -> Shape:
    """Return the Shape of a database whose header says `floor` and whose 'schema_steps' row
    says `steps` (None when it has none, or no queue_meta yet)."""
    try:
        version = int(str(steps)) if steps is not None else floor
    except ValueError:
        version = floor
    return Shape(floor, max(floor, version))


def to_expand(dialect: str, found: Shape) -> list[Migration]:
    """Return the steps opening `found` applies: every step above its version but contracts."""
    return [m for m in schema.migrations(dialect, found.version) if m.kind != "contract"]


def to_contract(dialect: str, found: Shape) -> list[Migration]:
    """Return the contract steps `migrate --contract` applies to `found` (expanded already)."""
    return [
        m
        for m in schema.migrations(dialect, found.floor)
        if m.kind == "contract" and m.version <= found.version
    ]


def after(found: Shape, applied: Sequence[Migration], *, expanded: bool = False) -> Shape:
    """Return the Shape of `found` once `applied` ran: lockstep and contract steps raise the
    floor, every step the version; `expanded` (the steps were to_expand's) brings the version
    to schema.VERSION, contract steps passed over included."""
    floor = max([found.floor] + [m.version for m in applied if m.kind != "expand"])
    reached = (
        [found.version] + [m.version for m in applied] + ([schema.VERSION] if expanded else [])
    )
    return Shape(floor, max(reached))


def refusal(where: str, found: Shape) -> str:
    """Return the one line that refuses a database this code may not run on."""
    return (
        f"{where} has schema version {found.version} and runs only duequeue of schema "
        f"{found.floor} or newer; this duequeue has schema {schema.VERSION}: upgrade duequeue on "
        "this host (docs/upgrading.md)"
    )


def check(
    where: str,
    found: Shape,
    pending: Sequence[Migration],
    older: Sequence[str] = (),
) -> HealthCheck:
    """Return doctor's check of the database's schema: its version and floor against this
    duequeue's, and the contract steps still pending (docs/upgrading.md), with the hosts that
    ticked in the last day on a duequeue older than them (`older`)."""
    detail = (
        f"{where}: schema version {found.version}, floor {found.floor} "
        f"(this duequeue: {schema.VERSION})"
    )
    if not found.runs():
        return records.HealthCheck(
            "database schema", False, detail, "upgrade duequeue on this host"
        )
    if found.version < schema.VERSION:
        return records.HealthCheck(
            "database schema",
            False,
            detail,
            "open it as a user that may write it (any command applies the expand steps)",
        )
    if pending:
        newest = pending[-1].version
        waiting = f"; hosts on an older duequeue: {', '.join(older)}" if older else ""
        return records.HealthCheck(
            "database schema",
            True,
            f"{detail}; contract pending: {', '.join(m.name for m in pending)}{waiting}",
            f"once every host runs duequeue of schema {newest} or newer: "
            "`duequeue migrate --contract`",
            warning=True,
        )
    return records.HealthCheck("database schema", True, detail)
