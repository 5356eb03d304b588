"""The wheel carries what a database needs at run time: every schema file, every migration and
every named statement file."""

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

from duequeue.store import schema, statements
from tests.paths import ROOT


def test_the_wheel_ships_the_schemas_and_every_migration(tmp_path: Path) -> None:
    # Built from a copy: an in-tree build leaves build/ and *.egg-info in the checkout.
    source = tmp_path / "src"
    shutil.copytree(
        ROOT,
        source,
        symlinks=True,
        ignore=shutil.ignore_patterns(".git", ".venv", "build", "*.egg-info", "__pycache__"),
    )
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "-w", str(tmp_path), str(source)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr
    (wheel,) = tmp_path.glob("duequeue-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert {
        "duequeue/schema.sql",
        "duequeue/schema_postgres.sql",
        "duequeue/schema_mysql.sql",
    } <= names
    for file in statements.FILES:
        assert f"duequeue/store/statements/{file}.sql" in names
    for dialect, oldest in schema.OLDEST.items():
        for step in schema.migrations(dialect, oldest):
            assert f"duequeue/store/migrations/{dialect}/{step.name}" in names
