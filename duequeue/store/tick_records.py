"""The records a tick leases, delivers and writes back (claim_sql, commit_sql, the engine):
what a claim returns, what each attempt records and what a claim resolves to.

All times are integer unix milliseconds UTC. They are plain slotted dataclasses rather than
frozen ones: a frozen dataclass costs three to four times as much to build, and a tick of 20,000
rows builds over 100,000 of them. They live apart from the other records (records.py, which
re-exports them) because making a dataclass is dear on Python 3.11 (about 4e6 instructions a
frozen one, BENCHMARKS.md "Issue 34: the empty tick, step by step"): cron's tick with nothing
due, every minute, makes only these few and the literal types below.
"""

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal

# A target's channel: the name a channel registered (channels/registry.py): email, webhook,
# notify, or any other; the store keeps it as it is given.
Channel = str
View = Literal["dead", "due", "pending", "all"]
State = Literal["pending", "paused", "done", "dead", "cancelled"]
# What the dashboard lists (serve): inspect's states, and the ones only a person browsing asks for.
BrowseState = Literal["all", "pending", "due", "retrying", "paused", "dead", "done", "cancelled"]


@dataclass(slots=True)
class Target:
    """A stored target; `disabled_at` is set once its endpoint answered 410 Gone; `secret` is a
    webhook's own signing secret(s) (never shown: not even in its repr)."""

    id: int
    channel: Channel
    address: str
    disabled_at: int | None = None
    secret: str | None = field(default=None, repr=False)


@dataclass(frozen=True, slots=True)
class RowClaim:
    """A tick's lease on a reminder row: its pending fire, for every target that lacks it."""

    reminder_id: int


@dataclass(frozen=True, slots=True)
class TargetClaim:
    """A tick's lease on one target's own retry of a fire its reminder has moved past (a
    partial success left it behind, see target_retries)."""

    target_id: int
    fire_at: int


# What a tick leases, writes back and releases: a row's pending fire, or one target's retry.
Claim = RowClaim | TargetClaim


@dataclass(slots=True)
class TargetLedger:
    """What the ledger holds for one target of one fire: the target's own retry state.

    Counted since the fire was last re-armed by `retry` (`sent` is for good): every attempt a
    tick recorded counts, whatever stopped that tick before it wrote the row back.
    """

    sent: bool = False
    failures: int = 0  # failed attempts (what DUEQUEUE_MAX_RETRIES bounds)
    refused: bool = False  # a permanent failure: never tried again for this fire
    retry_at: int | None = None  # not to be tried before this (backoff, Retry-After)
    last_error: str | None = None
    attempts: int = 0  # every recorded attempt, re-armed or not: the next one's number - 1


# A fire no target was tried for yet (the usual case, thousands a tick): one shared instance.
FRESH = TargetLedger()
NO_LEDGER: Mapping[int, TargetLedger] = MappingProxyType({})


@dataclass(slots=True)
class Fire:
    """A fire a tick has leased: what to send, to whom, and what the ledger holds for it.

    `targets` are those still to be settled: disabled targets (410 Gone) are left out unless
    already tried for this fire. `ledger` maps a target id to its TargetLedger; a target not in
    it was never tried for this fire.
    """

    claim: Claim
    reminder_id: int
    subject: str
    body: str
    data: str | None
    rule_kind: Literal["rrule", "cron"] | None
    rule: str | None
    tz: str
    dtstart: int
    misfire_grace_ms: int | None
    fire_at: int
    error_count: int  # the reminder row's (a row claim), or the target's failures (a target claim)
    targets: tuple[Target, ...]
    ledger: Mapping[int, TargetLedger] = field(default_factory=lambda: NO_LEDGER)
    # fire_at is a dead fire an operator re-armed (`retry`): it goes out however late it is, and
    # the fires between it and now were handled already, so none of them counts as skipped.
    rearmed: bool = False


@dataclass(slots=True)
class DeliveryRecord:
    """One attempt of one target for one fire, for the ledger; `retry_at`: after a failure
    that may clear, the earliest time of the next attempt (the backoff, Retry-After); `gone`:
    the endpoint answered 410 Gone."""

    reminder_id: int
    target_id: int
    fire_at: int
    outcome: Literal["sent", "failed", "permanent"]
    error: str | None
    attempt: int
    at: int
    retry_at: int | None = None
    # The endpoint answered 410 Gone: the target is switched off with the record itself, a fact
    # like the attempt, whether the tick then settles the fire or hands its claim back.
    gone: bool = False


@dataclass(slots=True)
class RowState:
    """A reminder row's new state after its pending fire was settled, held or skipped."""

    pending_fire_at: int | None  # scheduled instant of the row's pending fire
    next_fire_at: int | None  # when to try it; None parks the row
    error_count: int
    last_error: str | None
    state: Literal["pending", "done", "dead"]
    fired: bool = False  # the settled fire reached at least one target: becomes last_fired_at
    skipped: int = 0  # fires coalesced away after missed ticks
    dead_at: int | None = None  # a dead one-shot: when it died
    # A recurring row moved on: the zone wall time its next fire was found after (every fire
    # at or before it is passed), and the tz release that computed the next fire.
    after_wall: str | None = None
    release: str | None = None


# A one-shot whose fire reached every target: done. The common write-back, thousands a tick;
# one shared instance (records are never changed), which the store writes with a statement of
# its own (resolve_done in store/statements/commit.sql).
SENT_DONE = RowState(None, None, 0, None, "done", fired=True)


@dataclass(slots=True)
class Waiting:
    """A target that retries a fire on its own (target_retries) from `next_try_at`."""

    target_id: int
    failures: int
    next_try_at: int
    last_error: str | None


@dataclass(slots=True)
class DeadFire:
    """A fire's dead letter: targets that will never get it (retries spent or refused)."""

    error_count: int  # the dead targets' own failed attempts (the most of them)
    last_error: str | None
    dead_at: int | None  # None: the commit's `now`


@dataclass(slots=True)
class Resolution:
    """What a claim becomes after a tick tried its fire; applied only while the lease is ours.

    A row claim gets its new `row` state; a target claim's retry row is deleted, or kept with
    the new `waiting` state of its target. `waiting` of a row claim are the targets the row
    leaves behind, each retrying the fire on its own. `verdict` is what the tick counts it as.
    """

    claim: Claim
    reminder_id: int
    fire_at: int
    verdict: Literal["sent", "partial", "retried", "dead", "skipped"]
    row: RowState | None = None
    waiting: tuple[Waiting, ...] = ()
    dead: DeadFire | None = None
    disable: tuple[int, ...] = ()  # target ids whose endpoint answered 410 Gone


@dataclass(frozen=True, slots=True)
class Committed:
    """What one commit did: the resolutions that applied, those refused because the lease was
    no longer ours (another tick took the claim, or `cancel` / `retry` changed it), and how many
    claims it released."""

    applied: tuple[Resolution, ...] = ()
    refused: tuple[Resolution, ...] = ()
    released: int = 0
