"""`pause` and `resume`: a reminder's and the whole queue's, through the real CLI and a real HTTP
receiver, on SQLite and PostgreSQL. A paused reminder is never delivered nor walked by a claim;
a paused queue's tick claims nothing and says so; resuming delivers a missed fire once."""

from datetime import UTC, datetime
from pathlib import Path

import pytest

from duequeue.store.store import Store
from tests.clirunner import SECRET, Cli, counts
from tests.servers import HttpSink, Reply
from tests.store_contract import LEASE, NOW, claim, reminder
from tests.stores import Db

T0 = datetime(2027, 1, 5, 8, 0, tzinfo=UTC)


@pytest.fixture
def cli(db: Db) -> Cli:
    return Cli(db, T0, {"DUEQUEUE_WEBHOOK_SECRET": SECRET, "DUEQUEUE_CHANNEL_TIMEOUT": "2"})


def test_a_paused_reminder_is_not_delivered_until_resumed_then_once(
    cli: Cli, http: HttpSink
) -> None:
    rid = cli.add("--at", "+1m", "--webhook", http.url("/r"), "--subject", "rent")
    other = cli.add("--at", "+1m", "--webhook", http.url("/o"))
    done = cli("pause", str(rid), "--json").json()
    assert done == {"paused": [rid], "skipped": []}
    assert cli.row(rid)["state"] == "paused"
    assert cli.row(rid)["next_fire_at"] is None
    assert cli.row(rid)["fire_at"] == "2027-01-05T08:01:00.000Z"

    cli.advance(minutes=10)
    assert counts(cli.tick())["sent"] == 1  # the other one only
    assert [r.path for r in http.requests] == ["/o"]
    stats = cli("stats", "--json").json()
    assert (stats["reminders"]["paused"], stats["reminders"]["pending"], stats["due"]) == (1, 0, 0)

    resumed = cli("resume", str(rid), "--json").json()
    assert resumed == {
        "resumed": [{"id": rid, "fire_at": "2027-01-05T08:01:00.000Z"}],
        "skipped": [],
    }
    assert counts(cli.tick())["sent"] == 1
    assert counts(cli.tick())["claimed"] == 0  # once
    assert [r.path for r in http.requests] == ["/o", "/r"]
    history = cli("history", str(rid)).out
    assert "paused" in history and "resumed" in history
    assert cli.row(other)["state"] == "done"


def test_pause_and_resume_skip_with_a_reason(cli: Cli) -> None:
    rid = cli.add("--at", "+1m", "--webhook", "https://example.com/h")
    cli("pause", str(rid))
    again = cli("pause", str(rid), "--json").json()
    assert again["skipped"] == [{"id": rid, "reason": "already paused"}]
    cli("resume", str(rid))
    not_paused = cli("resume", str(rid), "--json").json()
    assert not_paused["skipped"] == [{"id": rid, "reason": "not paused"}]
    cli("cancel", str(rid))
    cancelled = cli("pause", str(rid), "--json").json()
    assert cancelled["skipped"] == [{"id": rid, "reason": "cancelled"}]
    unknown = cli("pause", "999")
    assert unknown.code == 2 and "no reminder with id 999" in unknown.err


def test_a_paused_queue_ticks_nothing_and_says_so_everywhere(
    cli: Cli, http: HttpSink, tmp_path: Path
) -> None:
    cli.add("--at", "now", "--webhook", http.url("/r"))
    paused = cli("pause", "--json").json()
    assert paused == {"paused": True, "since": "2027-01-05T08:00:00.000Z", "changed": True}
    again = cli("pause", "--json").json()
    assert again == {**paused, "changed": False}  # the first pause's time stays

    summary = cli.tick()
    assert counts(summary)["claimed"] == 0
    assert summary["paused_since"] == "2027-01-05T08:00:00.000Z"
    line = cli("tick").out
    assert line.rstrip().endswith("; queue paused since 2027-01-05T08:00:00.000Z")
    assert http.requests == []
    stats = cli("stats", "--json").json()
    assert stats["queue_paused_since"] == "2027-01-05T08:00:00.000Z"
    assert cli("stats").out.startswith("queue PAUSED since 2027-01-05T08:00:00.000Z")
    assert "the queue is paused since" in cli("inspect", "--due").err
    doctor = cli("doctor").out
    assert "queue paused" in doctor
    cli("stats", "--prometheus", str(tmp_path / "dq.prom"))
    metrics = (tmp_path / "dq.prom").read_text()
    assert "duequeue_queue_paused 1\n" in metrics

    resumed = cli("resume", "--json").json()
    assert resumed == {"paused": False, "since": "2027-01-05T08:00:00.000Z", "changed": True}
    summary = cli.tick()
    assert (summary["sent"], summary["paused_since"]) == (1, None)
    assert cli("resume").out.strip() == "queue was not paused; nothing changed"


def test_cancel_by_key_cancels_the_live_reminder_holding_it(cli: Cli) -> None:
    rid = cli.add("--at", "+1h", "--webhook", "https://example.com/h", "--key", "rent-2027")
    done = cli("cancel", "--key", "rent-2027", "--json").json()
    assert done == {"cancelled": [rid], "skipped": []}
    assert cli.row(rid)["state"] == "cancelled"
    missing = cli("cancel", "--key", "rent-2027")
    assert missing.code == 2
    assert missing.err.strip() == "duequeue: error: --key: no live reminder with key 'rent-2027'"
    both = cli("cancel", str(rid), "--key", "x")
    assert both.code == 2


def test_a_paused_reminder_rescheduled_stays_paused(cli: Cli) -> None:
    rid = cli.add("--at", "+1h", "--webhook", "https://example.com/h")
    cli("pause", str(rid))
    cli("reschedule", str(rid), "--at", "+2h")
    row = cli.row(rid)
    assert (row["state"], row["next_fire_at"], row["fire_at"]) == (
        "paused",
        None,
        "2027-01-05T10:00:00.000Z",
    )
    retried = cli("retry", str(rid), "--json").json()
    assert retried["skipped"][0]["id"] == rid


def test_the_store_refuses_to_pause_a_row_a_tick_holds(store: Store) -> None:
    rid, _ = store.add(reminder(NOW), NOW)
    (fire,) = claim(store, NOW, "tick-a")
    (change,) = store.pause([rid], NOW + 1)
    assert change.skipped == "a tick is delivering it; try again in a moment"
    assert fire.reminder_id == rid
    # After the lease ran out, the pause goes through and no later claim takes the row.
    (change,) = store.pause([rid], NOW + LEASE + 1)
    assert change.skipped is None
    assert claim(store, NOW + LEASE + 2, "tick-b") == []


def test_a_paused_queue_claims_nothing_even_for_a_claim_already_under_way(store: Store) -> None:
    store.add(reminder(NOW), NOW)
    assert store.pause_queue(NOW) is None
    assert store.queue_paused() == NOW
    # The tick reads the pause first; a claim made anyway (a long tick's next batch) is empty.
    assert claim(store, NOW, "tick-a") == []
    assert store.resume_queue() == NOW
    assert len(claim(store, NOW, "tick-a")) == 1


def test_the_target_retries_of_a_paused_reminder_wait(cli: Cli, http: HttpSink) -> None:
    http.respond("/down", Reply(503), Reply(503), Reply(200))
    rid = cli.add(
        "--at", "now", "--rrule", "FREQ=DAILY", "--webhook", http.url("/up"),
        "--webhook", http.url("/down"),
    )  # fmt: skip
    assert counts(cli.tick())["partial"] == 1  # /down now retries the fire on its own
    cli("pause", str(rid))
    cli.advance(hours=2)
    assert counts(cli.tick())["claimed"] == 0
    assert len(http.requests_for("/down")) == 1
    cli("resume", str(rid))
    summary = cli.tick()
    assert summary["target_retries"] == 1
    assert len(http.requests_for("/down")) == 2
