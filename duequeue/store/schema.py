"""The schema, per dialect: a new database gets the whole current schema in one file
(`schema.sql`, `schema_postgres.sql`); an older one is brought up to date by the dialect's
numbered migration files (`store/migrations/<dialect>/NNNN_name.sql`). Since version 11 every
step is an expand step (`NNNN_expand_name.sql`, applied on open) or a contract step
(`NNNN_contract_name.sql`, applied by `migrate --contract`): schema_steps.py holds the rules of a
rolling upgrade, loaded only when a database is not at this version's floor (docs/upgrading.md).

Adding a schema change is two edits per dialect: the change in the schema file (VERSION bumped;
a contract step raises FLOOR too; while VERSION is above FLOOR the file also writes the
'schema_steps' row) and the same change as the next migration file.
tests/integration/test_schema_parity.py fails when a database upgraded from the oldest supported
version differs from a new one; tests/unit/test_schema_files.py when the numbers disagree.
"""

import re
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
OLDEST = {"sqlite": 1, "postgresql": 2, "mysql": 11}
# The queue_meta row holding the version while it is above the floor.
STEPS_KEY = "schema_steps"
_SCHEMA_FILES = {
    "sqlite": "schema.sql",
    "postgresql": "schema_postgres.sql",
    "mysql": "schema_mysql.sql",
}
# A migration file's name; compiled where it is matched (the re module caches it), not on the
# import every tick pays for.
_NAME = r"^(\d{4})_(?:(expand|contract)_)?[a-z0-9_]+\.sql$"

if TYPE_CHECKING:  # not made on the import every tick pays for
    Kind = Literal["lockstep", "expand", "contract"]


@dataclass(frozen=True, slots=True)
class Migration:
    """One numbered step: what takes a database from `version - 1` to `version`."""

    version: int
    name: str  # NNNN_name.sql, NNNN_expand_name.sql or NNNN_contract_name.sql
    sql: str

    @property
    def kind(self) -> "Kind":
        """Return the step's kind, from its name (a property: one field less to make on the
        import every tick pays for)."""
        rest = self.name[5:]
        if rest.startswith("expand_"):
            return "expand"
        return "contract" if rest.startswith("contract_") else "lockstep"


def current(dialect: str) -> str:
    """Return the whole current schema of `dialect` (shipped inside the package)."""
    return files("duequeue").joinpath(_SCHEMA_FILES[dialect]).read_text(encoding="utf-8")


def migrations(dialect: str, after: int) -> list[Migration]:
    """Return the migrations of `dialect` after version `after`, up to VERSION, in order."""
    found = []
    for entry in files("duequeue.store").joinpath("migrations", dialect).iterdir():
        match = re.match(_NAME, entry.name)
        if match is not None and int(match[1]) > after:
            text = entry.read_text(encoding="utf-8")
            found.append(Migration(int(match[1]), entry.name, text))
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
