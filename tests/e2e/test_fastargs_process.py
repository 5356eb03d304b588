"""Cron's fast `tick` path in a real process: the same output and exit codes as typer's."""

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.paths import ROOT


def run(*args: str, db: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DUEQUEUE_")}
    env.update(PYTHONPATH=str(ROOT), DUEQUEUE_DB=str(db))
    return subprocess.run(
        [sys.executable, "-m", "duequeue", *args], env=env, capture_output=True, text=True
    )


def test_the_fast_tick_prints_what_the_typer_command_prints(db_path: Path) -> None:
    assert run("init", db=db_path).returncode == 0
    fast = run("tick", "--json", db=db_path)
    assert fast.returncode == 0, fast.stderr
    assert json.loads(fast.stdout)["claimed"] == 0
    text = run("tick", db=db_path)
    assert text.stdout.startswith("tick: claimed 0: sent 0")
    bad = run("tick", "--limit", "0", db=db_path)  # typer's own validation and exit code
    assert bad.returncode == 2
    assert "--limit" in bad.stderr


def test_the_fast_tick_refuses_a_missing_database_in_one_line_and_creates_nothing(
    tmp_path: Path,
) -> None:
    typo = tmp_path / "typo" / "dq.db"
    r = run("tick", db=typo)
    assert (r.returncode, r.stdout) == (1, "")
    assert r.stderr == (
        f"duequeue: error: database {typo} does not exist (check --db / DUEQUEUE_DB; "
        "`duequeue init` creates it, as do `add` and `import`)\n"
    )
    assert list(tmp_path.iterdir()) == []


def test_the_fast_tick_maps_errors_to_the_exit_code(tmp_path: Path) -> None:
    not_a_db = tmp_path / "notes.txt"
    not_a_db.write_text("hello" * 100)
    r = run("tick", db=not_a_db)
    assert r.returncode == 1
    assert r.stderr.startswith("duequeue: error: ")
    assert "not an SQLite database" in r.stderr


def test_a_tick_with_nothing_due_loads_none_of_the_delivery_machinery(db_path: Path) -> None:
    # What cron pays every minute: the claim that finds nothing, and not one module more of
    # what delivering, recurrence or the other commands need.
    from duequeue.store.sqlite import connect as open_sqlite

    open_sqlite(db_path).close()  # an existing, empty queue
    # Its first tick records the tz release (once, not every minute); cron's next ones are these.
    assert run("tick", db=db_path).returncode == 0
    heavy = (
        "asyncio", "aiohttp", "smtplib", "apprise", "psycopg", "typer", "dateutil", "cronsim",
        "uvloop", "zoneinfo", "duequeue.channels.registry", "duequeue.engine.commit",
        "duequeue.engine.helper", "duequeue.schedule.rules", "duequeue.api.results",
        "duequeue.api.from_records", "duequeue.engine.recompute",
        # Dear to import for what they make (dataclasses: BENCHMARKS.md, issue 34's empty tick).
        "duequeue.store.records", "duequeue.store.add_sql", "duequeue.store.dashboard_sql",
        "uuid", "secrets",
    )  # fmt: skip
    code = (
        "import sys\n"
        "from duequeue.cli.entrypoint import main\n"
        f"sys.argv = ['duequeue', '--db', {str(db_path)!r}, 'tick']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        f"print(sorted(m for m in {heavy!r} if m in sys.modules))\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("DUEQUEUE_")}
    done = subprocess.run(
        [sys.executable, "-c", code],
        env={**env, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "claimed 0" in done.stdout
    assert done.stdout.splitlines()[-1] == "[]"
