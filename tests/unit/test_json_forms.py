"""The one JSON form of a reminder, a history and the stats (api/jsonforms.py), which the CLI's
`--json` prints and the API answers with, is what the API's OpenAPI document says, key for key:
a key added to one and not the other fails here."""

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from duequeue.api import jsonforms
from duequeue.api.results import (
    Attempt,
    DeadLetter,
    History,
    HostSeen,
    MovedFire,
    Revision,
    Stats,
    Target,
    TargetRetry,
)
from duequeue.web import openapi
from tests.unit.test_reminder_status import AT, ONE_SHOT

SCHEMAS = openapi.document(read_only=False)["components"]["schemas"]
HOOK = Target(3, "webhook", "https://hooks.example.com/r", "https://hooks.example.com/r")


def _keys(schema: dict[str, Any]) -> set[str]:
    assert set(schema["required"]) == set(schema["properties"])
    return set(schema["properties"])


def test_a_reminder_has_the_documented_keys_and_says_what_it_sends() -> None:
    r = replace(
        ONE_SHOT,
        state="done",
        targets=(HOOK,),
        body="Due today",
        data={"amount": 900, "password": "****"},
        dead_letters=1,
    )
    found = jsonforms.reminder(r)
    assert set(found) == _keys(SCHEMAS["Reminder"])
    assert set(found["targets"][0]) == _keys(SCHEMAS["Target"])
    assert (found["state"], found["dead"], found["dead_letters"]) == ("done", True, 1)
    assert (found["body"], found["data"]) == ("Due today", {"amount": 900, "password": "****"})
    assert found["created_at"] == "2027-01-05T08:00:00.000Z"


def test_a_history_and_the_stats_have_the_documented_keys() -> None:
    history = History(
        reminder=ONE_SHOT,
        attempts=(Attempt(AT, AT, HOOK, "permanent", "HTTP 400", 1),),
        dead_letters=(DeadLetter(AT, AT, 1, "HTTP 400"),),
        target_retries=(TargetRetry(AT, None, 1, "HTTP 503", AT),),
        changes=(Revision(AT, "edited: subject"),),
        moved_fires=(MovedFire(AT, AT, "2026a", "2026b", AT),),
    )
    found = jsonforms.history(history)
    schema = SCHEMAS["History"]["properties"]
    assert set(found) == set(schema)
    for key in ("attempts", "dead_letters", "target_retries", "changes", "moved_fires"):
        assert set(found[key][0]) == _keys(schema[key]["items"]), key
    assert found["attempts"][0]["target"] == jsonforms.target(HOOK)
    stats = Stats(
        at=AT, pending=1, done=2, dead=0, cancelled=0, due=1, retrying=0, leased=0,
        dead_letters=3, dead_reminders=2, retrying_targets=0, disabled_targets=0,
        oldest_due_at=AT - timedelta(seconds=12.5), sent_last_hour=4, failed_last_hour=1,
        sent_last_day=9, failed_last_day=2, last_successful_tick=AT,
        hosts=(HostSeen("worker-1", AT, timedelta(milliseconds=4)),),
    )  # fmt: skip
    shown = jsonforms.stats(stats)
    assert set(shown) == _keys(SCHEMAS["Stats"])
    assert shown["reminders"] == {"pending": 1, "done": 2, "dead": 0, "cancelled": 0, "paused": 0}
    assert shown["queue_paused_since"] is None
    assert (shown["dead_letters"], shown["dead_reminders"]) == (3, 2)
    assert shown["oldest_due_lateness_s"] == 12.5
    assert shown["deliveries"]["last_hour"] == {"sent": 4, "failed": 1}
    assert shown["hosts"] == [
        {"host": "worker-1", "last_tick": "2027-01-05T08:00:00.000Z", "clock_offset_s": 0.004}
    ]


def test_instants_are_utc_to_the_millisecond() -> None:
    later = datetime(2027, 1, 5, 9, 0, 0, 123456, tzinfo=UTC)
    assert jsonforms.iso(later) == "2027-01-05T09:00:00.123Z"
    assert jsonforms.iso(None) is None
    assert jsonforms.seconds(timedelta(microseconds=1500)) == 0.002
