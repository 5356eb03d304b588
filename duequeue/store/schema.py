"""The schema, per dialect: a new database gets the whole current schema in one file
(`schema.sql`, `schema_postgres.sql`); an older one is brought up to date by the dialect's
numbered migration files (`store/migrations/<dialect>/NNNN_name.sql`), applied in order in the
transaction that opens it.

Adding a schema change is two edits per dialect: the change in the schema file (with its version
bumped) and the same change as the next migration file. tests/integration/test_schema_parity.py
fails when a database upgraded from the oldest supported version differs from a new one.
"""

import re
from dataclasses import dataclass
from importlib.resources import files

# The version the schema files carry; the newest migration file of each dialect has it too.
VERSION = 11
# The oldest version each dialect upgrades from (older databases were never released there).
OLDEST = {"sqlite": 1, "postgresql": 2, "mysql": 11}
_SCHEMA_FILES = {
    "sqlite": "schema.sql",
    "postgresql": "schema_postgres.sql",
    "mysql": "schema_mysql.sql",
}
_NAME = re.compile(r"^(\d{4})_[a-z0-9_]+\.sql$")


@dataclass(frozen=True, slots=True)
class Migration:
    """One numbered step: what takes a database from `version - 1` to `version`."""

    version: int
    name: str
    sql: str


def current(dialect: str) -> str:
    """Return the whole current schema of `dialect` (shipped inside the package)."""
    return files("duequeue").joinpath(_SCHEMA_FILES[dialect]).read_text(encoding="utf-8")


def migrations(dialect: str, after: int) -> list[Migration]:
    """Return the migrations of `dialect` that take a database at version `after` to VERSION."""
    found = []
    for entry in files("duequeue.store").joinpath("migrations", dialect).iterdir():
        match = _NAME.match(entry.name)
        if match is not None and int(match[1]) > after:
            found.append(Migration(int(match[1]), entry.name, entry.read_text(encoding="utf-8")))
    found.sort(key=lambda m: m.version)
    expected = list(range(after + 1, VERSION + 1))
    if [m.version for m in found] != expected:
        # A packaging mistake (a file missing from the wheel), never the user's database.
        raise RuntimeError(
            f"{dialect} migrations {[m.name for m in found]} do not lead from version "
            f"{after} to {VERSION}"
        )
    return found
