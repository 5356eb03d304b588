"""A channel added in one file under tests/ (tests/toy_channel.py) without touching the package:
registered, added, delivered, retried, dead-lettered and masked, as a built-in channel is."""

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from freezegun import freeze_time

from duequeue import BadInputError, Queue
from tests import toy_channel
from tests.clirunner import Cli
from tests.stores import Db

T0 = datetime(2027, 1, 5, 8, 0, tzinfo=UTC)


@pytest.fixture
def queue(db: Db) -> Iterator[Queue]:
    toy_channel.SENT.clear()
    # The setting names the module, which registers the channel; the channel's own setting is
    # then read like duequeue's.
    with Queue(db, channels="tests.toy_channel", toy_greeting="hi") as q:
        yield q


def test_a_toy_target_is_added_and_delivered_with_its_own_setting(queue: Queue) -> None:
    with freeze_time(T0):
        added = queue.add(at="now", targets=[("toy", "ok:box#s3cret")], subject="s")
        summary = queue.tick()
    assert (summary.claimed, summary.sent) == (1, 1)
    assert [
        (f"dq_{added.id}_{int(T0.timestamp() * 1000)}_1", "ok:box#***", "hi")
    ] == toy_channel.SENT


def test_a_bad_toy_address_or_an_unknown_channel_is_refused_naming_the_target(
    queue: Queue,
) -> None:
    with pytest.raises(BadInputError) as bad:
        queue.add(at="now", targets=[("toy", "ok:box"), ("toy", "nope")])
    assert bad.value.field == "targets[1]"
    assert "ok:NAME" in str(bad.value)
    with pytest.raises(BadInputError, match=r"unknown channel 'sms'.*toy") as unknown:
        queue.add(at="now", targets=[("sms", "+15550100")])
    assert unknown.value.field == "targets[0]"


def test_a_failing_toy_target_is_retried_on_the_backoff_then_a_dead_letter(queue: Queue) -> None:
    with freeze_time(T0) as clock:
        added = queue.add(at="now", targets=[("toy", "flaky:box#s3cret")])
        ticks = []
        for wait in (0, 1, 5):
            clock.tick(timedelta(minutes=wait))
            ticks.append(queue.tick())
        (dead,) = queue.inspect("dead")
    assert [(t.retried, t.dead) for t in ticks] == [(1, 0), (1, 0), (0, 1)]
    assert (dead.id, dead.error_count) == (added.id, 3)
    # The error names the target as its channel shows it: the token masked.
    assert dead.last_error == "toy flaky:box#***: toy is down"
    assert [t.display for t in dead.targets] == ["flaky:box#***"]


def test_a_toy_target_refused_beside_a_sent_one_makes_a_partial_and_its_dead_letter(
    queue: Queue,
) -> None:
    with freeze_time(T0):
        queue.add(at="now", targets=[("toy", "ok:a"), ("toy", "refuse:b")])
        assert queue.tick().partial == 1
        (dead,) = queue.inspect("dead")
    assert (dead.error_count, dead.last_error) == (1, "toy refuse:b: toy refuses")


def test_the_cli_takes_a_toy_target_and_shows_it_masked(db: Db) -> None:
    toy_channel.SENT.clear()
    cli = Cli(db, T0, {"DUEQUEUE_CHANNELS": "tests.toy_channel", "DUEQUEUE_TOY_GREETING": "hey"})
    rid = cli.add("--at", "now", "--target", "toy:ok:box#s3cret")
    assert cli.tick()["sent"] == 1
    assert toy_channel.SENT[-1][2] == "hey"
    shown = cli("inspect", "--all").out
    assert "toy:ok:box#***" in shown and "s3cret" not in shown
    (row,) = cli.inspect("--all")
    assert row["id"] == rid
    assert "s3cret" not in cli("history", str(rid)).out
    assert "s3cret" not in cli("config").out
