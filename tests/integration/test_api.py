"""The Python API, `duequeue.Queue`: every method, on SQLite and PostgreSQL, against real
loopback receivers. Errors name the argument at fault; results carry aware UTC datetimes."""

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import fields
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from freezegun import freeze_time

import duequeue
from duequeue import (
    BadInputError,
    ConfigError,
    KeyConflictError,
    NotFoundError,
    Queue,
    Reminder,
    StoreError,
    TickSummary,
)
from duequeue.api.queue import check_setup
from duequeue.store import safe_url
from tests.servers import HttpSink, Reply
from tests.stores import Db, created

SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
T0 = datetime(2027, 1, 5, 8, 0, tzinfo=UTC)
BERLIN = ZoneInfo("Europe/Berlin")


@pytest.fixture
def queue(db: Db) -> Iterator[Queue]:
    with Queue(db, webhook_secret=SECRET) as q:
        yield q


def made_note(queue: Queue) -> str:
    """The note of the call that made the database (issue 33, item 1)."""
    if "://" in queue.settings.db:
        made, kind = f"created duequeue's tables in {queue.location}", "URL"
    else:
        made, kind = f"created a new database {queue.location}", "path"
    return (
        f"note: {made} (the {kind} given); if that is not the database your ticks run on, "
        "nothing added here is sent"
    )


def test_add_of_a_live_key_with_other_content_raises_and_a_cancelled_one_frees_it(
    queue: Queue,
) -> None:
    first = queue.add(at="2027-02-01T09:00Z", webhooks=["https://e.example/r"], key="rent")
    with pytest.raises(KeyConflictError) as caught:
        queue.add(at="2027-02-01T09:00Z", webhooks=["https://e.example/r"], key="rent", body="x")
    assert (caught.value.existing, caught.value.field) == (first.id, "key")
    queue.cancel(first.id)
    again = queue.add(
        at="2027-02-01T09:00Z", webhooks=["https://e.example/r"], key="rent", body="x"
    )
    assert again.created and again.id != first.id


def _aware_utc(value: object) -> None:
    """Fail unless every datetime in a result (nested ones too) is aware and in UTC."""
    if isinstance(value, datetime):
        assert value.utcoffset() == timedelta(0), value
    elif isinstance(value, tuple | list):
        for item in value:
            _aware_utc(item)
    elif hasattr(value, "__dataclass_fields__"):
        for f in fields(value):  # type: ignore[arg-type]
            if f.name != "local":  # a Fire's local time is in the reminder's zone, on purpose
                _aware_utc(getattr(value, f.name))


# -- add, tick, inspect, history, stats ------------------------------------------------------


def test_add_tick_inspect_history_and_stats(queue: Queue, http: HttpSink) -> None:
    with freeze_time(T0):
        added = queue.add(
            at=timedelta(minutes=1),
            webhooks=[http.url("/r")],
            subject="Standup",
            data={"room": 4},
            key="standup-1",
        )
        assert added.created and added.notes == (made_note(queue),)
        again = queue.add(
            at="+1m",
            webhooks=[http.url("/r")],
            subject="Standup",
            data={"room": 4},
            key="standup-1",
        )
        assert (again.id, again.created) == (added.id, False)
        assert again.notes == (
            f"key 'standup-1' exists: reminder {added.id}, with the same content; nothing added",
        )
        assert queue.tick().claimed == 0  # not due yet
        (pending,) = queue.inspect("pending")
    assert pending.id == added.id
    assert pending.fire_at == T0 + timedelta(minutes=1)
    assert pending.created_at == T0
    _aware_utc(pending)
    with freeze_time(T0 + timedelta(minutes=2)):
        summary = queue.tick()
        stats = queue.stats()
    assert isinstance(summary, TickSummary)
    assert (summary.claimed, summary.sent, summary.at) == (1, 1, T0 + timedelta(minutes=2))
    assert summary.max_lateness == timedelta(minutes=1)
    (request,) = http.requests
    assert json.loads(request.body)["data"]["data"] == {"room": 4}
    history = queue.history(added.id)
    _aware_utc(history)
    (attempt,) = history.attempts
    assert (attempt.outcome, attempt.fire_at) == ("sent", T0 + timedelta(minutes=1))
    assert attempt.target is not None and attempt.target.address == http.url("/r")
    assert history.reminder.state == "done"
    assert (stats.done, stats.sent_last_hour, stats.at) == (1, 1, T0 + timedelta(minutes=2))
    assert stats.oldest_due_lateness is None


def test_at_is_a_datetime_a_timedelta_or_text_and_results_are_utc(queue: Queue) -> None:
    hook = ["https://hooks.example.com/r"]
    with freeze_time(T0):
        in_berlin = queue.add(at=datetime(2027, 1, 6, 9, 0, tzinfo=BERLIN), webhooks=hook)
        later = queue.add(at=timedelta(hours=2), webhooks=hook)
        local = queue.add(at="2027-01-06T09:00", tz="America/New_York", webhooks=hook)
        daily = queue.add(
            at=datetime(2027, 1, 6, 9, 0, tzinfo=BERLIN), rrule="FREQ=DAILY", webhooks=hook
        )
        listed = {r.id: r for r in queue.inspect("pending")}
        fires = queue.next_fires(daily.id, 3)
    assert listed[in_berlin.id].fire_at == datetime(2027, 1, 6, 8, 0, tzinfo=UTC)
    assert listed[in_berlin.id].tz == "Europe/Berlin"  # the datetime's zone is the default tz
    assert listed[later.id].fire_at == T0 + timedelta(hours=2)
    assert listed[local.id].fire_at == datetime(2027, 1, 6, 14, 0, tzinfo=UTC)
    assert all(r.fire_at is not None and r.fire_at.tzinfo is UTC for r in listed.values())
    # The rule runs in Berlin: 09:00 there every day, 08:00 UTC in winter.
    assert [f.at for f in fires.fires] == [
        datetime(2027, 1, d, 8, 0, tzinfo=UTC) for d in (6, 7, 8)
    ]
    assert [f.local.hour for f in fires.fires] == [9, 9, 9]
    assert (fires.id, fires.tz, fires.state) == (daily.id, "Europe/Berlin", "pending")


def test_targets_as_channel_address_pairs_beside_the_sugar(queue: Queue, http: HttpSink) -> None:
    with freeze_time(T0):
        added = queue.add(
            at="now",
            webhooks=[http.url("/a")],
            targets=[("webhook", http.url("/b")), ("email", "ann@example.com")],
        )
        (r,) = queue.inspect("pending")
    assert [(t.channel, t.address) for t in r.targets] == [
        ("webhook", http.url("/a")),
        ("webhook", http.url("/b")),
        ("email", "ann@example.com"),
    ]
    assert r.id == added.id
    # Email without SMTP is accepted, with a warning.
    assert any("DUEQUEUE_SMTP_URL" in n for n in added.notes)


def test_a_notify_address_is_shown_masked_and_a_secret_never(queue: Queue, http: HttpSink) -> None:
    from standardwebhooks.webhooks import Webhook

    new = "whsec_" + "bmV3LXNlY3JldC1vZi10aGUtcmVjZWl2ZXItNDU2Nw=="
    topic = f"ntfy://127.0.0.1:{http.port}/topic-4f7a"
    with freeze_time(T0):
        added = queue.add(
            at="now",
            webhooks=[http.url("/w")],
            webhook_secret=f"{SECRET} {new}",
            notify=[topic],
            subject="Both",
        )
        summary = queue.tick()
        [target_w, target_n] = queue.inspect("all")[0].targets
        [hook] = http.requests_for("/w")
        for secret in (SECRET, new):
            Webhook(secret).verify(hook.body, dict(hook.headers))
    assert summary.deliveries_sent == 2
    assert json.loads(http.requests_for("/")[0].body)["topic"] == "topic-4f7a"
    assert (target_w.channel, target_w.has_secret) == ("webhook", True)
    assert (target_n.channel, target_n.address) == ("notify", topic)
    assert "topic-4f7a" not in target_n.display  # a path part of a notify URL is masked
    assert "bmV3" not in repr(target_w)  # no secret in a result
    assert [a.outcome for a in queue.history(added.id).attempts] == ["sent", "sent"]


# -- errors name the argument ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "field", "message"),
    [
        ({"at": "soon"}, "at", "at: invalid time 'soon'"),
        ({"at": datetime(2027, 1, 5, 8, 0)}, "at", "at: a datetime needs a time zone"),
        ({"at": 5}, "at", "at: expected a datetime, a timedelta or text"),
        ({"webhooks": ["https://ok.example/", "ftp://x.example/"]}, "webhooks[1]", "must start"),
        ({"emails": "ann@example.com"}, "emails", "emails: give a list, not one string"),
        ({"targets": [("sms", "+4930")]}, "targets[0]", "targets[0]: unknown channel 'sms'"),
        ({"targets": ["email:a@b.c"]}, "targets[0]", "expected a (channel, address) pair"),
        ({"notify": ["foo://bar"]}, "notify[0]", "notify[0]: foo://...: unknown service"),
        ({"tz": "Mars/Base"}, "tz", "tz: unknown time zone 'Mars/Base'"),
        ({"rrule": "FREQ=DAILY", "cron": "@daily"}, "rrule", "rrule/cron: give one recurrence"),
        ({"data": {1, 2}}, "data", "data: not a JSON value"),
        ({"data_json": "{"}, "data_json", "data_json: not valid JSON"),
        ({"misfire_grace": timedelta(0)}, "misfire_grace", "misfire_grace: expected a positive"),
        ({"webhook_secret": ["whsec_x", "whsec_y"]}, "webhook_secret", "2 given for 1 webhooks"),
        ({"subject": "a\nb"}, "subject", "subject: must be one line"),
    ],
)
def test_bad_input_names_its_field_and_writes_nothing(
    db: Db, kwargs: dict[str, object], field: str, message: str
) -> None:
    args: dict[str, object] = {"at": "now", "webhooks": ["https://ok.example/"], **kwargs}
    with Queue(db) as q, pytest.raises(BadInputError) as caught:
        q.add(**args)  # type: ignore[arg-type]
    assert caught.value.field == field
    assert message in str(caught.value)
    assert str(caught.value).startswith(f"{'/'.join(caught.value.fields)}: ")
    assert not created(db)  # not even the database


def test_unknown_ids_and_bad_arguments_name_their_field(queue: Queue) -> None:
    with pytest.raises(NotFoundError) as caught:
        queue.history(999)
    assert (caught.value.field, str(caught.value)) == ("id", "id: no reminder with id 999")
    with pytest.raises(NotFoundError) as caught:
        queue.next_fires(999)
    assert caught.value.field == "id"
    with pytest.raises(NotFoundError) as caught:
        queue.cancel(999)
    assert (caught.value.field, caught.value.exit_code) == ("ids", 2)
    for call, field in [
        (lambda: queue.cancel(), "ids"),
        (lambda: queue.enable(), "ids"),
        (lambda: queue.retry(), "ids"),
        (lambda: queue.retry(1, all_dead=True), "ids"),
        (lambda: queue.inspect("old"), "state"),  # type: ignore[arg-type]
        (lambda: queue.inspect(limit=0), "limit"),
        (lambda: queue.tick(limit=0), "limit"),
        (lambda: queue.next_fires(1, count=0), "count"),
        (lambda: queue.prune("0d"), "older_than"),
        (lambda: queue.prune(timedelta(-1)), "older_than"),
        (lambda: queue.worker("soon"), "every"),
        (lambda: queue.history("7"), "id"),  # type: ignore[arg-type]
        (lambda: queue.cancel(1, "2"), "ids[1]"),  # type: ignore[arg-type]
    ]:
        with pytest.raises(BadInputError) as bad:
            call()
        assert bad.value.field == field


def test_a_bad_setting_raises_config_error_naming_it(db: Db) -> None:
    with pytest.raises(ConfigError) as caught:
        Queue(db, backoff="1m,soon")
    assert caught.value.field == "backoff"
    assert str(caught.value).startswith("backoff: invalid duration 'soon'")
    with pytest.raises(ConfigError) as caught:
        Queue(db, smtp_url="ftp://mail.example")
    assert (caught.value.field, caught.value.detail[:18]) == ("smtp_url", "unsupported scheme")


def test_without_create_a_missing_database_is_an_error_and_stays_missing(tmp_path: Path) -> None:
    path = tmp_path / "typo.db"
    with Queue(path, create=False) as q, pytest.raises(StoreError, match="does not exist"):
        q.stats()
    assert not path.exists()


# -- dead letters, retry, enable, cancel, prune ----------------------------------------------


def test_a_dead_letter_is_listed_retried_and_a_cancelled_one_stays_quiet(
    queue: Queue, http: HttpSink
) -> None:
    http.respond("/refused", Reply(400))
    with freeze_time(T0):
        dead = queue.add(at="now", webhooks=[http.url("/refused")]).id
        other = queue.add(at="+1h", webhooks=[http.url("/refused")]).id
        queue.tick()
        (listed,) = queue.inspect()  # refused for good: dead at once
        assert (listed.id, listed.dead, listed.dead_fire_at) == (dead, True, T0)
        (change,) = queue.retry(dead)
        assert (change.reminder_id, change.applied, change.fire_at) == (dead, True, T0)
        (cancelled,) = queue.cancel(other)
        assert cancelled.applied
        (again,) = queue.cancel(other)
        assert again.skipped == "already cancelled"
        # The re-armed fire waits for the next tick; the cancelled reminder never fires.
        assert [r.id for r in queue.inspect("pending")] == [dead]
        counts = queue.prune(timedelta(days=30), dry_run=True)
    assert (counts.done, counts.cancelled, counts.dry_run) == (0, 0, True)
    assert counts.before == T0 - timedelta(days=30)


def test_enable_switches_a_gone_target_back_on(queue: Queue, http: HttpSink) -> None:
    http.respond("/gone", Reply(410))
    with freeze_time(T0):
        rid = queue.add(at="now", rrule="FREQ=DAILY", webhooks=[http.url("/gone")]).id
        queue.tick()
        (gone,) = queue.inspect("all")[0].targets
        (change,) = queue.enable(rid)
        (back,) = queue.inspect("all")[0].targets
    assert gone.disabled_at == T0
    assert change.applied and back.disabled_at is None


def test_prune_removes_what_finished_long_ago(queue: Queue, http: HttpSink) -> None:
    with freeze_time(T0):
        queue.add(at="now", webhooks=[http.url("/ok")])
        queue.tick()
    with freeze_time(T0 + timedelta(days=40)):
        counts = queue.prune("30d")
        assert queue.inspect("all") == []
    assert (counts.done, counts.deliveries, counts.dry_run) == (1, 1, False)


# -- preview, import, stats to a file --------------------------------------------------------


def test_preview_checks_and_shows_fires_without_writing(db: Db) -> None:
    with Queue(db) as q, freeze_time(T0):
        preview = q.preview(
            at="2027-03-27T02:30",
            tz="Europe/Berlin",
            rrule="FREQ=DAILY",
            emails=["ann@example.com"],
            count=3,
        )
    # 02:30 does not exist on the 28th in Berlin: that fire moves to the end of the gap.
    assert [f.local.strftime("%d %H:%M") for f in preview.fires] == [
        "27 02:30",
        "28 03:00",
        "29 02:30",
    ]
    assert preview.tz == "Europe/Berlin"
    assert any("DUEQUEUE_SMTP_URL" in n for n in preview.notes)
    assert not created(db)


def test_import_lines_checks_every_line_first_and_reports_progress(queue: Queue) -> None:
    hook = "https://hooks.example.com/r"
    lines = [
        json.dumps({"at": "+1h", "webhooks": [hook], "key": "a"}),
        "",
        json.dumps({"at": "+1h", "webhook": hook, "targets": [["email", "ann@example.com"]]}),
    ]
    seen: list[tuple[str, int]] = []
    with freeze_time(T0):
        result = queue.import_lines(lines, progress=lambda phase, n: seen.append((phase, n)))
        again = queue.import_lines([lines[0]])
        with pytest.raises(BadInputError) as bad:
            queue.import_lines([lines[0], '{"at": "+1h", "emails": ["nope"]}'])
        listed = queue.inspect("all")
    assert (result.lines, result.imported, result.skipped) == (2, 2, 0)
    assert result.notes == (
        made_note(queue),
        "note: field 'webhook' is read as 'webhooks', its name in Queue.add; rename it, "
        "the old name may go",
    )
    assert [phase for phase, _ in seen] == ["checking"] * 3 + ["writing"]
    assert [n for _, n in seen[:3]] == [len(line) for line in lines]
    assert (again.imported, again.skipped) == (0, 1)
    assert (bad.value.line, bad.value.field) == (2, "emails[0]")
    assert len(listed) == 2  # the bad file added nothing


def test_stats_writes_the_prometheus_textfile(queue: Queue, tmp_path: Path) -> None:
    path = tmp_path / "duequeue.prom"
    with freeze_time(T0):
        queue.add(at=timedelta(minutes=-1), webhooks=["https://h.example/"])
        stats = queue.stats(prometheus=path)
    text = path.read_text()
    assert "duequeue_due_reminders 1" in text
    assert f"duequeue_stats_timestamp_seconds {T0.timestamp():.0f}" in text
    assert stats.oldest_due_lateness == timedelta(minutes=1)
    with pytest.raises(BadInputError) as caught:
        queue.stats(prometheus=tmp_path / "no" / "such.prom")
    assert caught.value.field == "prometheus"


# -- worker, doctor, config, migrate ---------------------------------------------------------


def test_worker_ticks_until_a_signal_and_reports_each_tick(queue: Queue, http: HttpSink) -> None:
    queue.add(at="now", webhooks=[http.url("/w")])
    started: list[bool] = []
    ticks: list[TickSummary] = []

    def on_tick(summary: TickSummary) -> None:
        ticks.append(summary)
        os.kill(os.getpid(), signal.SIGTERM)  # arrives after the tick: the loop ends, no crash

    queue.worker(timedelta(seconds=60), on_start=lambda: started.append(True), on_tick=on_tick)
    assert started == [True]
    assert [(t.claimed, t.sent) for t in ticks] == [(1, 1)]


def test_doctor_and_config_describe_the_setup(db: Db) -> None:
    with Queue(db, webhook_secret=SECRET, tick_limit=7) as q:
        q.add(at="+1h", webhooks=["https://h.example/"])
        report = q.doctor()
        config = q.config()
    assert report.ok, report
    assert {c.name for c in report.checks} >= {"settings", "database", "webhook secret"}
    assert config.settings["webhook_secret"] == "whsec_****"
    assert (config.settings["tick_limit"], config.sources["tick_limit"]) == (7, "argument")
    assert config.sources["max_retries"] == "default"
    assert config.tz_data.startswith("20")


def test_check_setup_reports_a_bad_setting_as_a_finding(db: Db) -> None:
    report = check_setup(db, webhook_secret="hunter2")
    assert not report.ok
    (secret,) = [c for c in report.checks if c.name == "webhook secret"]
    assert secret.detail.startswith("DUEQUEUE_WEBHOOK_SECRET: ")
    assert secret.fix is not None


def test_migrate_copies_into_postgresql(db_path: Path, pg_url: str) -> None:
    with Queue(db_path) as lite, freeze_time(T0):
        rid = lite.add(at="+1h", webhooks=["https://h.example/"], key="k").id
    with Queue(db_path, create=False) as lite:
        copied = lite.migrate(pg_url)
        with pytest.raises(BadInputError) as caught:
            lite.migrate(str(db_path))  # into itself
    assert (copied.reminders, copied.targets, copied.source) == (1, 1, str(db_path))
    assert caught.value.field == "to"
    with Queue(pg_url, create=False) as pg:
        (moved,) = pg.inspect("pending")
        back = pg.migrate(str(db_path.with_name("back.db")))  # and back into a new file
    assert (moved.id, moved.key) == (rid, "k")
    assert (back.reminders, back.source) == (1, safe_url(pg_url))
    with Queue(db_path.with_name("back.db"), create=False) as again:
        assert [(r.id, r.key) for r in again.inspect("pending")] == [(rid, "k")]


# -- the package ----------------------------------------------------------------------------


def test_every_public_name_is_importable_from_duequeue() -> None:
    for name in duequeue.__all__:
        assert getattr(duequeue, name) is not None
    assert Reminder.__module__ == "duequeue.api.results"
    assert "fire_at" in {f.name for f in fields(Reminder)}


def test_importing_duequeue_loads_neither_the_api_nor_the_metadata() -> None:
    code = (
        "import duequeue, sys; "
        "print('duequeue.api.queue' in sys.modules, 'importlib.metadata' in sys.modules); "
        "print(duequeue.__version__)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False", duequeue.__version__]


def test_a_queue_reopens_after_close(db_path: Path) -> None:
    q = Queue(db_path)
    q.add(at="+1h", webhooks=["https://h.example/"])
    q.close()
    assert len(q.inspect("all")) == 1
    q.close()


def test_inspect_and_browse_name_their_filter_state_and_view_still_works_with_a_warning(
    queue: Queue,
) -> None:
    with freeze_time(T0):
        added = queue.add(at="+1h", webhooks=["https://hooks.example.com/r"])
        assert [r.id for r in queue.inspect(state="pending")] == [added.id]
        assert [r.id for r in queue.browse(state="pending").reminders] == [added.id]
        assert [r.id for r in queue.inspect("pending")] == [added.id]  # positional, as before
        with pytest.warns(DeprecationWarning, match=r"inspect\(view=\.\.\.\) is deprecated"):
            assert [r.id for r in queue.inspect(view="pending")] == [added.id]
        with pytest.warns(DeprecationWarning), pytest.raises(BadInputError) as both:
            queue.inspect(state="dead", view="pending")
        assert both.value.field == "view"
        assert queue.inspect() == []  # the default is still the dead letters
