"""The records that cross the store (store.py): what goes in, what a tick leases and writes
back, what the reads return.

All times are integer unix milliseconds UTC. A store never talks to SMTP or HTTP and never reads
the clock: `now` is always an argument.

Records are not changed once built. The ones a tick builds for every delivery (Fire, Target,
TargetLedger, DeliveryRecord, Resolution and its parts) are plain slotted dataclasses rather than
frozen ones: a frozen dataclass costs three to four times as much to build, and a tick of 20,000
rows builds over 100,000 of them.
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


@dataclass(frozen=True, slots=True)
class NewTarget:
    """A target of a reminder being added."""

    channel: Channel
    address: str
    # A webhook's own signing secret(s), space-separated; None: DUEQUEUE_WEBHOOK_SECRET.
    secret: str | None = field(default=None, repr=False)
    # The address as every view shows it (its channel's `shown`: a notify URL's tokens masked),
    # which is what search finds; None: shown as stored.
    shown: str | None = None


@dataclass(frozen=True, slots=True)
class NewReminder:
    """A validated reminder ready to be written."""

    subject: str
    body: str
    data: str | None
    tz: str
    dtstart: int
    fire_at: int | None
    targets: tuple[NewTarget, ...]
    rule_kind: Literal["rrule", "cron"] | None = None
    rule: str | None = None
    misfire_grace_ms: int | None = None
    key: str | None = None
    # What the user meant (docs/time.md): the wall time `at` named in tz (ISO text, None for an
    # instant) and the tz release that computed dtstart and fire_at ('' unknown).
    start_wall: str | None = None
    release: str = ""
    zone_digest: str | None = None  # of tz's compiled rules under `release` (recompute.py)
    # The time was given relative to now (+15m, now, a timedelta, a cron rule from now): a
    # repeat of the add names another instant, so a live key's time is not compared with it.
    relative: bool = False


@dataclass(frozen=True, slots=True)
class NewSchedule:
    """When a rescheduled reminder fires: its zone, start, rule and pending fire."""

    tz: str
    dtstart: int
    fire_at: int
    rule_kind: Literal["rrule", "cron"] | None = None
    rule: str | None = None
    # As NewReminder's: the wall time a new --at named in tz (None: an instant) and the tz
    # release that computed fire_at; '' when the start was kept, so the next tick takes the
    # walls from the stored instants, as for a row stored before releases were kept.
    start_wall: str | None = None
    release: str = ""


@dataclass(frozen=True, slots=True)
class Edit:
    """A checked change of one reminder (`reschedule`, `edit`), applied only if no tick holds
    it and its pending fire is still the one read (`seen`: fire_at, next_fire_at, error_count)."""

    seen: tuple[int | None, int | None, int]
    note: str  # the line `history` shows for it
    schedule: NewSchedule | None = None
    content: dict[str, str | None] = field(default_factory=dict)  # subject, body, data
    targets: tuple[NewTarget, ...] | None = None  # the whole new set, when they change
    # What search finds of the reminder after the change (search_sql.text), when the subject or
    # the targets change; None: as it was.
    search: str | None = None


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
# its own (commit_sql._DONE).
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


@dataclass(frozen=True, slots=True)
class ReminderView:
    """A reminder (or one dead fire of it) as `inspect` shows it."""

    id: int
    key: str | None
    subject: str
    targets: tuple[Target, ...]
    rule_kind: Literal["rrule", "cron"] | None
    rule: str | None
    tz: str
    state: State
    fire_at: int | None
    next_fire_at: int | None
    error_count: int
    last_error: str | None
    last_fired_at: int | None
    skipped_fires: int
    created_at: int
    dead_at: int | None = None
    dead_fire_at: int | None = None  # the dead fire, in the dead view
    last_sent_at: int | None = None  # when the last fired fire first reached a target
    dtstart: int | None = None  # the --at instant, the RRULE's DTSTART
    start_wall: str | None = None  # the wall time --at named in tz; None for an instant
    fire_release: str | None = None  # the tz release that computed the pending fire
    body: str = ""
    data: str | None = None  # the JSON text as stored; None when none
    dead_letters: int = 0  # open dead letters: dead fires not retried, of a row not cancelled
    paused_at: int | None = None  # when `pause` paused it; its pending fire is then fire_at


@dataclass(frozen=True, slots=True)
class DeadLetter:
    """One dead fire of a reminder; `retried_at` is set once `retry` re-armed it."""

    reminder_id: int
    fire_at: int
    error_count: int
    last_error: str | None
    dead_at: int
    retried_at: int | None = None


@dataclass(frozen=True, slots=True)
class PendingRetry:
    """A failed target of a partial success, retrying its fire on its own."""

    reminder_id: int
    target_id: int
    fire_at: int
    error_count: int
    last_error: str | None
    next_try_at: int


@dataclass(frozen=True, slots=True)
class Change:
    """What `cancel` or `retry_dead` did to one reminder: applied, or skipped with a reason."""

    reminder_id: int
    fire_at: int | None = None  # retry: the dead fire re-armed
    skipped: str | None = None  # why nothing was changed; None when applied


@dataclass(frozen=True, slots=True)
class HostTick:
    """A host that ticks a shared queue: its last tick (the database server's clock) and how far
    its own clock was from the server's then."""

    host: str
    at: int
    offset_ms: int  # the host's clock minus the server's: positive when the host runs ahead
    release: str | None = None  # the tz release its last tick read (None: not recorded)


@dataclass(frozen=True, slots=True)
class Stats:
    """Counts for `stats`, taken at one instant."""

    pending: int  # rows with a next fire
    done: int
    dead: int  # dead one-shots (parked)
    cancelled: int
    due: int  # pending rows whose next_fire_at <= now
    retrying: int  # pending rows backing off after failures
    leased: int  # rows a tick holds right now
    dead_letters: int  # dead fires not retried, of rows not cancelled (what inspect --dead lists)
    dead_reminders: int  # rows not cancelled with one or more of those (the dashboard's dead list)
    retrying_targets: int  # failed targets of a partial success retrying their fire on their own
    disabled_targets: int  # targets switched off after 410 Gone, of rows not cancelled
    oldest_due_at: int | None  # the smallest next_fire_at among due rows
    sent_last_hour: int
    failed_last_hour: int  # ledger rows `failed` or `permanent`
    sent_last_day: int
    failed_last_day: int
    last_tick_ok_at: int | None = None  # when a tick last ended without error; None: never
    hosts: tuple[HostTick, ...] = ()  # on a shared database: the hosts that ticked in a day
    moved_fires: int = 0  # pending fires moved by zone rules changes (fire_moves)
    paused: int = 0  # reminders paused (`pause ID`): not pending, not due
    queue_paused_at: int | None = None  # since when the whole queue is paused; None: it is not
    tick_release: str | None = None  # SQLite: the tz release the last tick read
    # The counts that stopped at a cap (ops_sql.stats): each is a lower bound, not exact.
    lower_bounds: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class PruneCounts:
    """What `prune` removed (or would remove, on a dry run)."""

    deliveries: int  # ledger rows, including those of the removed reminders
    done: int  # finished one-shots and ended rules
    cancelled: int
    dead_letters: int  # retried or moot dead letters of the removed reminders


# What the dashboard lists (serve): inspect's states, and the ones only a person browsing asks for.
BrowseState = Literal["all", "pending", "due", "retrying", "paused", "dead", "done", "cancelled"]


@dataclass(frozen=True, slots=True)
class Dashboard:
    """What serve's overview reads beside `stats`, in the same snapshot."""

    stats: Stats
    max_lateness_ms: int | None  # the latest first attempt, of the last ticks' (ledger) rows
    # Ledger outcomes by minute over the last day: (minutes ago, sent, failed or refused).
    per_minute: tuple[tuple[int, int, int], ...]
    # Fires due by hour over the next day: (hours ahead, rows).
    per_hour: tuple[tuple[int, int], ...]


@dataclass(frozen=True, slots=True)
class StaleFire:
    """A pending row whose fire an older tz release computed: what it takes to compute again."""

    reminder_id: int
    rule_kind: Literal["rrule", "cron"] | None
    rule: str | None
    tz: str
    dtstart: int
    start_wall: str | None
    after_wall: str | None
    fire_at: int
    next_fire_at: int
    error_count: int
    release: str  # '' when unknown (a row stored before releases were recorded)


@dataclass(frozen=True, slots=True)
class Refire:
    """A stale row computed again under `release`: its new start, fire and walls."""

    reminder_id: int
    old_fire_at: int
    old_release: str
    dtstart: int
    fire_at: int
    next_fire_at: int
    start_wall: str | None
    after_wall: str | None


@dataclass(frozen=True, slots=True)
class FireMove:
    """A pending fire moved by a zone rules change (history)."""

    reminder_id: int
    old_fire_at: int
    new_fire_at: int
    old_release: str
    new_release: str
    moved_at: int


@dataclass(frozen=True, slots=True)
class HealthCheck:
    """One check `doctor` runs on the store: ok or a problem, and how to fix it."""

    name: str
    ok: bool
    detail: str
    fix: str | None = None
    warning: bool = False  # ok, but worth a look (exit 0)
