"""A reminder's status, as every view prints it: its schedule state, `retrying` while its
pending fire backs off, then its dead letters awaiting retry (docs/reference.md, "A reminder's
state")."""

from dataclasses import replace
from datetime import UTC, datetime

import pytest

from duequeue.api.results import Reminder

AT = datetime(2027, 1, 5, 8, tzinfo=UTC)
ONE_SHOT = Reminder(
    id=1,
    key=None,
    subject="Pay rent",
    targets=(),
    rrule=None,
    cron=None,
    tz="UTC",
    state="pending",
    fire_at=AT,
    next_fire_at=AT,
    error_count=0,
    last_error=None,
    last_fired_at=None,
    last_sent_at=None,
    skipped_fires=0,
    created_at=AT,
)


@pytest.mark.parametrize(
    ("changes", "dead", "status"),
    [
        ({}, False, "pending"),
        ({"error_count": 2}, False, "pending, retrying"),
        # Sent to one target, dead at the other: done, and says so.
        ({"state": "done", "dead_letters": 1}, True, "done, 1 dead letter"),
        # A recurring rule moves on after a dead fire: pending, with the dead fire's letter.
        ({"rrule": "FREQ=DAILY", "dead_letters": 2}, True, "pending, 2 dead letters"),
        ({"error_count": 1, "dead_letters": 1}, True, "pending, retrying, 1 dead letter"),
        # Dead at every target: the state says it all.
        ({"state": "dead", "fire_at": None, "dead_letters": 1}, True, "dead"),
        # In the dead view: one dead fire of the reminder, its errors the dead fire's.
        ({"dead_fire_at": AT, "error_count": 3, "dead_letters": 1}, True, "pending, 1 dead letter"),
        # Cancelled: its dead letters are moot (the store counts none).
        ({"state": "cancelled", "next_fire_at": None}, False, "cancelled"),
    ],
)
def test_the_status_names_the_state_then_the_dead_letters(
    changes: dict[str, object], dead: bool, status: str
) -> None:
    r = replace(ONE_SHOT, **changes)  # type: ignore[arg-type]
    assert (r.dead, r.status) == (dead, status)
