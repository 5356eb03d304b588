"""Every statement on a tick's path is index-driven on PostgreSQL, whatever the history's size.

The tables get 10^5+ rows of reminders, targets, ledger and per-target retries (generate_series,
then ANALYZE, as autovacuum would). The store then runs a real tick's calls (claims of 100 and
5,000 rows, a 256-row ledger flush, every kind of resolution, releases) with auto_explain
sending each executed statement's plan back to the client: the plans checked are those of the
statements and parameters the store actually ran, follow-up queries and pipelined batches
included.
A sequential scan of a growing table makes a tick's cost grow with history: none is allowed.
"""

import json
from collections.abc import Iterator
from typing import Any

import pytest

from duequeue.store.records import (
    DeadFire,
    DeliveryRecord,
    Resolution,
    RowClaim,
    RowState,
    Waiting,
)
from tests.pg import admin_connect

NOW = 1_800_000_000_000
DUE = 10_000  # due one-shots, ids 1..DUE
FUTURE = 30_000  # pending later
DONE = 80_000  # finished, with their ledger history
REMINDERS = DUE + FUTURE + DONE
HISTORY = 200_000  # ledger rows of finished reminders' fires
RETRIES = 100_000  # per-target retries, 1,000 of them due
GROWING = {"reminders", "deliveries", "targets", "target_retries", "dead_letters"}

_FILL = f"""
INSERT INTO reminders (id, subject, body, tz, dtstart, fire_at, next_fire_at, done_at,
                       created_at, updated_at)
SELECT g, 's' || g, 'b', 'UTC', {NOW} - 1000000000,
       CASE WHEN g <= {DUE} THEN {NOW} - g WHEN g <= {DUE + FUTURE} THEN {NOW} + g * 1000 END,
       CASE WHEN g <= {DUE} THEN {NOW} - g WHEN g <= {DUE + FUTURE} THEN {NOW} + g * 1000 END,
       CASE WHEN g > {DUE + FUTURE} THEN {NOW} - 1000 END,
       {NOW} - 1000000000, {NOW} - 1000000000
FROM generate_series(1, {REMINDERS}) g;
INSERT INTO targets (id, reminder_id, channel, address)
SELECT g, g, 'webhook', 'https://example.test/' || g FROM generate_series(1, {REMINDERS}) g;
INSERT INTO deliveries (reminder_id, target_id, fire_at, outcome, error, attempt, at)
SELECT r, r, {NOW} - 100000000 - (g / {DONE}) * 3600000,
       CASE WHEN g % 4 = 0 THEN 'failed' ELSE 'sent' END, NULL, 1, {NOW} - 100000000
FROM generate_series(1, {HISTORY}) g, LATERAL (SELECT {DUE + FUTURE + 1} + g % {DONE} AS r) x;
-- Earlier failed attempts of some due rows' pending fires.
INSERT INTO deliveries (reminder_id, target_id, fire_at, outcome, error, attempt, at)
SELECT g, g, {NOW} - g, 'failed', 'timeout', 1, {NOW} - 60000 FROM generate_series(1, 2000) g;
INSERT INTO target_retries (reminder_id, target_id, fire_at, error_count, next_try_at,
                            created_at)
SELECT r, r, {NOW} - 50000000 - g, 1,
       CASE WHEN g <= 1000 THEN {NOW} - g ELSE {NOW} + g * 1000 END, {NOW} - 50000000
FROM generate_series(1, {RETRIES}) g, LATERAL (SELECT {DUE + 1} + g % {FUTURE + DONE} AS r) x;
-- Paused reminders (`pause`): a seventh of those pending later, some with due target retries,
-- which the claim must pass by without walking them all.
UPDATE reminders SET paused_at = {NOW} - 1, next_fire_at = NULL
WHERE id % 7 = 0 AND id > {DUE} AND id <= {DUE + FUTURE};
INSERT INTO dead_letters (reminder_id, fire_at, error_count, last_error, dead_at)
SELECT {DUE + FUTURE} + g, {NOW} - 200000000, 3, 'boom', {NOW} - 200000000
FROM generate_series(1, {DONE}) g;
"""


def _seq_scans(node: dict[str, Any]) -> Iterator[str]:
    """Yield the growing tables a plan (sub)tree reads by a sequential scan."""
    if node.get("Node Type") == "Seq Scan" and node.get("Relation Name") in GROWING:
        yield node["Relation Name"]
    for child in node.get("Plans", ()):
        yield from _seq_scans(child)


@pytest.fixture(scope="module")
def plans(pg_database: str) -> list[dict[str, Any]]:
    """Run one tick's store calls on large tables; return each executed statement's plan."""
    from duequeue.store.postgres import connect as open_postgres

    with admin_connect(pg_database) as conn:
        conn.execute("DROP SCHEMA IF EXISTS public CASCADE")
        conn.execute("CREATE SCHEMA public")
    store = open_postgres(pg_database)
    try:
        with admin_connect(pg_database) as conn:
            conn.execute(_FILL.encode())
            conn.execute("ANALYZE")
        found: list[dict[str, Any]] = []

        def collect(diag: Any) -> None:
            text = diag.message_primary or ""
            if "{" in text:
                found.append(json.loads(text[text.index("{") :]))

        conn = store.backend.conn
        conn.add_notice_handler(collect)
        conn.execute("LOAD 'auto_explain'")
        conn.execute("SET auto_explain.log_min_duration = 0")
        conn.execute("SET auto_explain.log_format = 'json'")
        conn.execute("SET auto_explain.log_level = 'notice'")
        _tick(store)
        conn.execute("SET auto_explain.log_min_duration = -1")
        return found
    finally:
        store.close()


def _tick(store: Any) -> None:
    """Claim, record, resolve and release as a tick does, on both claim sizes."""
    assert store.queue_paused() is None  # what a tick reads first
    for limit, owner in ((100, "small"), (5000, "large")):
        claimed = store.claim(NOW, limit, 3, 60_000, owner)
        rows = [f for f in claimed if isinstance(f.claim, RowClaim)]
        again = [f for f in claimed if not isinstance(f.claim, RowClaim)]
        assert len(rows) == limit and len(again) >= 100
        flush = rows[:200] + again[:56]
        records = [
            DeliveryRecord(f.reminder_id, f.targets[0].id, f.fire_at, "sent", None, 1, NOW)
            for f in flush
        ]
        store.commit(owner, NOW, records, [], [])
        store.commit(owner, NOW, records, [], [])  # a repeat after a lost commit adds nothing
        done = RowState(None, None, 0, None, "done", fired=True)
        resolutions = [
            Resolution(f.claim, f.reminder_id, f.fire_at, "sent", done) for f in rows[:100]
        ]
        resolutions += [
            Resolution(
                f.claim,
                f.reminder_id,
                f.fire_at,
                "partial",
                RowState(
                    f.fire_at + 3_600_000, f.fire_at + 3_600_000, 0, "partial", "pending", True
                ),
                waiting=(Waiting(f.targets[0].id, 1, NOW + 60_000, "timeout"),),
            )
            for f in rows[100:150]
        ]
        resolutions += [
            Resolution(
                f.claim,
                f.reminder_id,
                f.fire_at,
                "dead",
                RowState(None, None, 3, "boom", "dead"),
                dead=DeadFire(3, "boom", NOW),
            )
            for f in rows[150:200]
        ]
        resolutions += [Resolution(f.claim, f.reminder_id, f.fire_at, "sent") for f in again[:28]]
        resolutions += [
            Resolution(
                f.claim,
                f.reminder_id,
                f.fire_at,
                "retried",
                waiting=(Waiting(f.targets[0].id, 2, NOW + 60_000, "x"),),
            )
            for f in again[28:56]
        ]
        releases = [f.claim for f in claimed[len(flush) :]][:1000]
        committed = store.commit(owner, NOW, [], resolutions, releases)
        assert len(committed.applied) == len(resolutions)


def test_it_checks_the_plans_of_every_kind_of_tick_statement(plans: list[dict[str, Any]]) -> None:
    texts = " ".join(p["Query Text"] for p in plans)
    for statement in (
        "UPDATE reminders SET lease_owner",
        "UPDATE target_retries SET lease_owner",
        "FROM targets",
        "FROM deliveries",
        "INSERT INTO deliveries",
        "INSERT INTO target_retries",
        "INSERT INTO dead_letters",
        "DELETE FROM target_retries",
        "lease_owner = NULL",
    ):
        assert statement in texts


def test_no_tick_statement_scans_a_growing_table(plans: list[dict[str, Any]]) -> None:
    scanned = {
        " ".join(p["Query Text"].split())[:120]: sorted(set(_seq_scans(p["Plan"]))) for p in plans
    }
    assert {text: tables for text, tables in scanned.items() if tables} == {}
