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
    assert (named.out, named.err) == (
        "1\n",
        named_note(tmp_path / "named.db", "the path in DUEQUEUE_DB"),
    )


def named_note(path: Path, source: str) -> str:
    return (
        f"duequeue: note: created a new database {path} ({source}); if that is not the "
        "database your ticks run on, nothing added here is sent\n"
    )


@pytest.mark.sqlite_only
def test_add_on_a_mistyped_path_says_it_made_a_new_database_every_time_it_makes_one(
    tmp_path: Path,
) -> None:
    """Issue 33, item 1: before, only the default path had a note; a typo in --db or
    DUEQUEUE_DB silently started a new queue that no tick read."""
    typo = tmp_path / "duequeu.db"
    by_env = Cli(typo, T0)("add", "--at", "+1h", "--webhook", HOOK)
    assert (by_env.code, by_env.out) == (0, "1\n")
    assert by_env.err == named_note(typo, "the path in DUEQUEUE_DB")
    again = Cli(typo, T0)("add", "--at", "+1h", "--webhook", HOOK)
    assert (again.out, again.err) == ("2\n", "")  # it exists now: made once, said once
    flagged = tmp_path / "other.db"
    by_flag = Cli(typo, T0)("--db", str(flagged), "add", "--at", "+1h", "--webhook", HOOK)
    assert by_flag.err == named_note(flagged, "the path given")
    inited = tmp_path / "inited.db"
    cli = Cli(inited, T0)
    assert cli("init").code == 0
    assert cli("add", "--at", "+1h", "--webhook", HOOK).err == ""  # init made it: no note


@pytest.mark.sqlite_only
def test_import_says_so_too_and_a_python_queue_says_it_once(tmp_path: Path) -> None:
    from duequeue import Queue

    lines = tmp_path / "in.jsonl"
    lines.write_text('{"at": "+1h", "webhooks": ["https://hooks.example.com/r"]}\n')
    typo = tmp_path / "typo.db"
    r = Cli(typo, T0)("import", str(lines))
    assert r.code == 0, r.err
    assert named_note(typo, "the path in DUEQUEUE_DB") in r.err
    made = tmp_path / "api.db"
    with Queue(made) as q:
        first = q.add(at="+1h", webhooks=[HOOK])
        second = q.add(at="+2h", webhooks=[HOOK])
    assert [n for n in first.notes if "created a new database" in n] == [
        named_note(made, "the path given").removeprefix("duequeue: ").rstrip("\n")
    ]
    assert second.notes == ()


@pytest.mark.sqlite_only
def test_serve_refuses_a_missing_database_like_tick(tmp_path: Path) -> None:
    """Before, `serve` with a typo in its unit file made an empty queue and served it."""
    from tests.procs import run_cli

    typo = tmp_path / "duequeu.db"
    r = run_cli(typo, "serve", "--port", "0")
    assert r.returncode == 1
    assert r.stderr.startswith(f"duequeue: error: database {typo} does not exist")
    assert r.stderr.count("\n") == 1
    assert not typo.exists()
