"""Work is shared after an import, and the tz catch-up never holds rows a claim could take
(issue 30 item 4), on PostgreSQL where several hosts tick one queue.

- A fresh `duequeue import`, then three ticks at once: each claims work. Before, import recorded
  no tz release, so the first tick's catch-up leased the rows 2,000 at a time to compute them
  again, and ticks started beside it claimed nothing.
- The catch-up passes over rows another transaction has locked (a claim under way on another
  host), without waiting for them, computes the rest in small batches, and leases nothing.
"""

import dataclasses
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from duequeue.engine import recompute
from duequeue.schedule import release
from duequeue.shared.timefmt import to_ms
from duequeue.store.postgres import connect as open_postgres
from duequeue.store.records import NewReminder, NewTarget
from tests.paths import ROOT
from tests.pg import admin_connect
from tests.procs import LIMIT_S
from tests.servers import HttpSink, Reply

SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
ROWS = 300
# Each tick claims 20 rows at a time, and claims more only while fewer than 3 x 20 + 4 targets
# wait; with every send held it stops at 80 rows: three ticks cannot take all 300 between them
# unless one of them finds none.
TICK_ENV = {"DUEQUEUE_TICK_LIMIT": "20", "DUEQUEUE_CONCURRENCY": "4"}


@pytest.fixture
def http() -> Iterator[HttpSink]:
    with HttpSink() as sink:
        yield sink


def env_for(db: str, extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DUEQUEUE_")}
    env.update(PYTHONPATH=str(ROOT), DUEQUEUE_DB=db, DUEQUEUE_WEBHOOK_SECRET=SECRET)
    env.update(extra or {})
    return env


def leasing_ticks(url: str) -> int:
    """How many ticks hold leases now (a lease owner per tick)."""
    with admin_connect(url) as conn:
        row = conn.execute(
            "SELECT count(DISTINCT lease_owner) FROM reminders WHERE lease_until IS NOT NULL"
        ).fetchone()
    return int(row[0]) if row else 0


def test_three_ticks_after_a_fresh_import_each_claim_work(
    pg_url: str, http: HttpSink, tmp_path: Path
) -> None:
    http.respond("/r", Reply(hold=True))  # every send held: each tick keeps what it claimed
    due = (datetime.now(UTC) - timedelta(minutes=1)).isoformat()
    lines = tmp_path / "r.jsonl"
    lines.write_text(
        "".join(json.dumps({"at": due, "webhooks": http.url("/r")}) + "\n" for _ in range(ROWS))
    )
    done = subprocess.run(
        [sys.executable, "-m", "duequeue", "import", str(lines)],
        env=env_for(pg_url), capture_output=True, text=True, timeout=LIMIT_S, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    ticks = [
        subprocess.Popen(
            [sys.executable, "-m", "duequeue", "tick", "--json"],
            env=env_for(pg_url, TICK_ENV),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(3)
    ]
    try:
        deadline = time.monotonic() + LIMIT_S
        # Each tick holds its claims while its sends are held; a tick that claimed nothing
        # ends at once, and then three owners are never seen.
        while leasing_ticks(pg_url) < 3:
            ended = [t.poll() is not None for t in ticks]
            assert not any(ended) and time.monotonic() < deadline, ended
            time.sleep(0.05)
        http.release()
        results = [t.communicate(timeout=LIMIT_S) for t in ticks]
    finally:
        for t in ticks:
            if t.poll() is None:
                t.kill()
                t.communicate(timeout=LIMIT_S)
    summaries = [json.loads(out) for out, _ in results]
    assert [t.returncode for t in ticks] == [0, 0, 0], [err for _, err in results]
    assert all(s["claimed"] > 0 for s in summaries), summaries
    ids = [r.headers["webhook-id"] for r in http.requests]
    assert len(ids) == len(set(ids))  # none twice
    with admin_connect(pg_url) as conn:
        row = conn.execute(
            """SELECT count(*) FILTER (WHERE fire_release = %s), count(*),
                   (SELECT count(*) FROM fire_moves)
               FROM reminders""",
            (release.in_use(),),
        ).fetchone()
    assert row == (ROWS, ROWS, 0)  # recorded by the import; nothing computed again


def stale_rows(n: int, now: int) -> list[NewReminder]:
    """One-shots at a wall time in a zone, stored as if by an older tz release."""
    target = (NewTarget("webhook", "https://hooks.example.com/r"),)
    due = now + 3_600_000
    return [
        NewReminder(
            f"r{i}",
            "b",
            None,
            "Europe/Berlin",
            due,
            due,
            target,
            start_wall=datetime.fromtimestamp(due / 1000, UTC).replace(tzinfo=None).isoformat(),
            release="2000a",
        )
        for i in range(n)
    ]


def test_the_catch_up_skips_rows_another_transaction_locks_and_leases_nothing(
    pg_url: str,
) -> None:
    mine = release.in_use()
    assert mine
    now = to_ms(datetime.now(UTC))
    store = open_postgres(pg_url, busy_timeout_s=1.0)
    try:
        store.add_many(stale_rows(450, now), now)
        with admin_connect(pg_url) as conn:
            conn.execute("BEGIN")
            # Another host's claim under way: rows locked in its transaction.
            locked = [
                r[0]
                for r in conn.execute(
                    "SELECT id FROM reminders WHERE id % 3 = 0 FOR UPDATE"
                ).fetchall()
            ]
            started = time.monotonic()
            done = recompute.catch_up(store, now, mine)
            took = time.monotonic() - started
            # It waited for none of them (a wait would have ended at the 1 s lock_timeout with
            # an error), and left each one as it was.
            assert done.checked == 450 - len(locked), done
            assert took < 30
            with admin_connect(pg_url) as other:
                rows = other.execute(
                    "SELECT id, fire_release, lease_until FROM reminders ORDER BY id"
                ).fetchall()
            assert {i for i, rel, _ in rows if rel != mine} == set(locked)
            assert all(lease is None for _, _, lease in rows)  # nothing leased: nothing held
            conn.execute("COMMIT")
        again = recompute.catch_up(store, now, mine)
        assert again.checked == len(locked)
        assert {r.release for r in store.read_stale(mine, 0, 1000)} == set()
    finally:
        store.close()


def test_a_catch_up_that_fails_mid_batch_holds_no_row_a_claim_could_take(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    mine = release.in_use()
    assert mine
    now = to_ms(datetime.now(UTC))
    store = open_postgres(pg_url, busy_timeout_s=1.0)
    try:
        rows = stale_rows(50, now)
        store.add_many([dataclasses.replace(r, fire_at=now - 60_000) for r in rows], now)

        def broken(row: object) -> object:
            raise RuntimeError("the pass dies computing its batch")

        monkeypatch.setattr(recompute, "refire", broken)
        with pytest.raises(RuntimeError):
            recompute.catch_up(store, now, mine)
        # Before, the batch was leased (for 2 minutes) before it was computed: a claim beside
        # the dead pass found none of its due rows.
        claimed = store.claim(now, 100, 3, 60_000, "a tick")
        assert len(claimed) == 50
    finally:
        store.close()
