"""DUEQUEUE_ALERT (issue 31 item 10): a tick that writes new dead letters tells a person once,
through real targets on loopback (a webhook receiver, an SMTP server); a tick that writes none
tells nobody; an alert target that fails is a line in the tick's summary, never a failed tick."""

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from duequeue.shared.timefmt import to_ms
from duequeue.store.records import NewReminder, NewTarget
from duequeue.store.sqlite import connect as open_sqlite
from tests.procs import reap, run_cli
from tests.servers import HttpSink, Reply, SmtpSink, free_port

FROM = "reminders@example.com"


@pytest.fixture(autouse=True)
def no_leftover_processes() -> Iterator[None]:
    yield
    reap()


def add_due(db: Path, url: str, subject: str) -> int:
    """Add a one-shot to `url` due a minute ago on the real clock."""
    store = open_sqlite(db)
    try:
        due = to_ms(datetime.now(UTC)) - 60_000
        target = (NewTarget("webhook", url),)
        return store.add(NewReminder(subject, "b", None, "UTC", due, due, target), due)[0]
    finally:
        store.close()


def test_new_dead_letters_reach_every_alert_target_once(tmp_path: Path) -> None:
    db = tmp_path / "q.db"
    with HttpSink() as http, SmtpSink() as smtp:
        http.respond("/gone-wrong", Reply(400))  # a 4xx other than 408/425/429: dead at once
        dead = add_due(db, http.url("/gone-wrong"), "rent")
        fine = add_due(db, http.url("/fine"), "water")
        env = {
            "DUEQUEUE_ALERT": f"{http.url('/alert')} mailto:ops@example.com",
            "DUEQUEUE_SMTP_URL": smtp.url,
            "DUEQUEUE_EMAIL_FROM": FROM,
        }
        r = run_cli(db, "tick", "--json", env=env)
        assert r.returncode == 0, r.stderr
        summary = json.loads(r.stdout)
        assert (summary["sent"], summary["dead"], summary["alert_error"]) == (1, 1, None)

        [hook] = http.requests_for("/alert")
        event = json.loads(hook.body)["data"]
        assert (event["reminder_id"], event["subject"]) == (0, "duequeue: 1 new dead letter")
        data = event["data"]
        assert data["event"] == "dead_letters" and data["count"] == 1
        assert [d["reminder_id"] for d in data["dead_letters"]] == [dead]
        assert "HTTP 400" in data["dead_letters"][0]["error"]
        assert data["retry"].endswith(f"retry {dead}")
        assert fine not in [d["reminder_id"] for d in data["dead_letters"]]

        [mail] = smtp.wait_for_messages(1)
        assert mail["Subject"] == "duequeue: 1 new dead letter"
        assert mail.rcpt_tos == ["ops@example.com"]
        text = mail.get_body(("plain",)).get_content()  # type: ignore[union-attr]
        assert f"reminder {dead}," in text and f"retry {dead}" in text

        # The command the alert names works: the fire is re-armed.
        retry = data["retry"].removeprefix("duequeue ").split()
        r = run_cli(db, *retry)
        assert r.returncode == 0, r.stderr
        assert str(dead) in r.stdout

        # A tick that writes no new dead letter tells nobody (the receiver now answers 200).
        http.respond("/gone-wrong", Reply(200))
        r = run_cli(db, "tick", "--json", env=env)
        assert r.returncode == 0, r.stderr
        assert json.loads(r.stdout)["sent"] == 1
        assert len(http.requests_for("/alert")) == 1
        assert len(smtp.messages) == 1


def test_a_failing_alert_target_never_fails_the_tick(tmp_path: Path) -> None:
    db = tmp_path / "q.db"
    closed = f"http://127.0.0.1:{free_port()}/alert"  # nothing listens there
    with HttpSink() as http:
        http.respond("/gone-wrong", Reply(404))
        dead = add_due(db, http.url("/gone-wrong"), "rent")
        r = run_cli(db, "tick", env={"DUEQUEUE_ALERT": f"{closed} {http.url('/alert')}"})
        assert r.returncode == 0, r.stderr
        assert "dead 1" in r.stdout
        assert "alert failed: webhook http://127.0.0.1:" in r.stdout
        # The other alert target still got it.
        [hook] = http.requests_for("/alert")
        assert json.loads(hook.body)["data"]["data"]["dead_letters"][0]["reminder_id"] == dead
    # The dead letter stands, visible to an operator.
    r = run_cli(db, "inspect", "--json")
    assert r.returncode == 0, r.stderr
    assert [row["id"] for row in json.loads(r.stdout)] == [dead]


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("not-an-address", "DUEQUEUE_ALERT: target 1 is not a valid email target"),
        ("ops@example.com ftp//x", "DUEQUEUE_ALERT: target 2 is not a valid email target"),
        ("   ", "DUEQUEUE_ALERT: give an email address, a webhook URL or an Apprise URL"),
    ],
)
def test_a_bad_alert_setting_is_one_line_and_nothing_runs(
    tmp_path: Path, value: str, says: str
) -> None:
    db = tmp_path / "q.db"
    r = run_cli(db, "tick", env={"DUEQUEUE_ALERT": value})
    assert r.returncode != 0
    [line] = r.stderr.splitlines()
    assert says in line
