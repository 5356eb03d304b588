"""A pending fire computed again from what the user meant, under the zone rules in use now.

A row keeps, beside the instants an older tz release computed, the wall times those instants
stood for: `start_wall`, the local time `--at` named (None when it named an instant: UTC, an
offset, `+15m`), and `after_wall`, the local time the pending fire was found after (every fire
at or before it was delivered or passed; None: none yet). Both are read on the zone's clocks as
they were when written, so newer rules cannot change which fires they pass:

- a one-shot fires at its start_wall under the new rules;
- a rule naming wall-clock times fires next at its first fire whose wall time is after
  after_wall (its first fire of all when there is none), so a fire delivered at 09:00 under the
  old rules is not delivered again at 09:00 under the new ones, and none is skipped;
- an RRULE every N hours, minutes or seconds keeps its place in its series: the pending fire
  moves by as much as its start did;
- a cron rule whose hour is '*' fires next at its first fire after after_wall's instant: the
  instant already reached, so in a repeated hour the later copy when both lie before the pending
  fire (a fire passed over or sent in the second copy is not handed out again).
"""

from dataclasses import dataclass
from datetime import datetime, timedelta
from itertools import islice

from duequeue.schedule import rules
from duequeue.schedule.wallclock import resolve_reached, resolve_wall, to_wall
from duequeue.shared.timefmt import from_ms, to_ms

# Zone offsets differ by at most 26 hours, so a wall time's instant under any rules lies
# within this of its instant under others.
_SPAN = timedelta(days=2)
_MS = timedelta(milliseconds=1)
_SEARCH = 100_000  # fires looked at past after_wall: a rule's wall times only increase


@dataclass(frozen=True, slots=True)
class Intent:
    """A row's start and pending fire (ms) under the rules in use, and the walls kept."""

    dtstart: int
    fire_at: int
    start_wall: str | None
    after_wall: str | None


def backfill(kind: rules.RuleKind | None, tz: str, dtstart: int, fire_at: int) -> Intent:
    """Return the walls of a row stored before they were kept, read from its instants under the
    rules in use: none of its fires moves (docs/time.md: upgrading)."""
    if tz == "UTC":
        return Intent(dtstart, fire_at, None, None)
    start_wall = rules.wall_text(from_ms(dtstart), tz)
    after_wall = None if kind is None else rules.wall_text(from_ms(fire_at) - _MS, tz)
    return Intent(dtstart, fire_at, start_wall, after_wall)


def recompute(
    kind: rules.RuleKind | None,
    text: str | None,
    tz: str,
    dtstart: int,
    start_wall: str | None,
    after_wall: str | None,
    fire_at: int,
) -> Intent:
    """Return a row's start and pending fire computed again under the rules in use."""
    same = Intent(dtstart, fire_at, start_wall, after_wall)
    if tz == "UTC" or (kind is None and start_wall is None):
        return same  # instants only: no zone rule takes part
    zone = rules.parse_zone(tz)
    old_start = from_ms(dtstart)
    start = old_start if start_wall is None else resolve_wall(_wall(start_wall), zone)
    if kind is None or text is None:
        return Intent(to_ms(start), to_ms(start), start_wall, after_wall)
    rule = rules.Rule(kind, text, zone, start)
    fire = _pending(rule, after_wall, from_ms(fire_at), start - old_start.replace(microsecond=0))
    if fire is None:  # the rule ends before it under the new rules: keep the fire it has
        return Intent(to_ms(rule.dtstart), fire_at, start_wall, after_wall)
    return Intent(to_ms(rule.dtstart), to_ms(fire), start_wall, after_wall)


def _pending(
    rule: rules.Rule, after_wall: str | None, fire: datetime, shift: timedelta
) -> datetime | None:
    if rule.kind == "rrule" and rules.follows_elapsed_time(rule):
        return fire + shift  # its series moved with its start
    if after_wall is None:
        return rules.first_fire(rule)
    floor = _wall(after_wall)
    # The instant already reached: after_wall was read off an instant before the pending fire,
    # so of a repeated hour's two copies it is the later one when both lie before that fire.
    floor_at = resolve_reached(floor, rule.tz, fire)
    if rules.follows_elapsed_time(rule):
        return rules.next_fire(rule, floor_at)
    lower = max(floor_at - _SPAN, rule.dtstart - _MS)
    for candidate in islice(rules.fires_after(rule, lower), _SEARCH):
        if to_wall(candidate, rule.tz) > floor:
            return candidate
    return None


def _wall(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=None)
