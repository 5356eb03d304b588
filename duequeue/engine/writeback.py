"""The write-back rules: what a claimed row becomes after an attempt, a skip, or a broken rule.

Pure: a claimed row, the outcomes of its targets, the retry policy and the clock's `now` in; a
WriteBack out. No I/O, no event loop: tick.py runs the attempts and commits what this decides.
Missed fires coalesce, a fire past its misfire grace is skipped (but never an on-time
occurrence behind it), a partial success gives each failed target its own retry, and a rule that
can no longer be evaluated parks the row as dead (docs/how-a-tick-works.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

from duequeue.errors import DuequeueError
from duequeue.policy import Decision, RetryPolicy, Verdict, decide, retry_target
from duequeue.store.base import Claimed, NewTargetRetry, Target, WriteBack
from duequeue.timefmt import from_ms, to_ms

if TYPE_CHECKING:
    from duequeue.channels.base import Outcome
    from duequeue.schedule.rules import Rule


def label(target: Target) -> str:
    """Return how a failure names the target in a row's error (a notify URL masked)."""
    if target.channel == "notify":
        from duequeue.channels.notify import masked

        return f"notify {masked(target.address)}"
    return f"{target.channel} {target.address}"


def after_attempt(
    row: Claimed,
    now: int,
    policy: RetryPolicy,
    outcomes: Sequence[tuple[str, Outcome]],
    died_at: int,
) -> tuple[Verdict, WriteBack]:
    """Turn an attempt's outcomes into the row's write-back; a dead fire died at `died_at`."""
    d = decide(policy, outcomes, row.error_count)
    if row.retry_id is not None:
        return d.verdict, _after_target_retry(row, now, died_at, d)
    if d.verdict is Verdict.RETRY:
        assert d.delay_ms is not None
        return d.verdict, WriteBack(
            reminder_id=row.id,
            fire_at=row.fire_at,
            pending_fire_at=row.fire_at,
            next_fire_at=now + d.delay_ms,
            error_count=d.error_count,
            last_error=d.error,
            state="pending",
        )
    nxt, skipped = _advance(row, now)
    dead = d.verdict is Verdict.DEAD
    state: Literal["pending", "done", "dead"] = "pending"
    if nxt is None:
        state = "dead" if dead and row.rule is None else "done"
    retries: list[NewTargetRetry] = []
    dead_targets = False
    if d.verdict is Verdict.PARTIAL:
        # Each failed target keeps its own retry of this fire (every earlier attempt of it
        # failed on every target, so it failed as often as the row did, this time included);
        # one refused for good, or out of retries, is a dead letter of the fire at once.
        failures = row.error_count + 1
        for (label, o), t in zip(outcomes, row.targets, strict=True):
            if o.status == "sent":
                continue
            delay = retry_target(policy, o, failures)
            if delay is None:
                dead_targets = True
            else:
                retries.append(NewTargetRetry(t.id, failures, now + delay, f"{label}: {o.error}"))
    return d.verdict, WriteBack(
        reminder_id=row.id,
        fire_at=row.fire_at,
        pending_fire_at=nxt,
        next_fire_at=nxt,
        # A dead one-shot keeps its error count (inspect shows it); a recurring row starts its
        # next fire clean.
        error_count=d.error_count if state == "dead" else 0,
        last_error=d.error,
        state=state,
        dead_letter=dead or dead_targets,
        fired=not dead,
        skipped=skipped,
        dead_at=died_at if dead or dead_targets else None,
        failures=d.error_count if dead else row.error_count + 1,
        retries=tuple(retries),
    )


def one_shot_sent(row: Claimed) -> WriteBack:
    """Return the write-back of a one-shot whose fire reached every target: done.

    What after_attempt returns for it (a test holds the two equal), without the policy's
    classification or a rule to evaluate: a large tick writes thousands of these.
    """
    return WriteBack(
        row.id,
        row.fire_at,
        None,
        None,
        0,
        None,
        "done",
        fired=True,
        failures=row.error_count + 1,
    )


def _after_target_retry(row: Claimed, now: int, died_at: int, d: Decision) -> WriteBack:
    """Write back a per-target retry: sent (deleted), again later, or a dead letter."""
    state: Literal["pending", "done", "dead"] = "done"
    if d.verdict is Verdict.RETRY:
        assert d.delay_ms is not None
        state = "pending"
    elif d.verdict is Verdict.DEAD:
        state = "dead"
    return WriteBack(
        reminder_id=row.id,
        fire_at=row.fire_at,
        pending_fire_at=row.fire_at,
        next_fire_at=None if d.delay_ms is None else now + d.delay_ms,
        error_count=d.error_count,
        last_error=d.error,
        state=state,
        dead_letter=state == "dead",
        fired=state == "done",
        retry_id=row.retry_id,
        failures=d.error_count,
        dead_at=died_at if state == "dead" else None,
    )


def skip(row: Claimed, now: int, why: str | None = None) -> WriteBack:
    """Pass over a fire later than its misfire grace (or `why`), without sending it.

    After an outage the backlog is skipped, but not an occurrence that is itself still within
    the grace: the row goes back to due on that one, so an on-time fire is never lost.
    """
    late = why or f"skipped: {(now - row.fire_at) / 1000:.0f}s late, past the misfire grace"
    rule = _rule(row)
    if rule is not None and row.misfire_grace_ms is not None and why is None:
        from duequeue.schedule import rules as schedule

        latest, passed = schedule.latest_fire(rule, from_ms(row.fire_at), from_ms(now))
        if latest is not None and now - to_ms(latest) <= row.misfire_grace_ms:
            return WriteBack(
                reminder_id=row.id,
                fire_at=row.fire_at,
                pending_fire_at=to_ms(latest),
                next_fire_at=to_ms(latest),
                error_count=0,
                last_error=late,
                state="pending",
                skipped=passed,  # row.fire_at and every fire before `latest`
            )
    nxt, skipped = _advance(row, now)
    return WriteBack(
        reminder_id=row.id,
        fire_at=row.fire_at,
        pending_fire_at=nxt,
        next_fire_at=nxt,
        error_count=0,
        last_error=late,
        state="pending" if nxt is not None else "done",
        skipped=skipped + 1,
    )


def parked(row: Claimed, error: str, died_at: int | None = None) -> WriteBack:
    """Park a row whose rule cannot be evaluated as dead, so inspect --dead shows it."""
    return WriteBack(
        reminder_id=row.id,
        fire_at=row.fire_at,
        pending_fire_at=None,
        next_fire_at=None,
        error_count=row.error_count,
        last_error=error,
        state="dead",
        dead_letter=True,
        dead_at=died_at,
    )


def _advance(row: Claimed, now: int) -> tuple[int | None, int]:
    """Return the row's next fire after `now` and how many fires in between are coalesced.

    Missed ticks coalesce: a row found late is delivered once and moves to its first fire after
    now, instead of bursting one delivery for every period the scheduler was down.
    """
    rule = _rule(row)
    if rule is None:
        return None, 0
    from duequeue.schedule import rules as schedule

    after = from_ms(max(now, row.fire_at))
    try:
        nxt = schedule.next_fire(rule, after)
        # The fires between a re-armed dead fire and now were each handled in their turn.
        skipped = 0 if row.rearmed else schedule.count_fires(rule, from_ms(row.fire_at), after)
    except (DuequeueError, ValueError) as exc:
        raise BrokenRuleError(f"cannot compute the next fire: {exc}") from exc
    return (None if nxt is None else to_ms(nxt)), skipped


def _rule(row: Claimed) -> Rule | None:
    """Return the row's parsed rule, or None for a one-shot."""
    if row.rule_kind is None or row.rule is None:
        return None
    from duequeue.schedule import rules as schedule

    try:
        return schedule.parse_rule(
            row.rule_kind, row.rule, schedule.parse_zone(row.tz), from_ms(row.dtstart)
        )
    except (DuequeueError, ValueError) as exc:
        # E.g. a zone this host's tz database no longer has. Evaluating it again next minute
        # would fail the same way, so say so once and let the caller park the row.
        raise BrokenRuleError(f"cannot compute the next fire: {exc}") from exc


class BrokenRuleError(DuequeueError):
    """A stored rule can no longer be evaluated; the row is parked as dead."""
