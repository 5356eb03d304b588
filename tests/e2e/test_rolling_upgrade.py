"""Two versions of duequeue on one queue through a rolling upgrade (docs/upgrading.md).

The old version is the commit before expand/contract steps came in, checked out as a git worktree;
the new one is this tree, copied with two test-only schema steps added on top of its own: an
expand step (a nullable column on `reminders`, a new table) and a contract step (the table
dropped), and its VERSION raised to match. Both run as real `duequeue` processes, each on its own
PYTHONPATH, against one database and one loopback webhook receiver. Hosts "a" and "b" start old;
"b" is upgraded first (its first tick expands the schema while "a" ticks beside it), both add and
tick side by side, then "a" is upgraded and `migrate --contract` finishes.

Every wait is on a process ending; nothing sleeps.
"""

import json
import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import apsw
import pytest

from duequeue.store import schema
from tests.clirunner import SECRET
from tests.paths import ROOT
from tests.servers import HttpSink

# The test's own steps, numbered after the tree's newest (both dialects spell them alike).
EXPAND = schema.VERSION + 1
CONTRACT = schema.VERSION + 2
EXPAND_SQL = """-- Test-only (tests/e2e/test_rolling_upgrade.py): what a newer version may add.
ALTER TABLE reminders ADD COLUMN rolling_probe TEXT;
CREATE TABLE rolling_probe_log (id INTEGER PRIMARY KEY, note TEXT NOT NULL);
"""
CONTRACT_SQL = """-- Test-only (tests/e2e/test_rolling_upgrade.py): the old shape removed.
DROP TABLE rolling_probe_log;
"""
CONTRACT_NAME = f"{CONTRACT:04d}_contract_rolling_probe.sql"


def _git(*args: str) -> str:
    done = subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"needs the git history of the checkout: git {' '.join(args)}: {done.stderr}")
    return done.stdout.strip()


@pytest.fixture(scope="module")
def old_tree(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Check out the last commit before expand/contract steps as a worktree; yield its root."""
    if shutil.which("git") is None:
        pytest.skip("needs git")
    found = _git(
        "log", "--format=%H", "--reverse", "-S", "LOCKSTEP_UNTIL", "--", "duequeue/store/schema.py"
    )
    if not found:
        pytest.skip("no commit brings expand/contract steps in this history")
    old = _git("rev-parse", found.splitlines()[0] + "^")
    where = tmp_path_factory.mktemp("old") / "tree"
    _git("worktree", "add", "--detach", str(where), old)
    try:
        yield where
    finally:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(where)])


@pytest.fixture(scope="module")
def new_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Return a copy of this tree's package with the test's expand and contract steps."""
    root = tmp_path_factory.mktemp("new")
    package = root / "duequeue"
    shutil.copytree(ROOT / "duequeue", package, ignore=shutil.ignore_patterns("__pycache__"))
    for dialect in ("sqlite", "postgresql"):
        steps = package / "store" / "migrations" / dialect
        (steps / f"{EXPAND:04d}_expand_rolling_probe.sql").write_text(EXPAND_SQL)
        (steps / CONTRACT_NAME).write_text(CONTRACT_SQL)
    module = package / "store" / "schema.py"
    text, n = re.subn(
        rf"^VERSION = {schema.VERSION}$", f"VERSION = {CONTRACT}", module.read_text(), flags=re.M
    )
    assert n == 1
    module.write_text(text)
    return root


class Fleet:
    """The two versions' CLI on one database, one receiver, and what they were asked to add."""

    def __init__(self, db: str, old: Path, new: Path, sink: HttpSink) -> None:
        self.db, self.trees, self.sink = db, {"old": old, "new": new}, sink
        self.added = 0
        self.work = Path(new) / "work"
        self.work.mkdir(exist_ok=True)

    def env(self, version: str, host: str) -> dict[str, str]:
        clean = {k: v for k, v in os.environ.items() if not k.startswith("DUEQUEUE_")}
        return {
            **clean,
            "PYTHONPATH": str(self.trees[version]),
            "DUEQUEUE_DB": self.db,
            "DUEQUEUE_WEBHOOK_SECRET": SECRET,
            "DUEQUEUE_HOST": host,
        }

    def start(self, version: str, host: str, *args: str) -> "subprocess.Popen[str]":
        return subprocess.Popen(
            [sys.executable, "-m", "duequeue", *args],
            env=self.env(version, host),
            cwd=self.work,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def run(self, version: str, host: str, *args: str) -> subprocess.CompletedProcess[str]:
        proc = self.start(version, host, *args)
        out, err = proc.communicate(timeout=60)
        return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)

    def add(self, version: str, host: str, n: int) -> None:
        """Import `n` one-shots due a minute ago, each with a webhook of its own."""
        due = (datetime.now(UTC) - timedelta(minutes=1)).isoformat()
        lines = [
            json.dumps({"at": due, "subject": f"r{i}", "webhooks": [self.sink.url(f"/r{i}")]})
            for i in range(self.added, self.added + n)
        ]
        self.added += n
        source = self.work / f"add{self.added}.jsonl"
        source.write_text("\n".join(lines) + "\n")
        done = self.run(version, host, "import", str(source))
        assert done.returncode == 0, (version, done.stderr)
        assert f"imported {n}," in done.stdout

    def ticks(self, *who: tuple[str, str]) -> list[dict[str, Any]]:
        """Run ticks side by side, one per (version, host); each must end well."""
        procs = [(v, self.start(v, h, "tick", "--json")) for v, h in who]
        summaries = []
        for version, proc in procs:
            out, err = proc.communicate(timeout=60)
            assert proc.returncode == 0, (version, err)
            assert "error" not in err, (version, err)
            summaries.append(json.loads(out))
        return summaries


def _shape(db: str) -> tuple[int, int]:
    """Return (floor, version) as the database records them, read outside duequeue."""
    if "://" in db:
        from tests.pg import admin_connect

        with admin_connect(db) as conn:
            floor = conn.execute(
                "SELECT value FROM duequeue_meta WHERE name = 'schema_version'"
            ).fetchone()
            steps = conn.execute(
                "SELECT value FROM queue_meta WHERE name = 'schema_steps'"
            ).fetchone()
    else:
        conn = apsw.Connection(db, flags=apsw.SQLITE_OPEN_READONLY)
        conn.setbusytimeout(5000)
        try:
            floor = conn.execute("PRAGMA user_version").fetchone()
            steps = conn.execute(
                "SELECT value FROM queue_meta WHERE name = 'schema_steps'"
            ).fetchone()
        finally:
            conn.close()
    assert floor is not None
    return int(floor[0]), int(steps[0]) if steps else int(floor[0])


def _ledger(db: str) -> Counter[tuple[int, int]]:
    """Count the `sent` ledger rows of each (reminder, fire)."""
    sql = "SELECT reminder_id, fire_at FROM deliveries WHERE outcome = 'sent'"
    if "://" in db:
        from tests.pg import admin_connect

        with admin_connect(db) as conn:
            rows = conn.execute(sql).fetchall()
    else:
        conn = apsw.Connection(db, flags=apsw.SQLITE_OPEN_READONLY)
        conn.setbusytimeout(5000)
        try:
            rows = conn.execute(sql).fetchall()
        finally:
            conn.close()
    return Counter((int(r), int(f)) for r, f in rows)


@pytest.fixture(params=["postgresql", "sqlite"])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return str(tmp_path / "queue.db")
    return str(request.getfixturevalue("pg_url"))


def test_two_versions_tick_one_queue_through_a_rolling_upgrade(
    database: str, old_tree: Path, new_tree: Path, http: HttpSink
) -> None:
    fleet = Fleet(database, old_tree, new_tree, http)
    shared = "://" in database  # PostgreSQL notes each host's ticks; SQLite is one host
    floor = schema.FLOOR

    # Before: both hosts run the old version.
    fleet.add("old", "a", 20)
    fleet.ticks(("old", "a"), ("old", "b"))
    assert _shape(database) == (floor, schema.VERSION)

    # "b" is upgraded: its first process expands the schema while "a" ticks due work beside it.
    fleet.add("old", "a", 40)
    fleet.ticks(("old", "a"), ("new", "b"))
    assert _shape(database) == (floor, CONTRACT)  # expanded; the contract step waits

    # The two versions side by side: each adds, each ticks what the other added.
    for _ in range(3):
        fleet.add("old", "a", 15)
        fleet.add("new", "b", 15)
        fleet.ticks(("old", "a"), ("new", "b"), ("old", "a"), ("new", "b"))
    doctor = fleet.run("new", "b", "doctor")
    assert doctor.returncode == 0, doctor.stdout
    assert f"schema version {CONTRACT}, floor {floor}" in doctor.stdout
    assert f"contract pending: {CONTRACT_NAME}" in doctor.stdout
    assert "duequeue migrate --contract" in doctor.stdout
    if shared:  # doctor names the host the contract step would stop
        assert "hosts on an older duequeue: a\n" in doctor.stdout
    assert fleet.run("old", "a", "doctor").returncode == 0  # the old version sees no problem

    if shared:
        # "a" still runs the old version: the contract would stop it, so it is refused.
        refused = fleet.run("new", "b", "migrate", "--contract")
        assert refused.returncode == 1
        assert refused.stderr.count("\n") == 1, refused.stderr
        assert "not contracting" in refused.stderr
        assert "a (schema 11 or older)" in refused.stderr
        assert _shape(database) == (floor, CONTRACT)

    # "a" is upgraded too; then the contract step finishes the upgrade.
    fleet.add("new", "a", 10)
    fleet.ticks(("new", "a"), ("new", "b"))
    done = fleet.run("new", "b", "migrate", "--contract")
    assert done.returncode == 0, done.stderr
    assert f"contracted {database}: {CONTRACT_NAME}; floor {floor} -> {CONTRACT}" in done.stdout
    assert _shape(database) == (CONTRACT, CONTRACT)
    again = fleet.run("new", "b", "migrate", "--contract")
    assert again.returncode == 0
    assert "nothing to contract" in again.stdout

    # The old version now refuses, in one line that names the versions, and changes nothing.
    old = fleet.run("old", "c", "tick")
    assert old.returncode == 1
    lines = old.stderr.splitlines()
    assert len(lines) == 1, old.stderr
    assert f"schema version {CONTRACT}; this duequeue knows {schema.VERSION}" in lines[0]
    assert _shape(database) == (CONTRACT, CONTRACT)

    # Nothing lost, nothing twice: the receiver and the ledger agree on every fire.
    assert fleet.ticks(("new", "a"))[0]["claimed"] == 0
    ids = Counter(r.headers["webhook-id"] for r in http.requests)
    assert len(ids) == fleet.added
    assert set(ids.values()) == {1}
    paths = Counter(r.path for r in http.requests)
    assert sorted(paths) == sorted(f"/r{i}" for i in range(fleet.added))
    sent = _ledger(database)
    assert len(sent) == fleet.added
    assert set(sent.values()) == {1}
