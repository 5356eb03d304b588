"""The Python API, `duequeue.Queue`, on SQLite and PostgreSQL, against a real loopback receiver."""

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from freezegun import freeze_time

import duequeue
from duequeue import BadInputError, NotFoundError, Queue
from tests.servers import HttpSink, Reply
from tests.stores import Db

SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
T0 = datetime(2027, 1, 5, 8, 0, tzinfo=UTC)


@pytest.fixture
def queue(db: Db, monkeypatch: pytest.MonkeyPatch, tmp_path: object) -> Iterator[Queue]:
    for name in ("DUEQUEUE_SMTP_URL", "DUEQUEUE_CONFIG", "DUEQUEUE_WEBHOOK_SECRET"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))  # no config file of this machine
    with Queue(db, webhook_secret=SECRET) as q:
        yield q


def test_add_tick_inspect_history_stats(queue: Queue, http: HttpSink) -> None:
    with freeze_time(T0):
        rid = queue.add(
            at=T0 + timedelta(minutes=1),
            webhooks=[http.url("/r")],
            subject="Standup",
            data={"room": 4},
            key="standup-1",
        )
        assert queue.add(at="+1m", webhooks=[http.url("/r")], key="standup-1") == rid
        assert queue.tick().claimed == 0  # not due yet
        assert [v.id for v in queue.inspect("pending")] == [rid]
    with freeze_time(T0 + timedelta(minutes=2)):
        summary = queue.tick()
        assert (summary.claimed, summary.sent) == (1, 1)
        stats = queue.stats()
    (request,) = http.requests
    assert json.loads(request.body)["data"]["data"] == {"room": 4}
    history = queue.history(rid)
    assert [a.outcome for a in history.attempts] == ["sent"]
    assert stats.done == 1


def test_a_dead_letter_is_listed_and_retried_and_a_cancelled_one_stays_quiet(
    queue: Queue, http: HttpSink
) -> None:
    http.respond("/gone", Reply(400))
    with freeze_time(T0):
        rid = queue.add(at="now", webhooks=[http.url("/gone")])
        other = queue.add(at="+1h", webhooks=[http.url("/gone")])
        queue.tick()
        assert [v.id for v in queue.inspect()] == [rid]  # refused for good: dead at once
        (change,) = queue.retry(rid)
        assert (change.reminder_id, change.skipped) == (rid, None)
        assert [c.reminder_id for c in queue.cancel(other)] == [other]
        # The re-armed fire waits for the next tick; the cancelled reminder never fires.
        assert [v.id for v in queue.inspect("pending")] == [rid]
        counts = queue.prune(timedelta(days=30), dry_run=True)
    assert (counts.done, counts.cancelled) == (0, 0)  # nothing is 30 days old


def test_bad_input_raises_and_writes_nothing(queue: Queue) -> None:
    with pytest.raises(BadInputError, match="--webhook"):
        queue.add(at="now", webhooks=["ftp://example.com/x"])
    with pytest.raises(BadInputError, match="a list"):
        queue.add(at="now", emails="ann@example.com")
    with pytest.raises(BadInputError, match="time zone"):
        queue.add(at=datetime(2027, 1, 5, 8, 0), webhooks=["https://example.com/h"])
    with pytest.raises(NotFoundError):
        queue.history(999)
    assert queue.inspect("all") == []


def test_importing_duequeue_does_not_load_the_api() -> None:
    import subprocess
    import sys

    code = "import duequeue, sys; print('duequeue.api' in sys.modules, duequeue.__version__)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", duequeue.__version__]


def test_notify_targets_and_a_webhook_secret_through_the_api(queue: Queue, http: HttpSink) -> None:
    from standardwebhooks.webhooks import Webhook

    new = "whsec_" + "bmV3LXNlY3JldC1vZi10aGUtcmVjZWl2ZXItNDU2Nw=="
    with freeze_time(T0):
        rid = queue.add(
            at="now",
            webhooks=[http.url("/w")],
            webhook_secret=f"{SECRET} {new}",
            notify=[f"ntfy://127.0.0.1:{http.port}/topic-4f7a"],
            subject="Both",
        )
        summary = queue.tick()
        [target_w, target_n] = queue.inspect("all")[0].targets
        [hook] = http.requests_for("/w")
        for secret in (SECRET, new):
            Webhook(secret).verify(hook.body, dict(hook.headers))
    assert summary.deliveries_sent == 2
    assert json.loads(http.requests_for("/")[0].body)["topic"] == "topic-4f7a"
    assert (target_w.channel, target_n.channel) == ("webhook", "notify")
    assert "bmV3" not in repr(target_w)  # a target's secret stays out of its repr
    assert [a.outcome for a in queue.history(rid).attempts] == ["sent", "sent"]
    with pytest.raises(BadInputError, match="--notify: foo://"):
        queue.add(at="now", notify=["foo://bar"])
