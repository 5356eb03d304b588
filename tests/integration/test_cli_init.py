"""No silent empty queue (issue 24, item 4): `init` makes the database and says so, `tick`
refuses a missing one (tests/e2e/test_fastargs_process.py and test_worker.py hold the fast
path and the worker), `doctor` warns on a database without a reminder, and `add` says where it
made the default one. On SQLite and PostgreSQL where both apply."""

import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.clirunner import Cli
from tests.stores import Db, is_sqlite

T0 = datetime(2027, 1, 5, 8, 0, tzinfo=UTC)
HOOK = "https://hooks.example.com/r"


@pytest.fixture
def cli(db: Db) -> Cli:
    return Cli(db, T0)


def test_init_creates_the_database_once_and_then_says_it_exists(cli: Cli, db: Db) -> None:
    shown = str(db) if is_sqlite(db) else None
    first = cli("init")
    assert (first.code, first.err) == (0, "")
    assert first.out.endswith(": created\n")
    again = cli("init")
    assert (again.code, again.err) == (0, "")
    assert again.out.endswith(": exists\n")
    if shown is not None:
        assert first.out == f"database {shown}: created\n"
        assert os.stat(shown).st_mode & 0o777 == 0o600
    assert cli.tick()["claimed"] == 0


@pytest.mark.sqlite_only
def test_tick_on_a_missing_database_exits_1_naming_it_and_init_and_creates_nothing(
    tmp_path: Path,
) -> None:
    typo = tmp_path / "var" / "dq.db"
    r = Cli(typo, T0)("tick")
    assert (r.code, r.out) == (1, "")
    assert r.err == (
        f"duequeue: error: database {typo} does not exist (check --db / DUEQUEUE_DB; "
        "`duequeue init` creates it, as do `add` and `import`)\n"
    )
    assert list(tmp_path.iterdir()) == []


def test_doctor_warns_on_a_database_without_a_reminder_and_still_passes(cli: Cli) -> None:
    # doctor compares this host's clock with a PostgreSQL server's: not a frozen one.
    cli.now = datetime.now(UTC).replace(microsecond=0)
    assert cli("init").code == 0
    r = cli("doctor", "--json")
    assert r.code == 0
    (content,) = [c for c in r.json()["checks"] if c["name"] == "database content"]
    assert (content["ok"], content["warning"]) == (True, True)
    assert "no reminders at all" in content["detail"]
    text = cli("doctor").out
    assert "\nwarning  database content: no reminders at all: a new database, or --db" in text
    assert text.endswith("all checks passed (1 warning)\n")
    cli.add("--at", "+1h", "--webhook", HOOK)
    names = [c["name"] for c in cli("doctor", "--json").json()["checks"]]
    assert "database content" not in names


@pytest.mark.sqlite_only
def test_add_says_where_it_made_the_default_database_and_only_then(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    cli = Cli(tmp_path / "unused.db", T0)
    cli.env.pop("DUEQUEUE_DB")
    default = tmp_path / "data" / "duequeue" / "duequeue.db"
    first = cli("add", "--at", "+1h", "--webhook", HOOK)
    assert (first.code, first.out) == (0, "1\n")
    assert first.err == (
        f"duequeue: note: created a new database {default} (the default; --db names another)\n"
    )
    second = cli("add", "--at", "+1h", "--webhook", HOOK)
    assert (second.out, second.err) == ("2\n", "")
    named = Cli(tmp_path / "named.db", T0)("add", "--at", "+1h", "--webhook", HOOK)
    assert (named.out, named.err) == ("1\n", "")  # a path the user named: no note
