"""Settle a fire: from how each of its targets stands after a tick, what its claim becomes.

Pure: a claimed Fire, each target's end, the retry policy and the tick's `now` in; a Resolution
out (tick.py runs the attempts; the store commits what this decides). rules/retry_policy.py
decides what the fire amounts to; this module writes it down:

- **retried** (no target has the fire yet, some still may): a row holds the fire until its
  earliest target retry; a target claim's retry row waits for its next try.
- **sent, partial, dead**: the fire leaves its claim. A row moves on to its next fire (missed
  fires coalesce, a one-shot is done, or dead if no target ever got it); each target still
  waiting keeps its own retry of the fire; the targets that will never get it make the fire's
  dead letter.

Also here: a fire skipped past its misfire grace, and a row whose rule can no longer be
evaluated or whose stored data can no longer be read, parked as dead (docs/how-a-tick-works.md).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from duequeue.errors import DuequeueError
from duequeue.rules import retry_policy
from duequeue.shared.lazy import LazyModule
from duequeue.shared.timefmt import from_ms, to_ms
from duequeue.store.tick_records import (
    FRESH,
    SENT_DONE,
    DeadFire,
    Fire,
    Resolution,
    RowClaim,
    RowState,
    Target,
    TargetLedger,
    Waiting,
)

if TYPE_CHECKING:
    from duequeue.channels.base import Outcome
    from duequeue.schedule import rules as schedule
    from duequeue.schedule.rules import Rule
else:
    # Loaded on first use: only a recurring row needs the recurrence libraries (dateutil,
    # cronsim), and a tick of one-shots never settles one.
    schedule = LazyModule("duequeue.schedule.rules")

# How a target is named in an error text (a notify URL masked).
Label = Callable[[Target], str]

DISABLED = "target disabled (its endpoint answered 410 Gone); `duequeue enable` turns it back on"
ALL_DISABLED = "skipped: every target is disabled (410 Gone); `duequeue enable ID` turns them on"


@dataclass(slots=True)  # not frozen: built for every failed send, see store/tick_records.py
class Standing:
    """How one target of a fire stands: its end, its failed attempts of the fire so far, its
    last error, when it may be tried again (waiting), and whether it answered 410 Gone."""

    end: retry_policy.End
    failures: int = 0
    error: str | None = None
    retry_at: int | None = None
    gone: bool = False


SENT = Standing("sent")
UNTRIED = Standing("untried")


def before(
    target: Target, ledger: TargetLedger, now: int, rules: retry_policy.RetryPolicy
) -> Standing | None:
    """Return how a target stands before this tick tries it, from the ledger; None when it is
    to be tried now."""
    if ledger is FRESH:
        return None if target.disabled_at is None else Standing("dead", 0, DISABLED)
    if ledger.sent:
        return SENT
    if target.disabled_at is not None:
        return Standing("dead", ledger.failures, DISABLED)
    if ledger.refused or ledger.failures >= rules.max_errors:
        return Standing("dead", ledger.failures, ledger.last_error)
    if ledger.retry_at is not None and ledger.retry_at > now:
        # Tried before and failed, and its wait is not over: whatever ended the tick that tried
        # it (SIGTERM, the budget, a kill) before the row was written back.
        return Standing("waiting", ledger.failures, ledger.last_error, ledger.retry_at)
    return None


def after(
    outcome: Outcome, ledger: TargetLedger, at: int, rules: retry_policy.RetryPolicy
) -> Standing:
    """Return how a target stands after an attempt that ended at `at` with `outcome`."""
    if outcome.status == "sent":
        return SENT
    failures = ledger.failures + 1
    again = retry_policy.retry_at(rules, outcome, failures, at)
    return Standing(
        "dead" if again is None else "waiting", failures, outcome.error, again, outcome.gone
    )


def settle(
    fire: Fire,
    standings: Sequence[Standing],
    now: int,
    died_at: int,
    label: Label,
) -> Resolution | None:
    """Return what the fire's claim becomes; None when a target was not tried (the claim is
    released: the ledger keeps what this tick did). A dead fire died at `died_at`."""
    ends = [s.end for s in standings]
    if "untried" in ends:
        return None
    verdict = retry_policy.verdict(ends)
    gone = tuple(t.id for t, s in zip(fire.targets, standings, strict=True) if s.gone)
    failed = [(t, s) for t, s in zip(fire.targets, standings, strict=True) if s.end != "sent"]
    if verdict == "retried":
        return _retried(fire, failed, gone, label)
    waiting = tuple(
        Waiting(t.id, s.failures, at, _error(label, t, s)) for t, s, at in _waits(failed)
    )
    dead = [(t, s) for t, s in failed if s.end == "dead"]
    letter = None
    if dead:
        letter = DeadFire(
            max(s.failures for _, s in dead),
            retry_policy.summary("", [(label(t), s.error) for t, s in dead]),
            died_at,
        )
    if not isinstance(fire.claim, RowClaim):
        # A target retry settled: sent, or dead (its dead letter above).
        return Resolution(
            fire.claim, fire.reminder_id, fire.fire_at, verdict, None, (), letter, gone
        )
    try:
        nxt, skipped = advance(fire, now)
    except BrokenRuleError as exc:
        return parked(fire, str(exc), died_at)
    state: Literal["pending", "done", "dead"] = "pending"
    if nxt is None:
        state = "dead" if verdict == "dead" and fire.rule is None else "done"
    if verdict == "sent":
        error = None
    else:
        error = retry_policy.summary(
            "partial: " if verdict == "partial" else "",
            [(label(t), s.error) for t, s in failed],
        )
    after_wall, release = _moved_on(fire, max(now, fire.fire_at), nxt)
    row = RowState(
        pending_fire_at=nxt,
        next_fire_at=nxt,
        # A dead one-shot keeps its failures (inspect shows them); a row moving on starts its
        # next fire clean.
        error_count=letter.error_count if state == "dead" and letter else 0,
        last_error=error,
        state=state,
        fired=verdict != "dead",
        skipped=skipped,
        dead_at=died_at if state == "dead" else None,
        after_wall=after_wall,
        release=release,
    )
    return Resolution(
        fire.claim, fire.reminder_id, fire.fire_at, verdict, row, waiting, letter, gone
    )


def _retried(
    fire: Fire,
    failed: Sequence[tuple[Target, Standing]],
    gone: tuple[int, ...],
    label: Label,
) -> Resolution:
    """No target has the fire yet and some still may: wait for the earliest target retry."""
    waiting = _waits(failed)
    if not isinstance(fire.claim, RowClaim):
        ((t, s, at),) = waiting
        keep = Waiting(t.id, s.failures, at, _error(label, t, s))
        return Resolution(
            fire.claim, fire.reminder_id, fire.fire_at, "retried", None, (keep,), None, gone
        )
    # The fire stays the row's: its dead targets, if any, wait in the ledger until it leaves.
    row = RowState(
        pending_fire_at=fire.fire_at,
        next_fire_at=min(at for _, _, at in waiting),
        error_count=max(s.failures for _, s, _ in waiting),
        last_error=retry_policy.summary("", [(label(t), s.error) for t, s in failed]),
        state="pending",
    )
    return Resolution(fire.claim, fire.reminder_id, fire.fire_at, "retried", row, (), None, gone)


def _waits(failed: Sequence[tuple[Target, Standing]]) -> list[tuple[Target, Standing, int]]:
    """Return the failed targets that wait for a retry, with when."""
    return [(t, s, s.retry_at) for t, s in failed if s.end == "waiting" and s.retry_at is not None]


def _error(label: Label, target: Target, standing: Standing) -> str:
    return retry_policy.summary("", [(label(target), standing.error)])


def one_shot_sent(fire: Fire) -> Resolution:
    """Return the resolution of a one-shot whose fire reached every target: done.

    What settle returns for it (a test holds the two equal), without labels, the policy or a
    rule to evaluate: a large tick writes thousands of these.
    """
    return Resolution(
        fire.claim,
        fire.reminder_id,
        fire.fire_at,
        "sent",
        SENT_DONE,
    )


def skip(fire: Fire, now: int, why: str | None = None) -> Resolution:
    """Pass over a row's fire later than its misfire grace (or `why`), without sending it.

    After an outage the backlog is skipped, but not an occurrence that is itself still within
    the grace: the row goes back to due on that one, so an on-time fire is never lost.
    """
    late = why or f"skipped: {(now - fire.fire_at) / 1000:.0f}s late, past the misfire grace"
    rule = _rule(fire)
    if rule is not None and fire.misfire_grace_ms is not None and why is None:
        latest, passed = schedule.latest_fire(rule, from_ms(fire.fire_at), from_ms(now))
        if latest is not None and now - to_ms(latest) <= fire.misfire_grace_ms:
            at = to_ms(latest)
            # row.fire_at and every fire before `latest` are skipped
            wall, release = _moved_on(fire, at - 1, at)
            row = RowState(
                at, at, 0, late, "pending", skipped=passed, after_wall=wall, release=release
            )
            return Resolution(fire.claim, fire.reminder_id, fire.fire_at, "skipped", row)
    nxt, skipped = advance(fire, now)
    wall, release = _moved_on(fire, max(now, fire.fire_at), nxt)
    row = RowState(
        nxt,
        nxt,
        0,
        late,
        "pending" if nxt is not None else "done",
        skipped=skipped + 1,
        after_wall=wall,
        release=release,
    )
    return Resolution(fire.claim, fire.reminder_id, fire.fire_at, "skipped", row)


def parked(fire: Fire, error: str, died_at: int | None = None) -> Resolution:
    """Park a row whose rule cannot be evaluated as dead, so inspect --dead shows it."""
    row = RowState(None, None, fire.error_count, error, "dead", dead_at=died_at)
    letter = DeadFire(fire.error_count, error, died_at)
    return Resolution(fire.claim, fire.reminder_id, fire.fire_at, "dead", row, (), letter)


def set_aside(fire: Fire, error: str, now: int) -> Resolution:
    """Set aside, sending nothing, a fire whose row cannot be read (its stored data): a row
    claim parks its row as dead; a target's retry becomes that fire's dead letter."""
    if isinstance(fire.claim, RowClaim):
        return parked(fire, error, now)
    letter = DeadFire(fire.error_count, error, now)
    return Resolution(fire.claim, fire.reminder_id, fire.fire_at, "dead", None, (), letter)


def advance(fire: Fire, now: int) -> tuple[int | None, int]:
    """Return the row's next fire after `now` and how many fires in between are coalesced.

    Missed ticks coalesce: a row found late is delivered once and moves to its first fire after
    now, instead of bursting one delivery for every period the scheduler was down.
    """
    rule = _rule(fire)
    if rule is None:
        return None, 0
    after_ = from_ms(max(now, fire.fire_at))
    try:
        nxt = schedule.next_fire(rule, after_)
        # The fires between a re-armed dead fire and now were each handled in their turn.
        skipped = 0 if fire.rearmed else schedule.count_fires(rule, from_ms(fire.fire_at), after_)
    except (DuequeueError, ValueError) as exc:
        raise BrokenRuleError(f"cannot compute the next fire: {exc}") from exc
    return (None if nxt is None else to_ms(nxt)), skipped


def _moved_on(fire: Fire, after: int, nxt: int | None) -> tuple[str | None, str | None]:
    """Return what a recurring row moving on to `nxt` (found after `after`) records of it: the
    zone wall time of `after` and the tz release that computed `nxt` (None, None: nothing).

    Written under the release that computed the fire, the wall time keeps which fires are passed
    when newer zone rules compute the row again (schedule/intent.py), so none is sent twice.
    """
    if fire.rule is None or nxt is None:
        return None, None
    return schedule.wall_text(from_ms(after), fire.tz), schedule.data_release()


def _rule(fire: Fire) -> Rule | None:
    """Return the fire's parsed rule, or None for a one-shot."""
    if fire.rule_kind is None or fire.rule is None:
        return None
    try:
        return schedule.parse_rule(
            fire.rule_kind, fire.rule, schedule.parse_zone(fire.tz), from_ms(fire.dtstart)
        )
    except (DuequeueError, ValueError) as exc:
        # E.g. a zone this host's tz database no longer has. Evaluating it again next minute
        # would fail the same way, so say so once and let the caller park the row.
        raise BrokenRuleError(f"cannot compute the next fire: {exc}") from exc


class BrokenRuleError(DuequeueError):
    """A stored rule can no longer be evaluated; the row is parked as dead."""
