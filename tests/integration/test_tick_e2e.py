"""End to end through the CLI: add, tick and inspect against a real SMTP and a real HTTP server."""

import json
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
    with SmtpSink(refuse={"gone@example.com"}) as sink:
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


def test_a_reminder_reaches_email_and_a_signed_webhook_once(
    cli: Cli, smtp: SmtpSink, http: HttpSink
) -> None:
    rid = cli.add(
        "--at",
        "2027-01-05T09:05",
        "--tz",
        "Europe/Berlin",
        "--email",
        "ann@example.com",
        "--webhook",
        http.url("/r"),
        "--subject",
        "Pay rent",
        "--body",
        "Due today",
        "--data",
        '{"flat": 3}',
    )
    assert counts(cli.tick()) == NOTHING  # 08:00Z is 09:00 in Berlin: not yet due

    cli.advance(minutes=5)
    summary = cli.tick()
    assert counts(summary) == {**NOTHING, "claimed": 1, "sent": 1}
    assert (summary["deliveries_sent"], summary["deliveries_failed"]) == (2, 0)

    (mail,) = smtp.messages
    assert (mail["From"], mail["To"], mail["Subject"]) == (
        "reminders@example.com",
        "ann@example.com",
        "Pay rent",
    )
    assert mail.get_content().strip() == "Due today"
    assert mail["Message-ID"].startswith(f"<dq_{rid}_")
    assert mail["Date"]

    (req,) = http.requests_for("/r")
    # Verified by the reference implementation, not by our own signing code.
    event = cli.verify(req.body, req.headers)
    assert event["type"] == "reminder.fired"
    assert event["data"] == {
        "reminder_id": rid,
        "fire_at": "2027-01-05T08:05:00.000Z",
        "subject": "Pay rent",
        "body": "Due today",
        "data": {"flat": 3},
    }
    assert req.headers["webhook-id"] != mail["Message-ID"].strip("<>").split("@")[0]

    cli.advance(minutes=1)
    assert counts(cli.tick()) == NOTHING  # a second tick is silent
    assert len(smtp.messages) == 1
    assert len(http.requests) == 1
    row = cli.row(rid)
    assert (row["state"], row["next_fire_at"], row["last_fired_at"]) == (
        "done",
        None,
        "2027-01-05T08:05:00.000Z",
    )


def test_a_partial_success_advances_and_retries_only_the_failed_target(
    cli: Cli, smtp: SmtpSink, http: HttpSink
) -> None:
    http.respond("/down", Reply(500, body=b"database on fire"))
    rid = cli.add(
        "--at",
        "now",
        "--rrule",
        "FREQ=DAILY",
        "--email",
        "ann@example.com",
        "--webhook",
        http.url("/down"),
    )
    assert counts(cli.tick()) == {**NOTHING, "claimed": 1, "partial": 1}
    row = cli.row(rid)
    assert row["error_count"] == 0
    assert row["last_error"].startswith(f"partial: webhook {http.url('/down')}: HTTP 500")
    assert row["next_fire_at"] == "2027-01-06T08:00:00.000Z"

    cli.advance(seconds=59)
    assert counts(cli.tick()) == NOTHING  # the webhook's own backoff: 1 minute
    cli.advance(seconds=1)
    assert counts(cli.tick()) == {**NOTHING, "claimed": 1, "retried": 1}
    cli.advance(minutes=5)
    http.respond("/down", Reply(200))
    assert counts(cli.tick()) == {**NOTHING, "claimed": 1, "sent": 1}
    assert len(smtp.messages) == 1  # the email that got the fire never gets it again
    down = http.requests_for("/down")
    assert len(down) == 3
    assert len({r.headers["webhook-id"] for r in down}) == 1  # one fire, one webhook-id
    for _ in range(10):
        cli.advance(minutes=7)
        assert counts(cli.tick()) == NOTHING

    cli.now = datetime(2027, 1, 6, 8, 0, 30, tzinfo=UTC)
    assert counts(cli.tick()) == {**NOTHING, "claimed": 1, "sent": 1}
    assert len(smtp.messages) == 2
    assert len(http.requests_for("/down")) == 4
    ids = {r.headers["webhook-id"] for r in http.requests_for("/down")}
    assert len(ids) == 2  # one webhook-id per fire


def test_a_full_failure_backs_off_then_dead_letters(cli: Cli, http: HttpSink) -> None:
    http.respond("/flaky", Reply(503))
    rid = cli.add("--at", "now", "--webhook", http.url("/flaky"), "--subject", "s")

    assert counts(cli.tick()) == {**NOTHING, "claimed": 1, "retried": 1}
    assert cli.row(rid)["next_fire_at"] == "2027-01-05T08:01:00.000Z"
    cli.advance(seconds=59)
    assert counts(cli.tick()) == NOTHING  # backing off
    cli.advance(seconds=1)
    assert counts(cli.tick()) == {**NOTHING, "claimed": 1, "retried": 1}
    assert cli.row(rid)["next_fire_at"] == "2027-01-05T08:06:00.000Z"
    cli.advance(minutes=5)
    assert counts(cli.tick()) == {**NOTHING, "claimed": 1, "dead": 1}

    (dead,) = cli.inspect("--dead")
    assert (dead["id"], dead["dead"], dead["error_count"], dead["next_fire_at"]) == (
        rid,
        True,
        3,
        None,
    )
    assert dead["last_error"] == f"webhook {http.url('/flaky')}: HTTP 503"
    cli.advance(hours=5)
    assert counts(cli.tick()) == NOTHING
    requests = http.requests_for("/flaky")
    assert len(requests) == 3
    assert len({r.headers["webhook-id"] for r in requests}) == 1  # stable across retries


def test_a_permanent_4xx_dead_letters_at_once(cli: Cli, http: HttpSink) -> None:
    http.respond("/gone", Reply(410))
    rid = cli.add("--at", "now", "--webhook", http.url("/gone"))
    assert counts(cli.tick()) == {**NOTHING, "claimed": 1, "dead": 1}
    assert [r["id"] for r in cli.inspect("--dead")] == [rid]
    assert len(http.requests_for("/gone")) == 1


def test_a_refused_recipient_beside_a_good_webhook_is_a_partial_success(
    cli: Cli, smtp: SmtpSink, http: HttpSink
) -> None:
    rid = cli.add("--at", "now", "--email", "gone@example.com", "--webhook", http.url("/ok"))
    assert counts(cli.tick()) == {**NOTHING, "claimed": 1, "partial": 1}
    assert "email gone@example.com" in cli.row(rid)["last_error"]
    assert smtp.messages == []


def test_retry_after_is_honoured(cli: Cli, http: HttpSink) -> None:
    http.respond("/busy", Reply(429, headers={"Retry-After": "900"}))
    rid = cli.add("--at", "now", "--webhook", http.url("/busy"))
    assert counts(cli.tick()) == {**NOTHING, "claimed": 1, "retried": 1}
    assert cli.row(rid)["next_fire_at"] == "2027-01-05T08:15:00.000Z"


def test_a_hung_webhook_is_cut_at_its_timeout_while_the_email_goes_out(
    cli: Cli, smtp: SmtpSink, http: HttpSink
) -> None:
    http.respond("/hang", Reply(hang=True))
    rid = cli.add("--at", "now", "--email", "ann@example.com", "--webhook", http.url("/hang"))
    summary = cli("tick", "--json", env={"DUEQUEUE_CHANNEL_TIMEOUT": "0.5"}).json()
    assert counts(summary) == {**NOTHING, "claimed": 1, "partial": 1}
    assert len(smtp.messages) == 1
    assert "timeout" in cli.row(rid)["last_error"]


def test_a_row_with_its_email_sent_before_a_crash_gets_only_the_webhook(
    cli: Cli, open_store: Callable[[], Store], smtp: SmtpSink, http: HttpSink
) -> None:
    rid = cli.add("--at", "now", "--email", "ann@example.com", "--webhook", http.url("/r"))
    # A tick that sent the email, recorded it, and died before the webhook and the write-back.
    from duequeue.shared.timefmt import to_ms
    from duequeue.store.records import DeliveryRecord

    store = open_store()
    (fire,) = store.claim(to_ms(T0), 10, 3, 60_000, "crashed-tick")
    email = next(t for t in fire.targets if t.channel == "email")
    sent = DeliveryRecord(rid, email.id, fire.fire_at, "sent", None, 1, to_ms(T0))
    store.commit("crashed-tick", to_ms(T0), [sent], [], [])
    store.close()

    assert counts(cli.tick()) == NOTHING  # the dead tick's lease still holds
    cli.advance(minutes=2)
    assert counts(cli.tick()) == {**NOTHING, "claimed": 1, "sent": 1}
    assert smtp.messages == []
    assert len(http.requests_for("/r")) == 1


def test_a_tick_over_its_budget_releases_rows_it_did_not_start(cli: Cli, http: HttpSink) -> None:
    for _ in range(3):
        cli.add("--at", "now", "--webhook", http.url("/r"))
    # One send at a time, and the first is answered a second after it arrives: by then the
    # half-second budget has run out however busy the machine is, so the others never start.
    # (On a machine so busy that the budget runs out before the first send, none starts.)
    http.respond("/r", Reply(delay=1.0), Reply())
    one_at_a_time = {"DUEQUEUE_CONCURRENCY": "1", "DUEQUEUE_WEBHOOK_PER_HOST": "1"}
    summary = cli("tick", "--json", env={**one_at_a_time, "DUEQUEUE_TICK_BUDGET": "0.5"}).json()
    started = len(http.requests)
    assert started <= 1
    assert counts(summary) == {**NOTHING, "claimed": 3, "sent": started, "released": 3 - started}
    again = counts(cli.tick())  # at once, no lease wait
    assert again == {**NOTHING, "claimed": 3 - started, "sent": 3 - started}


def test_email_without_smtp_settings_is_a_recorded_failure_not_a_crash(
    db: Db,
) -> None:
    cli = Cli(db, T0)
    rid = cli.add("--at", "now", "--email", "ann@example.com")
    assert counts(cli.tick()) == {**NOTHING, "claimed": 1, "retried": 1}
    assert "DUEQUEUE_SMTP_URL" in cli.row(rid)["last_error"]


def test_tick_limit_bounds_each_claim_and_the_tick_drains_batch_after_batch(
    cli: Cli, http: HttpSink
) -> None:
    ids = [
        cli.add("--at", f"2027-01-05T07:5{i}Z", "--webhook", http.url(f"/{i}")) for i in range(5)
    ]
    # Two rows per claim (per transaction), and claims go on while rows are due.
    assert cli.tick("--limit", "2")["claimed"] == 5
    assert sorted(r.path for r in http.requests) == [f"/{i}" for i in range(5)]
    assert {r["id"] for r in cli.inspect("--all") if r["state"] == "done"} == set(ids)
    assert cli("tick", "--json", env={"DUEQUEUE_TICK_LIMIT": "2"}).json()["claimed"] == 0


def test_the_text_summary_is_one_line(cli: Cli, http: HttpSink) -> None:
    cli.add("--at", "now", "--webhook", http.url("/r"))
    r = cli("tick")
    assert r.code == 0
    assert r.out.count("\n") == 1
    assert r.out.startswith("tick: claimed 1: sent 1, partial 0, retried 0, dead 0")


def test_a_daily_rule_is_delivered_once_a_day(cli: Cli, http: HttpSink) -> None:
    cli.add(
        "--at",
        "2027-01-05T09:00",
        "--tz",
        "America/New_York",
        "--rrule",
        "FREQ=DAILY",
        "--webhook",
        http.url("/daily"),
    )
    sent = 0
    for _ in range(4 * 24 * 4):  # four days of quarter-hour ticks
        sent += cli.tick()["sent"]
        cli.advance(minutes=15)
    fires = [json.loads(r.body)["data"]["fire_at"] for r in http.requests_for("/daily")]
    assert fires == [f"2027-01-0{d}T14:00:00.000Z" for d in (5, 6, 7, 8)]
    assert sent == 4


def test_missed_ticks_coalesce_into_one_delivery(cli: Cli, http: HttpSink) -> None:
    rid = cli.add("--at", "now", "--rrule", "FREQ=HOURLY", "--webhook", http.url("/h"))
    cli.advance(hours=6, minutes=30)  # cron was down
    summary = cli.tick()
    assert (summary["sent"], summary["skipped"]) == (1, 6)
    assert summary["max_lateness_s"] == 6.5 * 3600
    assert len(http.requests_for("/h")) == 1
    row = cli.row(rid)
    assert (row["next_fire_at"], row["skipped_fires"]) == ("2027-01-05T15:00:00.000Z", 6)
    assert (row["last_fired_at"], row["last_lateness_s"]) == ("2027-01-05T08:00:00.000Z", 23400)
