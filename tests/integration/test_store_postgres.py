"""What only the PostgreSQL server itself can show (the contract every store passes is in
test_store_contract.py)."""

import pytest

from duequeue.errors import StoreError
from duequeue.store import schema
from duequeue.store.store import Store
from tests.paths import DATA
from tests.pg import admin_connect, needs_psycopg


def _open(url: str) -> Store:
    from duequeue.store.postgres import connect as open_postgres

    return open_postgres(url)


def test_it_marks_the_schema_with_its_version(pg_url: str) -> None:
    _open(pg_url).close()
    with admin_connect(pg_url) as conn:
        meta = dict(conn.execute("SELECT name, value FROM duequeue_meta").fetchall())
    assert meta == {"application": "duequeue", "schema_version": str(schema.VERSION)}


@pytest.mark.parametrize("version", [2, 3])
def test_it_upgrades_an_older_schema_to_the_same_tables_as_a_new_one(
    pg_url: str, version: int
) -> None:
    old = DATA / f"schema_postgres_v{version}.sql"  # as released

    def shape() -> list[tuple[str, ...]]:
        with admin_connect(pg_url) as conn:
            columns = conn.execute(
                """SELECT table_name, column_name, data_type FROM information_schema.columns
                   WHERE table_schema = 'public' ORDER BY table_name, column_name"""
            ).fetchall()
            indexes = conn.execute(
                "SELECT indexname, indexdef, '' FROM pg_indexes WHERE schemaname = 'public'"
            ).fetchall()
            checks = conn.execute(
                """SELECT conname, pg_get_constraintdef(oid), '' FROM pg_constraint
                   WHERE contype = 'c' AND connamespace = 'public'::regnamespace"""
            ).fetchall()
        return sorted(columns + indexes + checks)

    _open(pg_url).close()
    fresh = shape()
    with admin_connect(pg_url) as conn:
        conn.execute("DROP SCHEMA public CASCADE")
        conn.execute("CREATE SCHEMA public")
        conn.execute(old.read_text(encoding="utf-8").encode())
        conn.execute(
            """INSERT INTO reminders (subject, body, tz, dtstart, created_at, updated_at)
               VALUES ('kept', '', 'UTC', 0, 0, 0)"""
        )
    store = _open(pg_url)
    try:
        assert [v.subject for v in store.list_view("all", 0)] == ["kept"]
        assert store.stats(0).retrying_targets == 0
    finally:
        store.close()
    assert shape() == fresh
    with admin_connect(pg_url) as conn:
        meta = dict(conn.execute("SELECT name, value FROM duequeue_meta").fetchall())
    assert meta["schema_version"] == str(schema.VERSION)


def test_it_refuses_a_foreign_database_and_leaves_it_untouched(pg_url: str) -> None:
    with admin_connect(pg_url) as conn:
        conn.execute("CREATE TABLE notes (id int PRIMARY KEY, text text)")
    with pytest.raises(StoreError, match="not duequeue's"):
        _open(pg_url)
    with admin_connect(pg_url) as conn:
        names = conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = 'public'"
        ).fetchall()
    assert names == [("notes",)]


def test_it_refuses_a_database_from_a_newer_duequeue(pg_url: str) -> None:
    _open(pg_url).close()
    with admin_connect(pg_url) as conn:
        conn.execute("UPDATE duequeue_meta SET value = '99' WHERE name = 'schema_version'")
    with pytest.raises(StoreError, match="schema version 99"):
        _open(pg_url)


def test_processes_starting_on_a_fresh_database_apply_the_schema_once(pg_url: str) -> None:
    import threading

    errors: list[BaseException] = []

    def open_close() -> None:
        try:
            _open(pg_url).close()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=open_close) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    with admin_connect(pg_url) as conn:
        assert conn.execute("SELECT count(*) FROM duequeue_meta").fetchall() == [(2,)]


def test_it_fails_with_one_line_and_no_password_when_the_server_is_unreachable() -> None:
    needs_psycopg()
    from tests.servers import free_port

    url = f"postgresql://dq:s3cret-pw@127.0.0.1:{free_port()}/dq"
    with pytest.raises(StoreError) as caught:
        _open(url)
    message = str(caught.value)
    assert message.startswith("cannot connect to PostgreSQL postgresql://dq:****@127.0.0.1:")
    assert "s3cret-pw" not in message
    assert "\n" not in message


def test_open_store_takes_postgresql_and_postgres_urls(pg_url: str) -> None:
    from duequeue.store import open_store
    from duequeue.store.postgres import PostgresBackend

    for url in (pg_url, pg_url.replace("postgresql://", "postgres://", 1)):
        store = open_store(url)
        assert isinstance(store.backend, PostgresBackend)
        store.close()


def test_the_claim_walks_the_due_index(pg_url: str) -> None:
    from duequeue.store.claim_sql import due_rows
    from duequeue.store.sql import POSTGRES

    _open(pg_url).close()
    with admin_connect(pg_url) as conn:
        conn.execute("SET enable_seqscan = off")
        plan = "\n".join(
            str(r[0])
            for r in conn.execute(
                "EXPLAIN " + due_rows(POSTGRES),
                {"owner": "o", "until": 2, "now": 1, "max": 3, "limit": 10},
            ).fetchall()
        )
    assert "reminders_due" in plan


def test_health_reports_a_missing_sent_once_index_with_a_fix(pg_url: str) -> None:
    store = _open(pg_url)
    try:
        with admin_connect(pg_url) as conn:
            conn.execute("DROP INDEX deliveries_sent_once")
        (check,) = [c for c in store.health() if c.name == "database integrity"]
        assert (check.ok, check.detail) == (False, "index deliveries_sent_once: missing")
        assert check.fix is not None
    finally:
        store.close()


def _terminate(store: Store, url: str) -> None:
    pid = store.backend.conn.info.backend_pid  # type: ignore[attr-defined]
    with admin_connect(url) as conn:
        conn.execute("SELECT pg_terminate_backend(%s)", (pid,))


def test_after_a_dropped_connection_a_keyed_add_is_repeated_and_a_keyless_one_is_not(
    pg_url: str,
) -> None:
    from tests.store_contract import NOW, reminder

    store = _open(pg_url)
    try:
        _terminate(store, pg_url)
        # Without a key, repeating could add the reminder twice: say so instead.
        with pytest.raises(StoreError, match=r"lost the connection .* during add"):
            store.add(reminder(), NOW)
        assert store.list_view("all", NOW) == []  # the store reconnects for the next call
        _terminate(store, pg_url)
        rid, created = store.add(reminder(key="k"), NOW)
        assert created
        assert [v.id for v in store.list_view("all", NOW)] == [rid]
    finally:
        store.close()


def test_without_pg_trgm_the_schema_applies_search_works_and_health_says_so(pg_url: str) -> None:
    """A role that may not add extensions (no CREATE on the database) still gets the schema;
    search reads reminder_search without the trigram index, and doctor's check says how to add
    it."""
    import secrets
    from urllib.parse import quote, urlsplit

    from duequeue import Queue

    role = f"dq_search_{secrets.token_hex(3)}"
    parts = urlsplit(pg_url)
    database = parts.path[1:]
    with admin_connect(pg_url) as conn:
        conn.execute(f"CREATE ROLE {role} LOGIN")
        conn.execute(f"CREATE SCHEMA {role} AUTHORIZATION {role}")
        conn.execute(f'REVOKE CREATE ON DATABASE "{database}" FROM PUBLIC')
    url = parts._replace(
        netloc=f"{role}@{parts.hostname}:{parts.port}",
        query="options=" + quote(f"-csearch_path={role}"),
    ).geturl()
    try:
        with Queue(url) as q:
            rid = q.add(at="+1d", subject="Rent", webhooks=["https://a.example.com/rent"]).id
            assert [r.id for r in q.browse(search="a.example").reminders] == [rid]
            (check,) = [c for c in q.doctor().checks if c.name == "search index"]
        assert check.ok and check.warning and "CREATE EXTENSION pg_trgm" in (check.fix or "")
        with admin_connect(pg_url) as conn:
            found = conn.execute(
                "SELECT 1 FROM pg_indexes WHERE indexname = 'reminder_search_trigrams' "
                "AND schemaname = %s",
                (role,),
            ).fetchall()
        assert found == []
    finally:
        with admin_connect(pg_url) as conn:
            conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = %s",
                (role,),
            )
            conn.execute(f"DROP SCHEMA {role} CASCADE")
            conn.execute(f"DROP OWNED BY {role}")
            conn.execute(f"DROP ROLE {role}")
            conn.execute(f'GRANT CREATE ON DATABASE "{database}" TO PUBLIC')


def test_the_counts_are_planned_for_each_reading_never_on_a_generic_plan(pg_url: str) -> None:
    # psycopg prepares a statement run five times; the server may then keep a generic plan,
    # blind to the instant and the LIMITs (300-400 ms a /api/v1/stats at 10^6 for 40).
    from tests.store_contract import NOW

    store = _open(pg_url)
    try:
        for i in range(15):
            store.stats(NOW + i, cap=1000)
            store.dashboard(NOW + i, 900_000, cap=1000)
        conn = store.backend.conn  # type: ignore[attr-defined]
        plans = conn.execute(
            """SELECT statement, generic_plans, custom_plans FROM pg_prepared_statements
               WHERE statement LIKE '%count(*)%' AND statement LIKE '%$1%'"""
        ).fetchall()
        conn.rollback()
    finally:
        store.close()
    assert plans, "the counts' statements were prepared"
    assert all(generic == 0 and custom >= 10 for _, generic, custom in plans), plans
