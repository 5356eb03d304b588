"""reschedule and edit (issue 24, item 2) against a real tick: a tick delivering the reminder
(its webhook held by a loopback receiver) makes a change refuse, never lose or double a fire;
once the tick is done the change applies, and history records it. On SQLite and PostgreSQL."""

import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from freezegun import freeze_time

from duequeue import ChangeRefusedError, Queue, TickSummary
from tests.clirunner import Cli
from tests.servers import HttpSink, Reply
from tests.stores import Db

T0 = datetime(2027, 1, 5, 8, 0, tzinfo=UTC)
HOOK = "https://hooks.example.com/r"


@pytest.fixture
def queue(db: Db) -> Iterator[Queue]:
    with Queue(db, channel_timeout=10) as q:
        yield q


def test_a_change_while_a_tick_delivers_is_refused_and_the_fire_goes_out_once(
    db: Db, queue: Queue, http: HttpSink
) -> None:
    http.respond("/slow", Reply(hold=True))
    rid = queue.add(at="now", rrule="FREQ=DAILY", webhooks=[http.url("/slow")], subject="a").id
    done: list[TickSummary] = []
    ticking = threading.Thread(target=lambda: done.append(Queue(db).tick()))
    ticking.start()
    try:
        http.wait_for_requests(1)  # the tick holds the row, mid-delivery
        for change in (
            lambda: queue.reschedule(rid, at="+1h"),
            lambda: queue.edit(rid, subject="b"),
            lambda: queue.edit(rid, webhooks=[http.url("/other")]),
        ):
            with pytest.raises(ChangeRefusedError, match="a tick is delivering reminder"):
                change()
        before = queue.history(rid)
        assert before.changes == () and before.reminder.subject == "a"
    finally:
        http.release()
        ticking.join(30)
    assert [s.sent for s in done] == [1]
    # The tick wrote its outcome back (the next daily fire); now the change applies.
    moved = queue.reschedule(rid, at="+1h")
    assert moved.reminder.next_fire_at is not None
    assert queue.tick().claimed == 0  # nothing due: the fire is an hour away
    assert len(http.requests_for("/slow")) == 1
    history = queue.history(rid)
    assert [a.outcome for a in history.attempts] == ["sent"]
    (change,) = history.changes
    assert change.what.startswith("rescheduled: next fire ")


def test_edit_replaces_targets_and_the_next_fire_reaches_the_new_ones_only(
    queue: Queue, http: HttpSink
) -> None:
    with freeze_time(T0, real_asyncio=True):
        rid = queue.add(at="+1m", webhooks=[http.url("/old")], subject="s", body="b").id
        changed = queue.edit(
            rid, subject="s2", data={"n": 1}, webhooks=[http.url("/new")], emails=[]
        )
    assert [t.address for t in changed.reminder.targets] == [http.url("/new")]
    with freeze_time(T0 + timedelta(minutes=1), real_asyncio=True):
        assert queue.tick().sent == 1
    assert http.requests_for("/old") == []
    (req,) = http.requests_for("/new")
    assert b'"subject":"s2"' in req.body.replace(b" ", b"") and b'"n":1' in req.body.replace(
        b" ", b""
    )
    (change,) = queue.history(rid).changes
    assert change.what == (
        f"edited: subject, data, targets +webhook {http.url('/new')} -webhook {http.url('/old')}"
    )


# -- the CLI --------------------------------------------------------------------------------


@pytest.fixture
def cli(db: Db) -> Cli:
    return Cli(db, T0)


def test_reschedule_moves_a_one_shot_and_prints_its_next_fire(cli: Cli) -> None:
    rid = cli.add("--at", "2027-01-06T09:00:00Z", "--webhook", HOOK)
    r = cli("reschedule", str(rid), "--at", "2027-01-07T09:00", "--tz", "Europe/Berlin")
    assert (r.code, r.out, r.err) == (
        0,
        f"rescheduled {rid}: next fire 2027-01-07T08:00:00.000Z\n",
        "",
    )
    assert cli.row(rid)["tz"] == "Europe/Berlin"
    h = cli("history", str(rid), "--json").json()
    assert [c["change"] for c in h["changes"]] == [
        "rescheduled: next fire 2027-01-07T08:00:00.000Z (was 2027-01-06T09:00:00.000Z), "
        "zone Europe/Berlin (was UTC)"
    ]
    text = cli("history", str(rid)).out
    assert "changes (reschedule, edit)\n2027-01-05T08:00:00.000Z  rescheduled: next fire" in text


def test_reschedule_to_a_rule_fires_from_now_on(cli: Cli) -> None:
    rid = cli.add("--at", "2027-01-06T09:00:00Z", "--webhook", HOOK)
    r = cli("reschedule", str(rid), "--cron", "0 9 * * *", "--json")
    assert r.code == 0, r.err
    row = r.json()
    assert (row["cron"], row["next_fire_at"]) == ("0 9 * * *", "2027-01-06T09:00:00.000Z")
    fires = cli("next", str(rid), "--json").json()["fires"]
    assert [f["utc"] for f in fires][:2] == ["2027-01-06T09:00:00.000Z", "2027-01-07T09:00:00.000Z"]


@pytest.mark.parametrize(
    ("args", "code", "says"),
    [
        (["reschedule", "1"], 2, "--at: give a new time or rule"),
        (["reschedule", "1", "--tz", "Europe/Berlin"], 2, "a one-shot moves with a new time"),
        (["reschedule", "1", "--at", "tomorrow"], 2, "--at: invalid time 'tomorrow'"),
        (["reschedule", "9", "--at", "+1h"], 2, "no reminder with id 9"),
        (["edit", "1"], 2, "give something to change"),
        (["edit", "1", "--webhook", "ftp://x"], 2, "--webhook"),
        (["edit", "1", "--data", "{"], 2, "--data"),
    ],
)
def test_bad_changes_exit_2_with_one_line_and_change_nothing(
    cli: Cli, args: list[str], code: int, says: str
) -> None:
    cli.add("--at", "2027-01-06T09:00:00Z", "--webhook", HOOK, "--subject", "s")
    r = cli(*args)
    assert (r.code, r.out) == (code, "")
    assert r.err.count("\n") == 1 and says in r.err, r.err
    assert cli("history", "1", "--json").json()["changes"] == []
    assert cli.row(1)["subject"] == "s"


def test_a_cancelled_reminder_cannot_be_changed(cli: Cli) -> None:
    rid = cli.add("--at", "2027-01-06T09:00:00Z", "--webhook", HOOK)
    cli("cancel", str(rid))
    r = cli("edit", str(rid), "--subject", "x")
    assert (r.code, r.err) == (
        1,
        f"duequeue: error: ID: reminder {rid} is cancelled; add a new one\n",
    )
