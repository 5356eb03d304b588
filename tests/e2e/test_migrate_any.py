"""`duequeue migrate` between any two of SQLite, PostgreSQL and MySQL, on real servers: a queue
with reminders of every kind goes SQLite -> PostgreSQL -> MySQL -> SQLite and comes back the same,
table by table; the last copy then ticks as the original would. Refusals write nothing."""

from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import apsw
import pytest

from duequeue.store.copy_rows import META, SEARCH, TABLES, columns
from duequeue.store.schema import STEPS_KEY, VERSION
from duequeue.store.sqlite import connect as open_sqlite
from tests import my, pg
from tests.clirunner import SECRET, Cli, counts
from tests.servers import HttpSink, Reply

T0 = datetime(2027, 1, 5, 8, 0, tzinfo=UTC)
Tables = dict[str, list[tuple[Any, ...]]]


def _cli(db: Path | str) -> Cli:
    env = {"DUEQUEUE_WEBHOOK_SECRET": SECRET, "DUEQUEUE_CHANNEL_TIMEOUT": "2"}
    return Cli(db, T0, env)  # type: ignore[arg-type]


def _selects(quote: str, search_key: str) -> dict[str, str]:
    def names(cols: tuple[str, ...]) -> str:
        return ", ".join(f"{quote}{c}{quote}" for c in cols)

    found = {t: f"SELECT {names(columns(t))} FROM {t} ORDER BY id" for t in TABLES}
    found[META] = f"SELECT name, value FROM {META}"
    found[SEARCH] = f"SELECT {search_key}, text FROM {SEARCH} ORDER BY {search_key}"
    return found


def _sorted(rows: Any) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in rows)


def sqlite_tables(path: Path) -> Tables:
    conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return {t: _sorted(conn.execute(s)) for t, s in _selects('"', "rowid").items()}
    finally:
        conn.close()


def pg_tables(url: str) -> Tables:
    with pg.admin_connect(url) as conn:
        return {
            t: _sorted(conn.execute(s.encode()).fetchall())
            for t, s in _selects('"', "reminder_id").items()
        }


def mysql_tables(url: str) -> Tables:
    return {t: _sorted(my.query(url, s)) for t, s in _selects("`", "reminder_id").items()}


def _databases(folder: Path) -> list[str]:
    """The files in `folder`, an SQLite database's -wal and -shm aside."""
    return sorted(p.name for p in folder.iterdir() if not p.name.endswith(("-wal", "-shm")))


def _queue_of_every_kind(lite: Cli, http: HttpSink) -> list[int]:
    """One-shot, rrule, cron, paused, dead letter, partial ledger, target retries, history,
    search text and the queue's tz release: what a year-old queue holds."""
    http.respond("/down", Reply(500))
    http.respond("/gone", Reply(410))
    ids = [
        lite.add("--at", "now", "--webhook", http.url("/ok"), "--subject", "once"),
        lite.add(
            "--at",
            "now",
            "--rrule",
            "FREQ=DAILY",
            "--key",
            "daily",
            "--subject",
            "daily",
            "--webhook",
            http.url("/ok2"),
            "--webhook",
            http.url("/down"),
        ),
        lite.add("--at", "now", "--webhook", http.url("/gone"), "--data", '{"n": 1}'),
        lite.add("--cron", "30 9 * * *", "--tz", "Europe/Berlin", "--webhook", http.url("/cron")),
        lite.add("--at", "+1d", "--email", "ann@example.com", "--tz", "Europe/Berlin"),
        lite.add("--at", "+3h", "--webhook", http.url("/paused"), "--subject", "paused"),
        lite.add("--at", "+2d", "--webhook", http.url("/never"), "--subject", "cancelled"),
        lite.add("--at", "+5h", "--webhook", http.url("/moved"), "--subject", "moved"),
    ]
    lite.tick()
    lite.advance(minutes=1)
    lite.tick()
    for args in (
        ("pause", str(ids[5])),
        ("cancel", str(ids[6])),
        ("reschedule", str(ids[7]), "--at", "+6h"),
        ("edit", str(ids[7]), "--subject", "moved and renamed"),
    ):
        done = lite(*args)
        assert done.code == 0, done.err
    return ids


def test_a_queue_goes_round_sqlite_postgresql_mysql_sqlite_and_ticks_the_same(
    tmp_path: Path, pg_url: str, mysql_url: str, http: HttpSink
) -> None:
    original = tmp_path / "original.db"
    lite = _cli(original)
    ids = _queue_of_every_kind(lite, http)
    # A lease of a tick still running on the old database: not copied.
    store = open_sqlite(original)
    store.claim(10**13, 10, 3, 10**9, "old-host")
    store.close()
    before = sqlite_tables(original)
    assert all(before[t] for t in ("dead_letters", "target_retries", "reminder_changes", META))
    assert {r["state"] for r in lite.inspect("--all")} >= {"done", "pending", "dead", "cancelled"}
    assert any(r[1] for r in before["deliveries"]) and len(before[SEARCH]) == len(ids)

    final = tmp_path / "final.db"
    for source, target in ((original, pg_url), (pg_url, mysql_url), (mysql_url, final)):
        run = _cli(source)("migrate", "--to", str(target))
        assert (run.code, run.err) == (0, ""), run.err
        assert run.out.startswith(f"migrated {len(ids)} reminders, ")
    # Table by table, column by column (leases are not among the columns: not copied).
    assert "lease_until" not in columns("reminders")
    assert pg_tables(pg_url) == before
    assert mysql_tables(mysql_url) == before
    assert sqlite_tables(final) == before
    assert final.stat().st_mode & 0o077 == 0  # owner-only, as duequeue creates its files
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []

    leased = "SELECT count(*) FROM {} WHERE lease_until IS NOT NULL"
    conn = apsw.Connection(str(final))
    assert [conn.execute(leased.format(t)).get for t in ("reminders", "target_retries")] == [0, 0]
    conn.close()
    # What the old tick's leases would have become once it ended: none, as in the copy.
    conn = apsw.Connection(str(original))
    for table in ("reminders", "target_retries"):
        assert conn.execute(leased.format(table)).get > 0
        conn.execute(f"UPDATE {table} SET lease_owner = NULL, lease_until = NULL")
    conn.close()

    copy = _cli(final)
    copy.now = lite.now
    assert copy.inspect("--all") == lite.inspect("--all")
    for rid in ids:
        assert (
            copy("history", str(rid), "--json").json() == lite("history", str(rid), "--json").json()
        )

    # A day on, each ticks: the copy delivers exactly what the original does.
    def tick(cli: Cli) -> tuple[dict[str, int], Counter[tuple[str, bytes]]]:
        seen = len(http.requests)
        cli.advance(days=1)
        summary = counts(cli.tick())
        return summary, Counter((r.path, r.body) for r in http.requests[seen:])

    expected, copied = tick(lite), tick(copy)
    assert expected[0]["claimed"] >= 4 and len(expected[1]) >= 3
    assert copied == expected
    assert copy.inspect("--all") == lite.inspect("--all")
    # The copy's ids go on past the copied ones.
    assert copy.add("--at", "+1h", "--webhook", http.url("/new")) == max(ids) + 1


def test_refused_copies_write_nothing(tmp_path: Path, pg_url: str, mysql_url: str) -> None:
    source = tmp_path / "source.db"
    lite = _cli(source)
    lite.add("--at", "+1h", "--webhook", "https://hooks.example.com/a", "--subject", "a")
    full = tmp_path / "full.db"
    _cli(full).add("--at", "+2h", "--webhook", "https://hooks.example.com/b", "--subject", "b")
    for target in (pg_url, mysql_url):
        _cli(target).add("--at", "+2h", "--webhook", "https://hooks.example.com/b")
    before = (sqlite_tables(full), pg_tables(pg_url), mysql_tables(mysql_url))

    for target in (str(full), pg_url, mysql_url):
        run = lite("migrate", "--to", target)
        assert run.code == 1
        assert "already holds 1 reminders: migrate copies into an empty database only" in run.err
        assert len(run.err.splitlines()) == 1
    # Into the source itself, however spelled: bad input, before anything is opened.
    run = lite("migrate", "--to", str(tmp_path / "." / "source.db"))
    assert (run.code, run.err.startswith("duequeue: error: --to: ")) == (2, True)
    for url in (pg_url, mysql_url):
        other = url.replace("postgresql://", "postgres://").replace("mysql://", "mariadb://")
        run = _cli(url)("migrate", "--to", f"{other}?connect_timeout=5")
        assert (run.code, run.err.startswith("duequeue: error: --to: ")) == (2, True), run.err
    assert (sqlite_tables(full), pg_tables(pg_url), mysql_tables(mysql_url)) == before
    assert _databases(tmp_path) == ["full.db", "source.db"]


def test_a_copy_cut_midway_leaves_the_target_as_it_was(
    tmp_path: Path, pg_url: str, mysql_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The source fails after the reminders went over: no new file, no rows in MySQL."""
    from duequeue.errors import StoreError
    from duequeue.store import copy as copy_pg

    source = tmp_path / "source.db"
    _cli(source).add("--at", "+1h", "--webhook", "https://hooks.example.com/a")
    assert _cli(source)("migrate", "--to", pg_url).code == 0
    rows = copy_pg.PostgresReader.rows

    def cut(self: Any, table: str, names: Any) -> Any:
        if table == "targets":
            raise StoreError("reading PostgreSQL: the link went down (a test's fault)")
        return rows(self, table, names)

    monkeypatch.setattr(copy_pg.PostgresReader, "rows", cut)
    target = tmp_path / "new.db"
    for to in (str(target), mysql_url):
        run = _cli(pg_url)("migrate", "--to", to)
        assert run.code == 1
        assert (
            run.err == "duequeue: error: reading PostgreSQL: the link went down (a test's fault)\n"
        )
    assert _databases(tmp_path) == ["source.db"]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]
    assert my.query(mysql_url, "SELECT count(*) FROM reminders") == [(0,)]


@pytest.mark.parametrize("kind", ["postgresql", "mysql"])
def test_an_empty_server_database_copies_into_a_new_sqlite_file(
    tmp_path: Path, kind: str, request: pytest.FixtureRequest
) -> None:
    url = request.getfixturevalue("pg_url" if kind == "postgresql" else "mysql_url")
    _cli(url)("init")
    target = tmp_path / "new.db"
    run = _cli(url)("migrate", "--to", str(target))
    assert (run.code, run.err) == (0, ""), run.err
    assert run.out.startswith("migrated 0 reminders, ")
    assert _cli(target).inspect("--all") == []


def test_a_source_of_a_newer_duequeue_is_refused_before_anything_is_written(
    tmp_path: Path, pg_url: str
) -> None:
    source = tmp_path / "source.db"
    _cli(source).add("--at", "+1h", "--webhook", "https://hooks.example.com/a")
    conn = apsw.Connection(str(source))
    conn.execute("PRAGMA user_version = 999")
    conn.close()
    for target in (str(tmp_path / "new.db"), pg_url):
        run = _cli(source)("migrate", "--to", target)
        assert run.code == 1
        assert "has schema version 999" in run.err and len(run.err.splitlines()) == 1
    assert _databases(tmp_path) == ["source.db"]
    with pg.admin_connect(pg_url) as conn:
        assert conn.execute(
            "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'"
        ).fetchone() == (0,)


def test_a_source_a_newer_duequeue_expanded_is_refused_too(tmp_path: Path, mysql_url: str) -> None:
    """Its floor is this version's, so it opens (a rolling upgrade), but its newer columns would
    not be copied: migrate refuses it, the target untouched."""
    source = tmp_path / "source.db"
    _cli(source).add("--at", "+1h", "--webhook", "https://hooks.example.com/a")
    conn = apsw.Connection(str(source))
    conn.execute(f"INSERT INTO queue_meta VALUES ('{STEPS_KEY}', '{VERSION + 1}')")
    conn.close()
    assert _cli(source).inspect("--all") != []  # a rolling upgrade: this version still runs
    for target in (str(tmp_path / "new.db"), mysql_url):
        run = _cli(source)("migrate", "--to", target)
        assert run.code == 1
        assert run.err == (
            f"duequeue: error: SQLite {source} has schema version {VERSION + 1}; this duequeue's "
            f"migrate copies schema {VERSION} only: run the migrate of the duequeue that made it\n"
        )
    assert _databases(tmp_path) == ["source.db"]
    assert my.query(mysql_url, "SHOW TABLES") == []
