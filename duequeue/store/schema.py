"""The schema, per dialect, and how two versions of duequeue share one database while a fleet
upgrades host by host (docs/upgrading.md).

A new database gets the whole current schema in one file (`schema.sql`, `schema_postgres.sql`);
an older one is brought up to date by the dialect's numbered migration files
(`store/migrations/<dialect>/NNNN_name.sql`). Since version 11 every step is one of two kinds,
named in its file name:

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

Adding a schema change is two edits per dialect: the change in the schema file (VERSION bumped;
a contract step raises FLOOR too; while VERSION is above FLOOR the file also writes the
'schema_steps' row) and the same change as the next migration file.
tests/integration/test_schema_parity.py fails when a database upgraded from the oldest supported
version differs from a new one; tests/unit/test_schema_files.py when the numbers disagree.
"""

import re
from collections.abc import Sequence
from dataclasses import dataclass
from importlib.resources import files
from typing import TYPE_CHECKING, Literal

# The newest step the schema files and migrations lead to.
VERSION = 11
# The floor of a database made from the schema files: the newest contract (or pre-scheme) step.
FLOOR = 11
# The steps up to this one predate expand/contract: each raised the floor, applied on open.
LOCKSTEP_UNTIL = 11
# The oldest version each dialect upgrades from (older databases were never released there).
OLDEST = {"sqlite": 1, "postgresql": 2}
# The queue_meta row holding the version while it is above the floor.
STEPS_KEY = "schema_steps"
_SCHEMA_FILES = {"sqlite": "schema.sql", "postgresql": "schema_postgres.sql"}
_NAME = re.compile(r"^(\d{4})_(?:(expand|contract)_)?[a-z0-9_]+\.sql$")

if TYPE_CHECKING:  # not made on the import every tick pays for
    Kind = Literal["lockstep", "expand", "contract"]


@dataclass(frozen=True, slots=True)
class Migration:
    """One numbered step: what takes a database from `version - 1` to `version`."""

    version: int
    name: str
    sql: str
    kind: "Kind" = "lockstep"


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

    def runs(self, code: int = VERSION) -> bool:
        """Say whether code of schema version `code` may run on this database."""
        return self.floor <= code

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


def current(dialect: str) -> str:
    """Return the whole current schema of `dialect` (shipped inside the package)."""
    return files("duequeue").joinpath(_SCHEMA_FILES[dialect]).read_text(encoding="utf-8")


def migrations(dialect: str, after: int) -> list[Migration]:
    """Return the migrations of `dialect` after version `after`, up to VERSION, in order."""
    found = []
    for entry in files("duequeue.store").joinpath("migrations", dialect).iterdir():
        match = _NAME.match(entry.name)
        if match is not None and int(match[1]) > after:
            kind: Kind = "lockstep" if match[2] is None else match[2]  # type: ignore[assignment]
            text = entry.read_text(encoding="utf-8")
            found.append(Migration(int(match[1]), entry.name, text, kind))
    found.sort(key=lambda m: m.version)
    expected = list(range(after + 1, VERSION + 1))
    # A packaging mistake (a file missing from the wheel, a step of the wrong kind), never the
    # user's database.
    if [m.version for m in found] != expected:
        raise RuntimeError(
            f"{dialect} migrations {[m.name for m in found]} do not lead from version "
            f"{after} to {VERSION}"
        )
    for m in found:
        if (m.kind == "lockstep") != (m.version <= LOCKSTEP_UNTIL):
            raise RuntimeError(
                f"{dialect} migration {m.name}: steps after {LOCKSTEP_UNTIL} "
                "are named NNNN_expand_... or NNNN_contract_..., never before"
            )
    return found


def to_expand(dialect: str, found: Shape) -> list[Migration]:
    """Return the steps opening `found` applies: every step above its version but contracts."""
    return [m for m in migrations(dialect, found.version) if m.kind != "contract"]


def to_contract(dialect: str, found: Shape) -> list[Migration]:
    """Return the contract steps `migrate --contract` applies to `found` (expanded already)."""
    return [
        m
        for m in migrations(dialect, found.floor)
        if m.kind == "contract" and m.version <= found.version
    ]


def after(found: Shape, applied: Sequence[Migration], *, expanded: bool = False) -> Shape:
    """Return the Shape of `found` once `applied` ran: lockstep and contract steps raise the
    floor, every step the version; `expanded` (the steps were to_expand's) brings the version
    to VERSION, contract steps passed over included."""
    floor = max([found.floor] + [m.version for m in applied if m.kind != "expand"])
    reached = [found.version] + [m.version for m in applied] + ([VERSION] if expanded else [])
    return Shape(floor, max(reached))


def refusal(where: str, found: Shape) -> str:
    """Return the one line that refuses a database this code may not run on."""
    return (
        f"{where} has schema version {found.version} and runs only duequeue of schema "
        f"{found.floor} or newer; this duequeue has schema {VERSION}: upgrade duequeue on "
        "this host (docs/upgrading.md)"
    )
