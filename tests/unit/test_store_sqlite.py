"""What only the SQLite file itself can show (the contract every store passes is in
test_store_contract.py)."""

import os
import stat
from pathlib import Path

import apsw
import pytest

from duequeue.errors import StoreError
from duequeue.store import schema
from duequeue.store.sqlite import connect as open_sqlite
from duequeue.store.sqlite import schema_sql
from tests.paths import DATA, ROOT


def test_it_creates_the_database_owner_only_in_wal_mode(db_path: Path) -> None:
    open_sqlite(db_path).close()
    assert stat.S_IMODE(os.stat(db_path).st_mode) == 0o600
    conn = apsw.Connection(str(db_path))
    assert conn.execute("PRAGMA journal_mode").fetchall() == [("wal",)]
    assert conn.execute("PRAGMA user_version").fetchall() == [(schema.VERSION,)]


OLD_SCHEMA = DATA / "schema_v2.sql"  # as released


def test_it_upgrades_a_version_1_database_in_place(db_path: Path) -> None:
    v2 = OLD_SCHEMA.read_text(encoding="utf-8")
    v1 = v2.replace("PRAGMA user_version = 2", "PRAGMA user_version = 1")
    v1 = "\n".join(line for line in v1.splitlines() if "retried_at" not in line)
    conn = apsw.Connection(str(db_path))
    conn.execute(v1)
    conn.execute(
        """INSERT INTO reminders (subject, body, tz, dtstart, created_at, updated_at)
           VALUES ('kept', '', 'UTC', 0, 0, 0)"""
    )
    conn.close()
    store = open_sqlite(db_path)
    try:
        assert [v.subject for v in store.list_view("all", 0)] == ["kept"]
        assert store.dead_letters(1) == []
        assert all(c.ok for c in store.health())
    finally:
        store.close()
    conn = apsw.Connection(str(db_path))
    assert conn.execute("PRAGMA user_version").fetchall() == [(schema.VERSION,)]
    columns = [r[1] for r in conn.execute("PRAGMA table_info(dead_letters)")]
    assert columns[-1] == "retried_at"


def test_it_upgrades_a_version_2_database_to_the_same_tables_as_a_new_one(
    db_path: Path, tmp_path: Path
) -> None:
    conn = apsw.Connection(str(db_path))
    conn.execute(OLD_SCHEMA.read_text(encoding="utf-8"))
    conn.close()
    open_sqlite(db_path).close()
    fresh = tmp_path / "fresh.db"
    open_sqlite(fresh).close()

    def shape(path: Path) -> dict[str, list[tuple[str, str]]]:
        c = apsw.Connection(str(path))
        tables = [r[0] for r in c.execute("SELECT name FROM sqlite_schema WHERE type='table'")]
        found = {t: [(r[1], r[2]) for r in c.execute(f"PRAGMA table_info({t})")] for t in tables}
        found["indexes"] = sorted(
            (str(r[0]), "") for r in c.execute("SELECT name FROM sqlite_schema WHERE type='index'")
        )
        return found

    assert shape(db_path) == shape(fresh)


@pytest.mark.parametrize("old", ["schema_v2.sql", "schema_v3.sql"])
def test_an_upgraded_database_takes_any_channels_targets_and_keeps_its_targets_and_ledger(
    db_path: Path, old: str
) -> None:
    from duequeue.store.records import NewReminder, NewTarget

    conn = apsw.Connection(str(db_path))
    conn.execute((DATA / old).read_text(encoding="utf-8"))
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute(
        """INSERT INTO reminders (id, subject, body, tz, dtstart, created_at, updated_at)
           VALUES (1, 'kept', '', 'UTC', 0, 0, 0);
           INSERT INTO targets (id, reminder_id, channel, address) VALUES (1, 1, 'webhook', 'u');
           INSERT INTO deliveries (reminder_id, target_id, fire_at, outcome, attempt, at)
           VALUES (1, 1, 0, 'sent', 1, 0);"""
    )
    conn.close()
    store = open_sqlite(db_path)
    try:
        target = NewTarget("notify", "ntfy://127.0.0.1/topic")
        rid, _ = store.add(NewReminder("s", "", None, "UTC", 0, 0, (target,)), 0)
        [view] = [v for v in store.list_view("all", 0) if v.id == rid]
        assert [(t.channel, t.address) for t in view.targets] == [("notify", target.address)]
        assert all(c.ok for c in store.health())
    finally:
        store.close()
    conn = apsw.Connection(str(db_path))
    assert conn.execute("SELECT count(*) FROM deliveries").fetchall() == [(1,)]
    assert conn.execute("SELECT id, address FROM targets WHERE id = 1").fetchall() == [(1, "u")]
    assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    # Any registered channel's name: the store keeps no list of them (version 6).
    conn.execute("INSERT INTO targets (reminder_id, channel, address) VALUES (1, 'sms', 'x')")
    assert conn.execute("SELECT channel FROM targets WHERE address = 'x'").fetchall() == [("sms",)]


@pytest.mark.parametrize("old", ["schema_v2.sql", "schema_v3.sql"])
def test_the_version_9_rebuild_keeps_every_row_and_frees_a_cancelled_reminders_key(
    db_path: Path, old: str
) -> None:
    from duequeue.store.records import NewReminder, NewTarget

    conn = apsw.Connection(str(db_path))
    conn.execute((DATA / old).read_text(encoding="utf-8"))
    conn.execute(
        """INSERT INTO reminders (id, key, subject, body, tz, dtstart, created_at, updated_at,
                                  cancelled_at)
           VALUES (1, 'rent', 'old', '', 'UTC', 0, 0, 0, 5),
                  (2, 'live', 'x', '', 'UTC', 0, 0, 0, NULL);
           INSERT INTO targets (id, reminder_id, channel, address) VALUES (1, 1, 'webhook', 'u');
           INSERT INTO deliveries (reminder_id, target_id, fire_at, outcome, attempt, at)
           VALUES (1, 1, 0, 'sent', 1, 0);"""
    )
    conn.close()
    store = open_sqlite(db_path)  # upgraded: the reminders table rebuilt without its UNIQUE key
    try:
        hook = (NewTarget("webhook", "u"),)
        rid, created = store.add(NewReminder("new", "", None, "UTC", 0, 0, hook, key="rent"), 0)
        assert created and rid == 3
        assert all(c.ok for c in store.health())
    finally:
        store.close()
    conn = apsw.Connection(str(db_path))
    assert conn.execute("SELECT id, key, cancelled_at FROM reminders ORDER BY id").fetchall() == [
        (1, "rent", 5),
        (2, "live", None),
        (3, "rent", None),
    ]
    # The rebuild cascaded to nothing: the cancelled reminder keeps its target and ledger.
    assert conn.execute("SELECT count(*) FROM deliveries WHERE reminder_id = 1").fetchall() == [
        (1,)
    ]
    assert conn.execute("SELECT reminder_id FROM targets WHERE id = 1").fetchall() == [(1,)]
    assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
    assert conn.execute("PRAGMA foreign_keys").fetchall() == [(0,)]  # a new connection's default
    conn.close()


def test_health_reports_a_wrong_journal_mode_with_a_fix(db_path: Path) -> None:
    store = open_sqlite(db_path)
    try:
        store.backend.conn.execute("PRAGMA journal_mode = DELETE")
        (journal,) = [c for c in store.health() if c.name == "database journal"]
        assert (journal.ok, journal.detail) == (False, "journal_mode=delete")
        assert journal.fix is not None
        assert "WAL" in journal.fix
    finally:
        store.close()


def test_the_packaged_schema_is_the_top_level_schema_sql() -> None:
    top = ROOT / "schema.sql"
    assert schema_sql() == top.read_text(encoding="utf-8")


def test_the_packaged_postgres_schema_is_the_top_level_schema_postgres_sql() -> None:
    from importlib.resources import files

    top = ROOT / "schema_postgres.sql"
    packaged = files("duequeue").joinpath("schema_postgres.sql").read_text(encoding="utf-8")
    assert packaged == top.read_text(encoding="utf-8")


def test_it_refuses_a_file_that_is_not_sqlite_and_leaves_it_untouched(db_path: Path) -> None:
    db_path.write_bytes(b"hello, this is a text file" * 100)
    before = db_path.read_bytes()
    with pytest.raises(StoreError, match="not an SQLite database"):
        open_sqlite(db_path)
    assert db_path.read_bytes() == before


def test_it_refuses_a_foreign_sqlite_database_and_leaves_it_untouched(db_path: Path) -> None:
    conn = apsw.Connection(str(db_path))
    conn.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT)")
    conn.close()
    with pytest.raises(StoreError, match="not duequeue's"):
        open_sqlite(db_path)
    conn = apsw.Connection(str(db_path))
    names = [r[0] for r in conn.execute("SELECT name FROM sqlite_schema")]
    assert names == ["notes"]


def test_it_refuses_a_database_from_a_newer_duequeue(db_path: Path) -> None:
    open_sqlite(db_path).close()
    conn = apsw.Connection(str(db_path))
    conn.execute("PRAGMA user_version = 99")
    conn.close()
    with pytest.raises(StoreError, match="schema version 99") as refused:
        open_sqlite(db_path)
    assert "upgrade duequeue on this host" in str(refused.value)


def test_it_runs_on_a_database_a_newer_duequeue_only_expanded(db_path: Path) -> None:
    # A newer version's expand steps leave the floor (user_version) and record how far they
    # went in queue_meta: this version runs on it as it is, and doctor says so.
    open_sqlite(db_path).close()
    conn = apsw.Connection(str(db_path))
    newer = schema.VERSION + 2
    conn.execute("INSERT INTO queue_meta (name, value) VALUES ('schema_steps', ?)", (str(newer),))
    conn.close()
    store = open_sqlite(db_path)
    try:
        check = store.health()[0]
        assert check.ok, check
        assert f"schema version {newer}, floor {schema.FLOOR}" in check.detail
    finally:
        store.close()
    conn = apsw.Connection(str(db_path))
    assert conn.execute("PRAGMA user_version").fetchall() == [(schema.FLOOR,)]
    assert conn.execute("SELECT value FROM queue_meta WHERE name = 'schema_steps'").fetchall() == [
        (str(newer),)
    ]


def test_the_due_query_walks_the_partial_index(db_path: Path) -> None:
    open_sqlite(db_path).close()
    conn = apsw.Connection(str(db_path))
    plan = " ".join(
        str(row[-1])
        for row in conn.execute(
            """EXPLAIN QUERY PLAN SELECT id FROM reminders
               WHERE next_fire_at <= 5 AND error_count < 3
                 AND (lease_until IS NULL OR lease_until < 5)
               ORDER BY next_fire_at, id LIMIT 100"""
        )
    )
    assert "USING INDEX reminders_due" in plan
