"""schedule/intent.py: a fire computed again from what the user meant, on real zones.

The rules are the same data here (the tzdata in use), so what is checked is the arithmetic:
walls kept from instants, nothing moving when nothing changed, an elapsed series keeping its
place, a fire already delivered never chosen again.
"""

from datetime import UTC, datetime

from duequeue.schedule import intent
from duequeue.shared.timefmt import to_ms

NY = "America/New_York"


def ms(*args: int) -> int:
    return to_ms(datetime(*args, tzinfo=UTC))  # type: ignore[misc]


def test_it_backfills_walls_from_the_stored_instants_without_moving_a_fire() -> None:
    got = intent.backfill("rrule", NY, ms(2027, 3, 13, 14), ms(2027, 3, 15, 13))
    assert got == intent.Intent(
        ms(2027, 3, 13, 14),
        ms(2027, 3, 15, 13),
        "2027-03-13T09:00:00",
        "2027-03-15T08:59:59.999000",
    )
    assert intent.backfill(None, "UTC", 5, 5) == intent.Intent(5, 5, None, None)


def test_it_keeps_every_fire_when_the_rules_did_not_change() -> None:
    fire = ms(2027, 3, 15, 13)  # 09:00 EDT
    got = intent.recompute(
        "rrule", "FREQ=DAILY", NY, ms(2027, 3, 13, 14), "2027-03-13T09:00:00",
        "2027-03-14T09:00:00", fire,
    )  # fmt: skip
    assert (got.fire_at, got.dtstart) == (fire, ms(2027, 3, 13, 14))
    cron = intent.recompute("cron", "0 9 * * *", NY, 0, None, "2027-03-14T09:00:00", fire)
    assert cron.fire_at == fire


def test_a_fire_at_the_wall_time_already_passed_is_never_chosen_again() -> None:
    # after_wall 09:00 on the 15th: the 15th's 09:00 was delivered, so the next is the 16th's.
    got = intent.recompute("cron", "0 9 * * *", NY, 0, None, "2027-03-15T09:00:00", 0)
    assert got.fire_at == ms(2027, 3, 16, 13)


def test_a_one_shot_at_a_wall_time_fires_at_that_wall_time_and_an_instant_stays() -> None:
    got = intent.recompute(None, None, NY, 0, "2027-03-14T02:30:00", None, 0)
    assert got.fire_at == ms(2027, 3, 14, 7)  # in the gap: 03:00 EDT, the first instant after
    assert intent.recompute(None, None, NY, 42, None, None, 42).fire_at == 42


def test_an_every_n_hours_series_keeps_its_place() -> None:
    start, fire = ms(2027, 3, 13, 14), ms(2027, 3, 13, 20)
    got = intent.recompute(
        "rrule", "FREQ=HOURLY;INTERVAL=3", NY, start, "2027-03-13T09:00:00", None, fire
    )
    assert got.fire_at == fire
