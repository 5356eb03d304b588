"""The records that cross the store (store.py): what goes in, what a tick leases and writes
back, what the reads return.

All times are integer unix milliseconds UTC. A store never talks to SMTP or HTTP and never reads
the clock: `now` is always an argument.

Records are not changed once built. The ones a tick leases, delivers and writes back are
tick_records.py's, re-exported here: cron's tick with nothing due imports only those (a
dataclass is dear to make on Python 3.11), and the store's modules on its path load this one on
first use (a LazyModule). The rest are frozen.
"""

from dataclasses import dataclass, field
from typing import Literal

from duequeue.store.tick_records import (
    FRESH,
    NO_LEDGER,
    SENT_DONE,
    BrowseState,
    Channel,
    Claim,
    Committed,
    DeadFire,
    DeliveryRecord,
    Fire,
    Resolution,
    RowClaim,
    RowState,
    State,
    Target,
    TargetClaim,
    TargetLedger,
    View,
    Waiting,
)

# Every record by name here, the tick's re-exported.
__all__ = [
    "FRESH",
    "NO_LEDGER",
    "SENT_DONE",
    "BrowseState",
    "Change",
    "Channel",
    "Claim",
    "Committed",
    "Dashboard",
    "DeadFire",
    "DeadLetter",
    "DeliveryRecord",
    "Edit",
    "Fire",
    "FireMove",
    "HealthCheck",
    "HostTick",
    "NewReminder",
    "NewSchedule",
    "NewTarget",
    "PendingRetry",
    "PruneCounts",
    "Refire",
    "ReminderView",
    "Resolution",
    "RowClaim",
    "RowState",
    "StaleFire",
    "State",
    "Stats",
    "Target",
    "TargetClaim",
    "TargetLedger",
    "View",
    "Waiting",
]


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
    # The schema version of the duequeue its last tick ran (None: a version from before
    # expand/contract steps, which did not record it; docs/upgrading.md).
    schema: int | None = None


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


@dataclass(frozen=True, slots=True)
class Dashboard:
    """What serve's overview reads beside `stats`, in the same snapshot."""

    stats: Stats
    max_lateness_ms: int | None  # the latest first attempt, of the last ticks' (ledger) rows
    # Ledger outcomes by minute over the last day: (minutes ago, sent, failed or refused).
    per_minute: tuple[tuple[int, int, int], ...]
    # Fires due by hour over the next day: (hours ahead, rows); with `hour_cap`, each count
    # stops one row over it (so a count above it says the hour holds more).
    per_hour: tuple[tuple[int, int], ...]
    hour_cap: int | None = None


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
