"""`duequeue migrate`: an SQLite database copied into PostgreSQL reads the same there."""

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import apsw
import pytest

from duequeue.shared.timefmt import to_ms
from duequeue.store.sqlite import connect as open_sqlite
from duequeue.store.sqlite import schema_sql
from tests.clirunner import SECRET, Cli
from tests.pg import admin_connect
from tests.servers import HttpSink, Reply

T0 = datetime(2027, 1, 5, 8, 0, tzinfo=UTC)


def _cli(db: Path | str) -> Cli:
    env = {"DUEQUEUE_WEBHOOK_SECRET": SECRET, "DUEQUEUE_CHANNEL_TIMEOUT": "2"}
    return Cli(db, T0, env)  # type: ignore[arg-type]


def _everything(cli: Cli, ids: list[int]) -> dict[str, Any]:
    """What inspect, history and stats print about the database."""
    shown: dict[str, Any] = {v: cli.inspect(v) for v in ("--all", "--dead", "--pending", "--due")}
    for rid in ids:
        shown[f"history {rid}"] = cli("history", str(rid), "--json").json()
    shown["stats"] = cli("stats", "--json").json()
    shown["stats"].pop("leased")  # leases are not copied, by design
    return shown


def _ledgers(store: Any, ids: list[int]) -> dict[int, Any]:
    return {rid: (store.deliveries(rid), store.dead_letters(rid)) for rid in ids}


def test_a_migrated_database_reads_the_same_and_goes_on_ticking(
    db_path: Path, pg_url: str, http: HttpSink
) -> None:
    http.respond("/down", Reply(500))
    http.respond("/gone", Reply(410))
    lite = _cli(db_path)
    done = lite.add("--at", "now", "--webhook", http.url("/ok"), "--subject", "once")
    daily = lite.add(
        "--at", "now", "--rrule", "FREQ=DAILY", "--key", "daily", "--subject", "daily",
        "--webhook", http.url("/ok2"), "--webhook", http.url("/down"),
    )  # fmt: skip
    dead = lite.add("--at", "now", "--webhook", http.url("/gone"), "--data", '{"n": 1}')
    later = lite.add("--at", "+1d", "--email", "ann@example.com", "--tz", "Europe/Berlin")
    gone = lite.add("--at", "+2d", "--webhook", http.url("/never"))
    lite.tick()
    lite.advance(minutes=1)
    lite.tick()
    sqlite = open_sqlite(db_path)
    sqlite.cancel([gone], 1)
    # A lease of a tick that was still running on the old database: not copied.
    sqlite.claim(10**13, 10, 3, 10**9, "old-host")
    ids = [done, daily, dead, later, gone]
    before, ledgers = _everything(lite, ids), _ledgers(sqlite, ids)
    sqlite.close()
    assert {r["state"] for r in before["--all"]} == {"done", "pending", "dead", "cancelled"}

    run = lite("migrate", "--to", pg_url)
    assert (run.code, run.err) == (0, "")
    assert run.out.startswith(
        "migrated 5 reminders, 6 targets, 5 deliveries, 1 dead letters, 1 target retries "
    )

    pg = _cli(pg_url)
    pg.now = lite.now
    assert _everything(pg, ids) == before
    from duequeue.store.postgres import connect as open_postgres

    store = open_postgres(pg_url)
    try:
        assert _ledgers(store, ids) == ledgers
        assert store.stats(to_ms(T0)).leased == 0
        # What search finds came over too (an FTS5 table in SQLite, a plain one here).
        found, _, _ = store.browse("all", "ann@example", None, 50, to_ms(T0))
        assert [v.id for v in found] == [later]
    finally:
        store.close()

    assert pg.add("--at", "+1h", "--webhook", http.url("/new")) == gone + 1  # ids go on
    pg.advance(days=1)
    # The daily row's next fire, the email one-shot (no SMTP set: failed), the new one, and
    # the /down webhook's own retry of the daily row's first fire (a partial success).
    summary = pg.tick()
    assert (summary["claimed"], summary["target_retries"]) == (4, 1)
    sent = [len(http.requests_for(p)) for p in ("/ok", "/ok2", "/gone", "/never", "/new")]
    assert sent == [1, 2, 1, 0, 1]
    assert len(http.requests_for("/down")) == 4  # the first fire three times, the next once


def test_migrate_refuses_a_database_that_is_not_empty_and_changes_nothing(
    db_path: Path, pg_url: str
) -> None:
    lite = _cli(db_path)
    lite.add("--at", "+1h", "--webhook", "https://hooks.example.com/a")
    assert lite("migrate", "--to", pg_url).code == 0
    lite.add("--at", "+2h", "--webhook", "https://hooks.example.com/b")

    again = lite("migrate", "--to", pg_url)
    assert again.code == 1
    assert again.err.startswith("duequeue: error: PostgreSQL postgresql://")
    assert "already holds 1 reminders" in again.err
    assert len(again.err.splitlines()) == 1
    assert len(_cli(pg_url).inspect("--all")) == 1


@pytest.mark.parametrize(
    ("source", "to", "flag"),
    [
        ("postgresql://postgres@127.0.0.1/x", "postgres://other@127.0.0.1:5432/x", "--to"),
        ("mysql://root@db/x", "mariadb://root@db:3306/x?charset=utf8mb4", "--to"),
        (None, "SAME", "--to"),
        ("oracle://db/x", "/tmp/other.db", "--db"),
        (None, "redis://localhost/0", "--to"),
    ],
)
def test_migrate_refuses_the_same_database_twice_and_unknown_schemes(
    db_path: Path, source: str | None, to: str, flag: str
) -> None:
    if to == "SAME":
        _cli(db_path).add("--at", "+1h", "--webhook", "https://hooks.example.com/a")
        to = str(db_path.parent / "." / db_path.name)
    run = _cli(source or db_path)("migrate", "--to", to)
    assert run.code == 2, run.err
    assert run.err.startswith(f"duequeue: error: {flag}: ")
    assert len(run.err.splitlines()) == 1


def test_migrate_needs_an_existing_sqlite_file(db_path: Path, pg_url: str) -> None:
    run = _cli(db_path)("migrate", "--to", pg_url)
    assert run.code == 1
    assert "no SQLite database at" in run.err
    assert not db_path.exists()


def test_both_schemas_have_the_same_tables_and_columns(pg_url: str) -> None:
    """What `migrate` relies on: every SQLite column has a PostgreSQL home of the same name."""
    from duequeue.store.copy_rows import META, TABLES
    from duequeue.store.postgres import connect as open_postgres

    lite = apsw.Connection(":memory:")
    lite.execute(schema_sql())
    sqlite_columns = {
        str(t): [str(c[1]) for c in lite.execute(f"PRAGMA table_info({t})")]
        for (t,) in lite.execute("SELECT name FROM sqlite_schema WHERE type = 'table'")
    }
    open_postgres(pg_url).close()
    pg_columns: dict[str, list[str]] = {}
    with admin_connect(pg_url) as conn:
        for table, column in conn.execute(
            """SELECT table_name, column_name FROM information_schema.columns
               WHERE table_schema = current_schema() ORDER BY table_name, ordinal_position"""
        ):
            pg_columns.setdefault(table, []).append(column)
    # Search's own table is each database's shape (an FTS5 table and its shadow tables in
    # SQLite, a plain table under a trigram index here): migrate copies it by itself.
    search = {t for t in sqlite_columns if t.startswith("reminder_search")}
    assert "reminder_search" in search and "reminder_search" in pg_columns
    assert pg_columns.pop("reminder_search") == ["reminder_id", "text"]
    sqlite_columns = {t: c for t, c in sqlite_columns.items() if t not in search}
    assert set(sqlite_columns) == {*TABLES, META}
    assert {t: pg_columns[t] for t in (*TABLES, META)} == sqlite_columns
    assert set(pg_columns) == {*TABLES, META, "duequeue_meta"}


def test_migrate_takes_either_a_destination_or_contract(tmp_path: Path) -> None:
    cli = _cli(tmp_path / "q.db")
    both = cli("migrate", "--contract", "--to", "postgresql://u@127.0.0.1:1/x")
    assert both.code == 2
    assert "give either --to URL or --contract" in both.err
    assert cli("migrate").code == 2


def test_migrate_contract_with_nothing_pending_changes_nothing(tmp_path: Path) -> None:
    db = tmp_path / "q.db"
    open_sqlite(db).close()
    done = _cli(db)("migrate", "--contract")
    assert done.code == 0, done.err
    assert done.out.startswith(f"nothing to contract: {db} is at schema version")
