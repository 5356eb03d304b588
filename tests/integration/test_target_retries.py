"""A failed target of a partial success retries on its own and ends sent or a dead letter, and a
410 Gone switches its target off: through the real CLI, a real SMTP and a real HTTP server."""

from collections.abc import Callable, Iterator
from datetime import UTC, datetime

import pytest

from duequeue.store.store import Store
from tests.clirunner import SECRET, Cli, counts
from tests.servers import HttpSink, Reply, SmtpSink
from tests.stores import Db

T0 = datetime(2027, 1, 5, 8, 0, tzinfo=UTC)
NOTHING = {
    "claimed": 0,
    "sent": 0,
    "partial": 0,
    "retried": 0,
    "dead": 0,
    "skipped": 0,
    "released": 0,
}


@pytest.fixture
def smtp() -> Iterator[SmtpSink]:
    with SmtpSink() as sink:
        yield sink


@pytest.fixture
def cli(db: Db, smtp: SmtpSink) -> Cli:
    return Cli(
        db,
        T0,
        {
            "DUEQUEUE_SMTP_URL": smtp.url,
            "DUEQUEUE_EMAIL_FROM": "reminders@example.com",
            "DUEQUEUE_WEBHOOK_SECRET": SECRET,
            "DUEQUEUE_CHANNEL_TIMEOUT": "2",
        },
    )


def test_a_failed_target_of_a_partial_one_shot_retries_then_is_a_dead_letter_retry_resends(
    cli: Cli, smtp: SmtpSink, http: HttpSink
) -> None:
    http.respond("/down", Reply(503, body=b"maintenance"))
    rid = cli.add("--at", "now", "--email", "ann@example.com", "--webhook", http.url("/down"))
    assert counts(cli.tick()) == {**NOTHING, "claimed": 1, "partial": 1}
    assert cli.row(rid)["state"] == "done"
    assert cli.inspect("--dead") == []  # not dead yet: the webhook retries on its own

    stats = cli("stats", "--json").json()
    assert stats["retrying_targets"] == 1
    history = cli("history", str(rid), "--json").json()
    (pending,) = history["target_retries"]
    assert (pending["target"]["channel"], pending["target"]["address"]) == (
        "webhook",
        http.url("/down"),
    )
    assert (pending["error_count"], pending["next_try_at"]) == (1, "2027-01-05T08:01:00.000Z")
    text = cli("history", str(rid)).out
    assert "target retries (of a partial success)" in text
    assert f"webhook:{http.url('/down')}" in text.split("target retries")[1]

    cli.advance(minutes=1)
    assert counts(cli.tick()) == {**NOTHING, "claimed": 1, "retried": 1}
    cli.advance(minutes=5)
    summary = cli.tick()
    assert counts(summary) == {**NOTHING, "claimed": 1, "dead": 1}
    assert summary["target_retries"] == 1
    assert summary["max_lateness_s"] is None  # a retry is late by design, not a late tick
    assert len(smtp.messages) == 1
    down = http.requests_for("/down")
    assert len(down) == 3
    assert len({r.headers["webhook-id"] for r in down}) == 1  # the same delivery each time

    (dead,) = cli.inspect("--dead")
    assert (dead["id"], dead["error_count"]) == (rid, 3)
    assert dead["dead_fire_at"] == "2027-01-05T08:00:00.000Z"
    assert "HTTP 503" in dead["last_error"]
    history = cli("history", str(rid), "--json").json()
    assert history["target_retries"] == []
    assert [d["error_count"] for d in history["dead_letters"]] == [3]
    # Done, and dead in every view while the dead letter awaits retry.
    for row in (dead, cli.row(rid), history["reminder"]):
        assert (row["state"], row["dead"], row["dead_letters"]) == ("done", True, 1)
    assert cli("stats", "--json").json()["retrying_targets"] == 0

    http.respond("/down", Reply(200))
    assert cli("retry", str(rid)).code == 0
    assert counts(cli.tick()) == {**NOTHING, "claimed": 1, "sent": 1}
    assert len(smtp.messages) == 1  # the email had the fire: only the dead webhook is re-sent
    down = http.requests_for("/down")
    assert len(down) == 4
    assert len({r.headers["webhook-id"] for r in down}) == 1
    assert cli.inspect("--dead") == []
    row = cli.row(rid)
    assert (row["state"], row["dead"], row["dead_letters"]) == ("done", False, 0)


def test_a_target_retry_of_an_older_fire_neither_blocks_nor_merges_into_the_next_fire(
    cli: Cli, http: HttpSink
) -> None:
    http.respond("/down", Reply(500))
    rid = cli.add(
        "--at", "now", "--rrule", "FREQ=MINUTELY", "--webhook", http.url("/ok"),
        "--webhook", http.url("/down"),
    )  # fmt: skip
    assert counts(cli.tick()) == {**NOTHING, "claimed": 1, "partial": 1}
    cli.advance(minutes=1)
    # The row's next fire and the /down retry of the first: two claims, each its own fire.
    summary = cli.tick()
    assert (summary["claimed"], summary["target_retries"]) == (2, 1)
    assert (summary["partial"], summary["retried"]) == (1, 1)
    assert len(http.requests_for("/ok")) == 2  # one a fire, never again for the first
    fires = [r.headers["webhook-id"] for r in http.requests_for("/down")]
    assert len(fires) == 3 and len(set(fires)) == 2  # fire 1 twice, fire 2 once
    history = cli("history", str(rid), "--json").json()
    assert sorted(r["fire_at"] for r in history["target_retries"]) == [
        "2027-01-05T08:00:00.000Z",
        "2027-01-05T08:01:00.000Z",
    ]
    assert cli.row(rid)["next_fire_at"] == "2027-01-05T08:02:00.000Z"


def test_a_target_retry_waits_at_least_as_long_as_retry_after_asks(
    cli: Cli, http: HttpSink
) -> None:
    http.respond("/busy", Reply(429, headers={"Retry-After": "600"}))
    rid = cli.add("--at", "now", "--webhook", http.url("/ok"), "--webhook", http.url("/busy"))
    cli.tick()
    (pending,) = cli("history", str(rid), "--json").json()["target_retries"]
    assert pending["next_try_at"] == "2027-01-05T08:10:00.000Z"
    cli.advance(minutes=9)
    assert counts(cli.tick()) == NOTHING
    cli.advance(minutes=1)
    assert cli.tick()["target_retries"] == 1


def test_cancel_stops_the_target_retries_of_a_finished_one_shot(cli: Cli, http: HttpSink) -> None:
    http.respond("/down", Reply(500))
    rid = cli.add("--at", "now", "--webhook", http.url("/ok"), "--webhook", http.url("/down"))
    cli.tick()
    assert cli("cancel", str(rid)).code == 0
    assert cli("stats", "--json").json()["retrying_targets"] == 0
    cli.advance(minutes=10)
    assert counts(cli.tick()) == NOTHING
    assert len(http.requests_for("/down")) == 1


def test_prune_keeps_a_finished_one_shot_while_a_target_still_retries(
    cli: Cli, http: HttpSink
) -> None:
    http.respond("/down", Reply(500))
    rid = cli.add("--at", "now", "--webhook", http.url("/ok"), "--webhook", http.url("/down"))
    cli.tick()
    cli.advance(seconds=30)
    assert cli("prune", "--older-than", "1s").code == 0
    assert cli.row(rid)["state"] == "done"
    http.respond("/down", Reply(200))
    cli.advance(seconds=30)
    assert counts(cli.tick()) == {**NOTHING, "claimed": 1, "sent": 1}
    assert len(http.requests_for("/down")) == 2


def test_a_recurring_dead_letter_records_the_attempts_that_killed_it(
    cli: Cli, http: HttpSink
) -> None:
    http.respond("/down", Reply(503))
    env = {"DUEQUEUE_BACKOFF": "1s"}
    rid = cli.add("--at", "now", "--rrule", "FREQ=MINUTELY;COUNT=3", "--webhook", http.url("/down"))
    for _ in range(3):
        cli("tick", env=env)
        cli.advance(seconds=1)
    (dead,) = cli.inspect("--dead")
    assert (dead["id"], dead["error_count"]) == (rid, 3)
    history = cli("history", str(rid), "--json").json()
    assert [d["error_count"] for d in history["dead_letters"]] == [3]
    assert len(history["attempts"]) == 3


def test_410_gone_disables_the_target_for_good_until_enabled(cli: Cli, http: HttpSink) -> None:
    http.respond("/gone", Reply(410, body=b"endpoint deleted"))
    rid = cli.add(
        "--at", "now", "--rrule", "FREQ=HOURLY", "--webhook", http.url("/ok"),
        "--webhook", http.url("/gone"),
    )  # fmt: skip
    assert counts(cli.tick()) == {**NOTHING, "claimed": 1, "partial": 1}
    gone = [t for t in cli.row(rid)["targets"] if t["address"] == http.url("/gone")]
    assert gone[0]["disabled_at"] == "2027-01-05T08:00:00.000Z"
    assert cli("stats", "--json").json()["disabled_targets"] == 1
    text = cli("inspect", "--all").out
    assert "disabled" in text
    history = cli("history", str(rid), "--json").json()
    (refused,) = [a for a in history["attempts"] if a["outcome"] != "sent"]
    assert refused["target"]["address"] == http.url("/gone")
    assert "endpoint gone" in refused["error"]
    assert history["target_retries"] == []  # a 410 is not retried

    for _ in range(3):
        cli.advance(hours=1)
        assert counts(cli.tick()) == {**NOTHING, "claimed": 1, "sent": 1}
    assert len(http.requests_for("/gone")) == 1
    assert len(http.requests_for("/ok")) == 4
    assert len(cli.inspect("--dead")) == 1  # the one fire it was refused, not one every hour

    http.respond("/gone", Reply(200))
    enabled = cli("enable", str(rid), "--json").json()
    assert enabled == {"enabled": [rid], "skipped": []}
    assert cli("stats", "--json").json()["disabled_targets"] == 0
    cli.advance(hours=1)
    cli.tick()
    assert len(http.requests_for("/gone")) == 2
    again = cli("enable", str(rid), "--json").json()
    assert again == {"enabled": [], "skipped": [{"id": rid, "reason": "no disabled target"}]}
    assert cli("enable", "999").code == 2


def test_a_reminder_whose_only_target_is_gone_skips_its_fires_and_sends_nothing(
    cli: Cli, http: HttpSink
) -> None:
    http.respond("/gone", Reply(410))
    rid = cli.add("--at", "now", "--rrule", "FREQ=HOURLY", "--webhook", http.url("/gone"))
    assert counts(cli.tick()) == {**NOTHING, "claimed": 1, "dead": 1}
    cli.advance(hours=1)
    assert counts(cli.tick()) == {**NOTHING, "claimed": 1, "skipped": 1}
    assert len(http.requests_for("/gone")) == 1
    row = cli.row(rid)
    assert row["last_error"].startswith("skipped: every target is disabled")
    assert row["next_fire_at"] == "2027-01-05T10:00:00.000Z"


# -- each target counts its own tries, from the ledger -----------------------------------------


def test_a_refused_target_beside_a_failing_one_dies_with_its_own_count_and_refusal(
    cli: Cli, http: HttpSink
) -> None:
    http.respond("/gone", Reply(404, body=b"no such hook"))
    http.respond("/flaky", Reply(503), Reply(503), Reply(200))
    rid = cli.add("--at", "now", "--webhook", http.url("/gone"), "--webhook", http.url("/flaky"))
    # No target has the fire: it waits for /flaky's retry; /gone was refused and is not tried again.
    assert counts(cli.tick()) == {**NOTHING, "claimed": 1, "retried": 1}
    assert cli.inspect("--dead") == []
    cli.advance(minutes=1)
    assert counts(cli.tick()) == {**NOTHING, "claimed": 1, "retried": 1}
    cli.advance(minutes=5)
    assert counts(cli.tick()) == {**NOTHING, "claimed": 1, "partial": 1}
    assert len(http.requests_for("/gone")) == 1
    assert len(http.requests_for("/flaky")) == 3
    (dead,) = cli.inspect("--dead")
    # The dead letter is /gone's: one try, and the refusal itself.
    assert (dead["id"], dead["error_count"]) == (rid, 1)
    assert dead["last_error"] == f"webhook {http.url('/gone')}: HTTP 404: no such hook"


def test_a_target_recorded_by_a_tick_that_died_before_writing_back_waits_and_counts_that_try(
    cli: Cli, http: HttpSink, open_store: Callable[[], Store]
) -> None:
    from duequeue.shared.timefmt import to_ms
    from duequeue.store.records import DeliveryRecord

    http.respond("/down", Reply(503))
    rid = cli.add("--at", "now", "--webhook", http.url("/ok"), "--webhook", http.url("/down"))
    # A tick that leased the row, recorded /down's failure (with when it may be tried again),
    # and was killed before it sent /ok or wrote anything back.
    now = to_ms(T0)
    store = open_store()
    try:
        (fire,) = store.claim(now, 10, 3, 60_000, "killed")
        down = next(t for t in fire.targets if t.address.endswith("/down"))
        failed = DeliveryRecord(
            rid, down.id, fire.fire_at, "failed", "HTTP 503", 1, now, now + 300_000
        )
        store.commit("killed", now, [failed], [], [])
    finally:
        store.close()
    cli.advance(minutes=2)  # the lease is over: the next tick takes the row
    assert counts(cli.tick()) == {**NOTHING, "claimed": 1, "partial": 1}
    assert len(http.requests_for("/ok")) == 1
    assert http.requests_for("/down") == []  # its wait is not over: not tried again yet
    (pending,) = cli("history", str(rid), "--json").json()["target_retries"]
    assert (pending["error_count"], pending["next_try_at"]) == (1, "2027-01-05T08:05:00.000Z")
    cli.advance(minutes=3)
    summary = cli.tick()
    assert (summary["target_retries"], summary["retried"]) == (1, 1)
    history = cli("history", str(rid), "--json").json()
    tries = [a["attempt"] for a in history["attempts"] if a["target"]["address"].endswith("/down")]
    assert tries == [1, 2]  # its own count, each attempt numbered once


def test_no_target_is_tried_more_than_max_retries_times_for_one_fire(
    cli: Cli, http: HttpSink
) -> None:
    http.respond("/down", Reply(503))
    rid = cli.add("--at", "now", "--webhook", http.url("/ok"), "--webhook", http.url("/down"))
    for _ in range(10):
        cli.tick()
        cli.advance(minutes=31)
    assert len(http.requests_for("/down")) == 3
    history = cli("history", str(rid), "--json").json()
    tries = [a["attempt"] for a in history["attempts"] if a["target"]["address"].endswith("/down")]
    assert tries == [1, 2, 3]
    (dead,) = cli.inspect("--dead")
    assert dead["error_count"] == 3


def test_two_targets_of_one_fire_retried_in_one_claim_count_their_own_tries_once(
    cli: Cli, http: HttpSink
) -> None:
    # Both webhooks fail twice, then answer. Their retries of the fire are claimed together;
    # each must count its own one earlier failure (not the fire's ledger read twice, which made
    # the second failure look like the third and dead-lettered both a try early).
    http.respond("/a", Reply(503), Reply(503), Reply(200))
    http.respond("/b", Reply(503), Reply(503), Reply(200))
    rid = cli.add(
        "--at", "now", "--email", "ann@example.com",
        "--webhook", http.url("/a"), "--webhook", http.url("/b"),
    )  # fmt: skip
    assert counts(cli.tick()) == {**NOTHING, "claimed": 1, "partial": 1}
    cli.advance(minutes=1)
    assert counts(cli.tick()) == {**NOTHING, "claimed": 2, "retried": 2}
    assert cli.inspect("--dead") == []
    pending = cli("history", str(rid), "--json").json()["target_retries"]
    assert sorted(p["error_count"] for p in pending) == [2, 2]
    cli.advance(minutes=5)
    assert counts(cli.tick()) == {**NOTHING, "claimed": 2, "sent": 2}
    assert len(http.requests_for("/a")) == len(http.requests_for("/b")) == 3
    assert cli.inspect("--dead") == []


def test_a_target_retry_that_gets_through_clears_the_rows_partial_error(
    cli: Cli, smtp: SmtpSink, http: HttpSink
) -> None:
    http.respond("/flaky", Reply(503), Reply(200))
    rid = cli.add("--at", "now", "--email", "ann@example.com", "--webhook", http.url("/flaky"))
    assert counts(cli.tick()) == {**NOTHING, "claimed": 1, "partial": 1}
    assert cli.row(rid)["last_error"].startswith("partial: ")
    assert "HTTP 503" in cli.row(rid)["last_error"]
    cli.advance(minutes=1)
    assert cli.tick()["target_retries"] == 1
    assert len(http.requests_for("/flaky")) == 2
    assert cli.row(rid)["last_error"] is None  # nothing failed in the end
    assert cli.inspect("--dead") == []


def test_a_partial_error_stays_while_another_target_of_it_is_dead(
    cli: Cli, smtp: SmtpSink, http: HttpSink
) -> None:
    http.respond("/flaky", Reply(503), Reply(200))
    http.respond("/missing", Reply(404))
    rid = cli.add(
        "--at", "now", "--email", "ann@example.com",
        "--webhook", http.url("/flaky"), "--webhook", http.url("/missing"),
    )  # fmt: skip
    cli.tick()
    cli.advance(minutes=1)
    cli.tick()
    assert "HTTP 404" in cli.row(rid)["last_error"]  # the dead target is still the news
