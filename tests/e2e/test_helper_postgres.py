"""The commit helper on PostgreSQL: a large tick's records and resolutions come from the helper's
own session, outcomes before write-backs, each target once."""

import collections
import json
import subprocess

from duequeue.engine.tick import HelperOptions, TickOptions, catch_up, tick
from duequeue.store.postgres import connect as open_postgres
from duequeue.store.records import NewTarget
from duequeue.store.store import Store
from tests.pg import admin_connect
from tests.procs import LIMIT_S, cli_args, cli_env, run_cli
from tests.servers import HttpSink
from tests.store_contract import NOW, reminder

ROWS = 300

# Who writes the ledger, and a write-back that finishes a one-shot before its `sent` outcome is
# committed is refused (failing the test), whichever session writes it.
WATCH = """
CREATE TABLE writers (pid integer NOT NULL);
CREATE FUNCTION note_writer() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN INSERT INTO writers VALUES (pg_backend_pid()); RETURN NEW; END $$;
CREATE TRIGGER note_writer AFTER INSERT ON deliveries FOR EACH ROW EXECUTE FUNCTION note_writer();
CREATE FUNCTION outcomes_first() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.reminder_id = OLD.id
                   AND d.fire_at = OLD.fire_at AND d.outcome = 'sent') THEN
        RAISE EXCEPTION 'write-back before its outcome';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER outcomes_first BEFORE UPDATE OF done_at ON reminders FOR EACH ROW
    WHEN (NEW.done_at IS NOT NULL AND OLD.done_at IS NULL) EXECUTE FUNCTION outcomes_first();
"""


def fill(store: Store, url: str) -> list[int]:
    """Add ROWS one-shot reminders due at NOW, one webhook each; return their ids."""
    ids = [store.add(reminder(targets=(NewTarget("webhook", url),)), NOW)[0] for _ in range(ROWS)]
    catch_up(store, NOW)  # the rows name no tz release: recorded before the tick counted here
    return ids


def test_a_large_tick_on_postgresql_commits_through_the_helper(pg_url: str, http: HttpSink) -> None:
    store = open_postgres(pg_url)
    try:
        ids = fill(store, http.url("/r"))
        with admin_connect(pg_url) as conn:
            conn.execute(WATCH)
        options = TickOptions(
            limit=10_000,
            webhook_concurrency=8,
            commit_helper=HelperOptions(pg_url, 5.0, min_rows=1),
        )

        summary = tick(store, NOW, options, lambda: NOW)

        assert (summary.claimed, summary.sent, summary.errors) == (ROWS, ROWS, ())
        ticker = store.backend.conn.info.backend_pid
        with admin_connect(pg_url) as conn:
            writers = {pid for (pid,) in conn.execute("SELECT pid FROM writers")}
            sent = collections.Counter(
                rid
                for (rid,) in conn.execute(
                    "SELECT reminder_id FROM deliveries WHERE outcome = 'sent'"
                )
            )
        assert len(writers) == 1 and ticker not in writers  # one other session: the helper's
        assert sent == collections.Counter(ids)
        assert {v.state for v in store.list_view("all", NOW)} == {"done"}
        per_id = collections.Counter(r.headers["webhook-id"] for r in http.requests)
        assert len(per_id) == ROWS and set(per_id.values()) == {1}
    finally:
        store.close()


# Which sessions lease rows: the tick's own, and after the helper starts, the helper's.
CLAIMERS = """
CREATE TABLE claimers (pid integer NOT NULL);
CREATE FUNCTION note_claimer() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN INSERT INTO claimers VALUES (pg_backend_pid()); RETURN NEW; END $$;
CREATE TRIGGER note_claimer AFTER UPDATE OF lease_owner ON reminders FOR EACH ROW
    WHEN (NEW.lease_owner IS NOT NULL) EXECUTE FUNCTION note_claimer();
"""


def test_a_draining_tick_on_postgresql_claims_through_the_helper(
    pg_url: str, http: HttpSink
) -> None:
    store = open_postgres(pg_url)
    try:
        ids = fill(store, http.url("/r"))
        with admin_connect(pg_url) as conn:
            conn.execute(WATCH)
            conn.execute(CLAIMERS)
        options = TickOptions(
            limit=50, webhook_concurrency=8, commit_helper=HelperOptions(pg_url, 5.0, 100)
        )

        summary = tick(store, NOW, options, lambda: NOW)

        assert (summary.claimed, summary.batches, summary.sent) == (ROWS, ROWS // 50, ROWS)
        ticker = store.backend.conn.info.backend_pid
        with admin_connect(pg_url) as conn:
            claimers = collections.Counter(
                pid for (pid,) in conn.execute("SELECT pid FROM claimers")
            )
            # The helper's session also writes outcomes (the tick may write the first ones).
            (helper,) = {pid for (pid,) in conn.execute("SELECT pid FROM writers")} - {ticker}
        # The first claims are the tick's (the helper starts at 100 rows; the tick claims on
        # until the helper takes over); the later ones the helper's.
        assert set(claimers) == {ticker, helper} and 100 <= claimers[ticker] < ROWS
        assert claimers[helper] == ROWS - claimers[ticker]
        sent = store.list_view("all", NOW)
        assert {v.state for v in sent} == {"done"} and sorted(v.id for v in sent) == ids
        per_id = collections.Counter(r.headers["webhook-id"] for r in http.requests)
        assert len(per_id) == ROWS and set(per_id.values()) == {1}
    finally:
        store.close()


def test_the_cli_tick_on_postgresql_delivers_a_batch_past_the_helper_threshold_once(
    pg_url: str, http: HttpSink
) -> None:
    n = 600
    lines = "".join(
        json.dumps({"at": "2020-01-01T00:00:00Z", "webhooks": [http.url("/r")]}) + "\n"
        for _ in range(n)
    )
    source = run_cli_with_input(pg_url, lines, "import", "-")
    assert source.returncode == 0, source.stderr

    r = run_cli(
        pg_url,
        "tick",
        "--json",
        env={"DUEQUEUE_TICK_LIMIT": str(n), "DUEQUEUE_COMMIT_HELPER_ROWS": "100"},
    )

    assert r.returncode == 0, r.stderr
    assert (json.loads(r.stdout)["sent"], json.loads(r.stdout)["errors"]) == (n, [])
    per_id = collections.Counter(q.headers["webhook-id"] for q in http.requests)
    assert len(per_id) == n and set(per_id.values()) == {1}
    done = run_cli(pg_url, "inspect", "--all", "--json")
    assert {row["state"] for row in json.loads(done.stdout)} == {"done"}


def run_cli_with_input(db: str, text: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        cli_args(*args),
        input=text,
        env=cli_env(db),
        capture_output=True,
        text=True,
        timeout=LIMIT_S,
        check=False,
    )
