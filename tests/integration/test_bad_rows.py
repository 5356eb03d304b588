"""One bad row never stops a queue (issue 30, item 3).

A target whose channel the ticking host does not know (registered with DUEQUEUE_CHANNELS on the
host that added it, not on this one) is a failed send of that target alone: the rest of its row
and of the queue goes out, the target retries and dead-letters by the normal policy, and its
address is shown fully masked (only its channel knows which parts are secret). A row whose
stored data or rule no longer reads (written by hand through SQL) is set aside as a dead letter
saying why; the rows beside it are delivered and the tick exits 0.
"""

import contextlib
import json
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from duequeue.channels import registry
from tests import toy_channel
from tests.clirunner import Cli
from tests.procs import run_cli
from tests.servers import HttpSink
from tests.stores import Db, is_sqlite

T0 = datetime(2027, 1, 5, 8, 0, tzinfo=UTC)
TOY = "toy:ok:box#s3cret"


def execute(db: Db, sql: str) -> None:
    """Write `sql` into the database from outside duequeue, as a hand or a broken tool would."""
    if is_sqlite(db):
        import apsw

        conn = apsw.Connection(str(db))
        try:
            conn.execute(sql)
        finally:
            conn.close()
        return
    from tests.pg import admin_connect

    with admin_connect(str(db)) as conn:
        conn.execute(sql)  # type: ignore[arg-type]


TOY_CHANNEL = registry.get("toy")  # registered when tests.toy_channel was first imported


@pytest.fixture
def toy_known() -> Iterator[registry.Channel]:
    """Yield the toy channel, registered, and leave it registered for the other tests."""
    toy_channel.SENT.clear()
    registry.register(TOY_CHANNEL)
    yield TOY_CHANNEL
    registry.register(TOY_CHANNEL)


def forget_toy() -> None:
    """Make this process a host that does not know the toy channel."""
    registry._REGISTERED.pop("toy", None)


def test_a_target_of_a_channel_this_host_does_not_know_fails_alone_retries_and_dies(
    db: Db, http: HttpSink, toy_known: registry.Channel
) -> None:
    cli = Cli(db, T0)
    mixed = cli.add("--at", "now", "--target", TOY, "--webhook", http.url("/same-row"))
    other = cli.add("--at", "now", "--webhook", http.url("/other-row"))
    forget_toy()

    first = cli.tick()
    assert (first["claimed"], first["sent"], first["partial"], first["errors"]) == (2, 1, 1, [])
    assert sorted(r.path for r in http.requests) == ["/other-row", "/same-row"]
    rows = {r["id"]: r for r in cli.inspect("--all")}
    error = rows[mixed]["last_error"]
    assert error.startswith("partial: toy ****: channel 'toy' is not known to this host: ")
    assert "DUEQUEUE_CHANNELS" in error and "install the package" in error
    assert rows[other]["last_error"] is None
    # The address of a channel this host does not know is shown as the mask alone.
    assert [t["address"] for t in rows[mixed]["targets"]] == [http.url("/same-row"), "****"]
    for view in (cli("inspect", "--all"), cli("history", str(mixed)), cli("inspect", "--due")):
        assert view.code == 0, view.err
        assert "box" not in view.out and "s3cret" not in view.out

    # The toy target retries on its own, by the backoff table, then is a dead letter.
    cli.advance(minutes=1)
    again = cli.tick()
    assert (again["target_retries"], again["deliveries_failed"], again["dead"]) == (1, 1, 0)
    cli.advance(minutes=5)
    last = cli.tick()
    assert (last["target_retries"], last["dead"]) == (1, 1)
    (dead,) = cli.inspect("--dead")
    assert dead["id"] == mixed and "channel 'toy' is not known to this host" in dead["last_error"]
    assert len(http.requests) == 2  # the webhook of the same row was never sent again


def test_a_host_that_knows_the_channel_delivers_the_retry(
    db: Db, http: HttpSink, toy_known: registry.Channel
) -> None:
    cli = Cli(db, T0, {"DUEQUEUE_CHANNELS": "tests.toy_channel"})
    cli.add("--at", "now", "--target", TOY, "--webhook", http.url("/w"))
    forget_toy()
    assert cli.tick()["partial"] == 1
    registry.register(toy_known)  # the next tick runs where the channel is installed
    cli.advance(minutes=1)
    assert cli.tick()["deliveries_sent"] == 1
    assert [address for _, address, _ in toy_channel.SENT] == ["ok:box#***"]
    assert cli.inspect("--dead") == []


@pytest.mark.sqlite_only
def test_a_tick_process_without_the_channel_delivers_the_rest_and_exits_0(
    db_path: Path, http: HttpSink
) -> None:
    env = {"DUEQUEUE_CHANNELS": "tests.toy_channel"}
    added = run_cli(db_path, "add", "--at", "now", "--target", TOY, "--webhook", http.url("/a"))
    assert added.returncode == 2  # this process does not know `toy` either: refused at add
    added = run_cli(
        db_path, "add", "--at", "now", "--target", TOY, "--webhook", http.url("/a"), env=env
    )
    assert added.returncode == 0, added.stderr
    assert run_cli(db_path, "add", "--at", "now", "--webhook", http.url("/b")).returncode == 0

    ticked = run_cli(db_path, "tick")  # no DUEQUEUE_CHANNELS here
    assert (ticked.returncode, ticked.stderr) == (0, "")
    assert ticked.stdout.startswith("tick: claimed 2: sent 1, partial 1, retried 0, dead 0")
    assert sorted(r.path for r in http.requests) == ["/a", "/b"]
    shown = run_cli(db_path, "inspect", "--all")
    assert "toy:****" in shown.stdout and "s3cret" not in shown.stdout
    assert "box" not in shown.stdout


def test_a_row_whose_data_or_rule_no_longer_reads_is_set_aside_and_the_rest_goes_out(
    db: Db, http: HttpSink
) -> None:
    cli = Cli(db, T0)
    ids = {
        name: cli.add("--at", "now", *rule, "--webhook", http.url(f"/{name}"))
        for name, rule in [
            ("good", ()),
            ("bad-data", ("--data", '{"ok": 1}')),
            ("bad-rule", ("--cron", "0 9 * * *")),
            ("bad-zone", ("--cron", "0 9 * * *")),
            ("good-cron", ("--cron", "0 9 * * *")),
        ]
    }
    execute(db, f"UPDATE reminders SET data = '{{not json' WHERE id = {ids['bad-data']}")
    execute(db, f"UPDATE reminders SET rule = 'every day' WHERE id = {ids['bad-rule']}")
    execute(db, f"UPDATE reminders SET tz = 'Mars/Olympus' WHERE id = {ids['bad-zone']}")

    cli.advance(hours=1)  # 09:00: every row is due
    first = cli.tick()
    assert first["errors"] == []
    assert (first["claimed"], first["sent"], first["dead"]) == (5, 2, 3)
    # The row whose data does not read was sent to nobody; the rules broke after their fire.
    paths = sorted(r.path for r in http.requests)
    assert paths == ["/bad-rule", "/bad-zone", "/good", "/good-cron"]
    dead = {r["id"]: r["last_error"] for r in cli.inspect("--dead")}
    assert set(dead) == {ids["bad-data"], ids["bad-rule"], ids["bad-zone"]}
    assert dead[ids["bad-data"]].startswith("cannot read the reminder's stored data: JSONDecode")
    assert dead[ids["bad-rule"]].startswith("cannot compute the next fire: cron:")
    assert "Mars/Olympus" in dead[ids["bad-zone"]]

    # Set aside for good: the next ticks claim none of them and say nothing about them.
    cli.advance(days=1)
    nxt = cli.tick()
    assert (nxt["claimed"], nxt["sent"], nxt["errors"]) == (1, 1, [])
    assert [r.path for r in http.requests].count("/bad-data") == 0


@contextlib.asynccontextmanager
async def _cannot_open(opening: registry.Opening) -> AsyncIterator[registry.Sender]:
    raise RuntimeError("the SMS gateway refused the API key")
    yield  # pragma: no cover - never reached


def test_a_channel_that_cannot_open_fails_its_targets_alone(db: Db, http: HttpSink) -> None:
    broken = registry.Channel("sms", check=lambda a, s: a, open=_cannot_open)
    registry.register(broken)
    try:
        cli = Cli(db, T0)
        cli.add("--at", "now", "--target", "sms:+15550100", "--webhook", http.url("/w"))
        summary = cli.tick()
        assert (summary["partial"], summary["errors"]) == (1, [])
        (row,) = cli.inspect("--all")
        assert row["last_error"] == (
            "partial: sms +15550100: channel 'sms' could not open: "
            "the SMS gateway refused the API key"
        )
        assert [r.path for r in http.requests] == ["/w"]
    finally:
        registry._REGISTERED.pop("sms", None)


def test_doctor_names_a_pending_channel_this_host_does_not_know(
    db: Db, toy_known: registry.Channel
) -> None:
    cli = Cli(db, T0)
    cli.add("--at", "+1h", "--target", TOY)
    assert "channels" not in cli("doctor").out  # known here: nothing to say
    forget_toy()
    r = cli("doctor")
    assert r.code == 1
    (line,) = [x for x in r.out.splitlines() if "channels:" in x]
    assert line.startswith("PROBLEM  channels: pending reminders have targets of channel 'toy'")
    assert "DUEQUEUE_CHANNELS" in r.out


@pytest.mark.sqlite_only
def test_text_that_is_not_utf8_holds_its_reminder_and_the_rest_goes_out(
    db_path: Path, http: HttpSink
) -> None:
    cli = Cli(db_path, T0)
    good = cli.add("--at", "now", "--subject", "fine", "--webhook", http.url("/good"))
    bad = cli.add("--at", "now", "--subject", "bad", "--webhook", http.url("/bad"))
    odd = cli.add("--at", "now", "--webhook", http.url("/odd-target"))
    # Bytes that are not UTF-8, stored as TEXT by a hand: before, every tick and every inspect
    # failed on them (UnicodeDecodeError), every minute, for every reminder.
    execute(db_path, f"UPDATE reminders SET subject = CAST(x'66ff6f' AS TEXT) WHERE id = {bad}")
    execute(db_path, f"UPDATE reminders SET last_error = CAST(x'c3' AS TEXT) WHERE id = {good}")
    execute(
        db_path,
        f"UPDATE targets SET address = CAST(x'687474703a2f2fff' AS TEXT) WHERE reminder_id = {odd}",
    )

    first = cli.tick()
    assert (first["claimed"], first["sent"], first["errors"]) == (1, 1, [])
    assert [r.path for r in http.requests] == ["/good"]
    rows = {r["id"]: r for r in cli.inspect("--all")}
    assert rows[good]["state"] == "done"
    for rid, where in ((bad, "reminders.subject"), (odd, "targets.address")):
        assert rows[rid]["state"] == "paused"
        assert rows[rid]["last_error"].startswith(f"held: {where} held text that is not UTF-8")
        assert rows[rid]["last_error"].endswith(f"`duequeue resume {rid}`")
    assert rows[bad]["subject"] == "f\ufffdo"

    # Held, not lost: resumed by the operator, it goes out once, as it now reads.
    assert cli("resume", str(bad)).code == 0
    again = cli.tick()
    assert (again["claimed"], again["sent"]) == (1, 1)
    assert [r.path for r in http.requests] == ["/good", "/bad"]
    assert json.loads(http.requests[1].body)["data"]["subject"] == "f\ufffdo"
