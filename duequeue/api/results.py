"""The public types `duequeue.Queue` returns, all importable from `duequeue`.

Plain frozen data: every instant is an aware `datetime` in UTC, every span a `timedelta`. No
secret is in them: a webhook's own signing secret is only `has_secret`, and an address is given
both as stored and as fit to print (`display`: a notify URL with its tokens masked).
from_records.py makes them from the store's records; front ends (the CLI, serve) render them.
`TickSummary` is the engine's own (engine/summary.py, with its tick line and JSON form), shown
here: cron's plain tick builds one every minute and loads that small module alone.
"""

__all__ = [
    "Added",
    "Attempt",
    "Change",
    "Check",
    "ConfigReport",
    "DeadLetter",
    "DoctorReport",
    "Fire",
    "Fires",
    "History",
    "HostSeen",
    "ImportResult",
    "Migrated",
    "MovedBy",
    "MovedFire",
    "Outcome",
    "Overview",
    "Page",
    "Preview",
    "PruneCounts",
    "QueuePause",
    "Recomputed",
    "Reminder",
    "State",
    "Stats",
    "Target",
    "TargetRetry",
    "TickSummary",
    "View",
]

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal

from duequeue.engine.summary import TickSummary

View = Literal["dead", "due", "pending", "all"]
State = Literal["pending", "paused", "done", "dead", "cancelled"]
Outcome = Literal["sent", "failed", "permanent"]


@dataclass(frozen=True, slots=True)
class Target:
    """Where a reminder goes: a channel (`email`, `webhook`, `notify`) and an address."""

    id: int
    channel: str
    address: str
    display: str  # the address fit to print: a notify URL's tokens masked
    disabled_at: datetime | None = None  # when a 410 Gone switched it off (see Queue.enable)
    has_secret: bool = False  # a webhook with its own signing secret


@dataclass(frozen=True, slots=True)
class Reminder:
    """A reminder as `inspect` lists it; in the `dead` view, one dead fire of it."""

    id: int
    key: str | None
    subject: str
    targets: tuple[Target, ...]
    rrule: str | None
    cron: str | None
    tz: str
    state: State
    fire_at: datetime | None  # the scheduled instant of the pending fire
    next_fire_at: datetime | None  # when it is tried (later than fire_at while backing off)
    error_count: int
    last_error: str | None
    last_fired_at: datetime | None  # the scheduled instant of the last delivered fire
    last_sent_at: datetime | None  # when that fire first reached a target
    skipped_fires: int
    created_at: datetime
    start: datetime | None = None  # the `at` instant: an RRULE's DTSTART
    dead_fire_at: datetime | None = None  # in the `dead` view: the dead fire
    dead_at: datetime | None = None
    start_wall: datetime | None = None  # the wall time `at` named in tz (None: an instant)
    local_fire_at: datetime | None = None  # fire_at on the zone's clocks (the rules in use)
    fire_release: str | None = None  # the tz release that computed fire_at ('' unknown)
    # What it sends: the body, and the data with the values of secret-looking keys and the
    # passwords of URLs masked (shared/redact.py `data`); None when it has no data.
    body: str = ""
    data: Any = None
    # Its open dead letters: fires some target never got (retries ran out or it was refused
    # for good) that `retry` has not re-armed; a cancelled reminder's are moot (0).
    dead_letters: int = 0
    # When `pause` paused it (state "paused"): no tick delivers it; fire_at waits for `resume`.
    paused_at: datetime | None = None

    @property
    def dead(self) -> bool:
        """Return whether the reminder has an open dead letter, whatever its state (the one
        model of docs/reference.md "A reminder's state"; a dead one-shot always has one)."""
        return self.dead_letters > 0 or self.dead_fire_at is not None or self.state == "dead"

    @property
    def status(self) -> str:
        """Return the state as every view prints it: the state, `retrying` while a pending
        fire backs off, then the open dead letters (`done, 1 dead letter`)."""
        parts: list[str] = [self.state]
        if self.state == "pending" and self.error_count > 0 and self.dead_fire_at is None:
            parts.append("retrying")
        letters = max(self.dead_letters, 1 if self.dead else 0)
        if letters and not (self.state == "dead" and letters == 1):
            parts.append(f"{letters} dead letter{'s' if letters > 1 else ''}")
        return ", ".join(parts)

    @property
    def last_lateness(self) -> timedelta | None:
        """Return how late the last delivered fire first reached a target."""
        if self.last_sent_at is None or self.last_fired_at is None:
            return None
        return self.last_sent_at - self.last_fired_at


@dataclass(frozen=True, slots=True)
class Initialized:
    """What `Queue.init` did: the database (fit to print) and whether it was made now."""

    location: str
    created: bool  # False: it existed (it is opened, checked and upgraded all the same)


@dataclass(frozen=True, slots=True)
class Added:
    """What `Queue.add` did: the reminder's id, and whether it is new."""

    id: int
    created: bool  # False: a reminder with this key existed; nothing was written
    # What the user should know: a first fire in the past, email targets without SMTP, or
    # that the key existed. One line each.
    notes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Fire:
    """One fire: the instant (UTC) and the same in the reminder's zone."""

    at: datetime
    local: datetime


@dataclass(frozen=True, slots=True)
class Preview:
    """What `Queue.preview` found: the fires a reminder would have, and notes as for add."""

    tz: str
    fires: tuple[Fire, ...]
    notes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Fires:
    """A stored reminder's next fires (`Queue.next_fires`); none once it is finished."""

    id: int
    tz: str
    state: State
    fires: tuple[Fire, ...]
    start_wall: datetime | None = None  # the wall time `at` named in tz (None: an instant)
    fire_release: str | None = None  # the tz release that computed the pending fire
    tz_release: str | None = None  # the tz release this process reads


@dataclass(frozen=True, slots=True)
class Attempt:
    """One delivery attempt of one target for one fire, from the ledger."""

    at: datetime  # when the attempt ended
    fire_at: datetime  # the scheduled instant it delivered
    target: Target | None  # None only if the target is gone
    outcome: Outcome
    error: str | None
    attempt: int  # the attempts of that target for that fire so far, this one included


@dataclass(frozen=True, slots=True)
class DeadLetter:
    """One dead fire of a reminder; `retried_at` is set once `retry` re-armed it."""

    fire_at: datetime
    dead_at: datetime
    error_count: int
    last_error: str | None
    retried_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class TargetRetry:
    """A failed target of a partial success, retrying its fire on its own."""

    fire_at: datetime
    target: Target | None
    error_count: int
    last_error: str | None
    next_try_at: datetime


@dataclass(frozen=True, slots=True)
class Revision:
    """One change `reschedule` or `edit` made to a reminder, as `history` lists it."""

    at: datetime
    what: str  # one line: "rescheduled: next fire ... (was ...)", "edited: subject, targets ..."


@dataclass(frozen=True, slots=True)
class Changed:
    """What `Queue.reschedule` or `Queue.edit` did: the reminder as it is now, and notes."""

    reminder: Reminder
    notes: tuple[str, ...] = ()  # e.g. a new fire in the past goes out at the next tick


@dataclass(frozen=True, slots=True)
class MovedFire:
    """A pending fire a zone rules change moved: from old_fire_at (computed by old_release) to
    new_fire_at (new_release), at moved_at."""

    old_fire_at: datetime
    new_fire_at: datetime
    old_release: str
    new_release: str
    moved_at: datetime


@dataclass(frozen=True, slots=True)
class MovedBy:
    """One reminder's pending fire that `recompute` moved (or would move)."""

    reminder_id: int
    old_fire_at: datetime
    new_fire_at: datetime
    old_release: str  # the release that computed old_fire_at ('unknown' before releases were kept)


@dataclass(frozen=True, slots=True)
class Recomputed:
    """What `recompute` did: pending fires computed by a release older than `release`."""

    release: str  # the tz release in use, which computed them again
    dry_run: bool
    checked: int  # pending rows an older release had computed
    moved: int  # of those, fires whose instant changed
    moves: tuple[MovedBy, ...]  # the first 1,000 of them


@dataclass(frozen=True, slots=True)
class History:
    """A reminder, every delivery attempt of it (oldest first), its dead letters, and the
    changes reschedule and edit made to it."""

    reminder: Reminder
    attempts: tuple[Attempt, ...]
    dead_letters: tuple[DeadLetter, ...]
    target_retries: tuple[TargetRetry, ...]
    changes: tuple[Revision, ...] = ()
    moved_fires: tuple[MovedFire, ...] = ()  # pending fires moved by zone rules changes


@dataclass(frozen=True, slots=True)
class Change:
    """What `retry`, `cancel` or `enable` did to one reminder: applied, or skipped and why."""

    reminder_id: int
    fire_at: datetime | None = None  # retry: the dead fire re-armed, due now
    skipped: str | None = None  # why nothing changed; None when applied

    @property
    def applied(self) -> bool:
        """Return whether the reminder was changed."""
        return self.skipped is None


@dataclass(frozen=True, slots=True)
class QueuePause:
    """Whether the whole queue is paused after `pause_queue` or `resume_queue`, and since when;
    `changed` is False when it already was as asked."""

    paused: bool
    since: datetime | None  # when it was paused (the pause this call made, or found)
    changed: bool


@dataclass(frozen=True, slots=True)
class HostSeen:
    """A host that ticked a shared (PostgreSQL) queue in the last day."""

    host: str
    last_tick: datetime  # by the database server's clock
    clock_offset: timedelta  # the host's clock minus the server's at that tick (ahead: > 0)
    tz_release: str | None = None  # the tz data release its last tick read (None: unknown)


@dataclass(frozen=True, slots=True)
class Stats:
    """Counts of reminders by state, due rows and recent deliveries, taken at one instant."""

    at: datetime
    pending: int
    done: int
    dead: int  # dead one-shots (parked)
    cancelled: int
    due: int  # pending rows whose next try is now or past
    retrying: int  # pending rows backing off after failures
    leased: int  # rows a tick holds right now
    dead_letters: int  # dead fires awaiting retry (what the `dead` view lists)
    dead_reminders: int  # reminders with one or more of those: those whose `dead` is true
    retrying_targets: int  # failed targets of a partial success retrying on their own
    disabled_targets: int  # targets switched off after 410 Gone
    oldest_due_at: datetime | None
    sent_last_hour: int
    failed_last_hour: int  # attempts failed or refused for good
    sent_last_day: int
    failed_last_day: int
    # When a tick last ended without error (its start); None: never. An alert on its age
    # catches ticks that stopped or fail (a broken crontab, an unreadable config file).
    last_successful_tick: datetime | None = None
    hosts: tuple[HostSeen, ...] = ()  # PostgreSQL: the hosts that ticked in the last day
    moved_fires: int = 0  # pending fires moved by zone rules changes, ever
    paused: int = 0  # reminders paused (`pause ID`): neither pending nor due
    # Since when the whole queue is paused (`duequeue pause`): ticks deliver nothing. None: it
    # is not.
    queue_paused_since: datetime | None = None
    last_tick_tz_release: str | None = None  # SQLite: the tz release the last tick read
    # The counts that stopped at a cap (stats(cap=...)), each at least what it says; () when
    # every figure is exact, as `duequeue stats` always is.
    lower_bounds: tuple[str, ...] = ()

    @property
    def estimate(self) -> bool:
        """Return whether any figure is a lower bound rather than an exact count."""
        return bool(self.lower_bounds)

    @property
    def oldest_due_lateness(self) -> timedelta | None:
        """Return how long the oldest due row has waited for a tick; None when none is due."""
        return None if self.oldest_due_at is None else self.at - self.oldest_due_at


@dataclass(frozen=True, slots=True)
class Overview:
    """What serve's dashboard shows first: stats, how late the last ticks were, two series."""

    stats: Stats
    # The latest first attempt among the ledger rows of the last 15 minutes; None: none.
    max_lateness: timedelta | None
    # Ledger outcomes per minute over the last 24 h, oldest first: (minute start, sent, failed).
    per_minute: tuple[tuple[datetime, int, int], ...]
    # Fires due per hour over the next 24 h, soonest first: (hour start, rows).
    per_hour: tuple[tuple[datetime, int], ...]
    # The starts of the hours of per_hour whose count stopped at its cap (overview(cap=...)):
    # each holds at least the rows it says; () when every hour is exact.
    per_hour_lower_bounds: tuple[datetime, ...] = ()


@dataclass(frozen=True, slots=True)
class Page:
    """One page of `Queue.browse`: reminders newest first, and the cursor of the next page."""

    reminders: tuple[Reminder, ...]
    next_before: int | None  # pass as `before` for the next page; None: this is the last
    # A search read its window (20,000 reminders) before the page was full: the page holds
    # fewer than `limit`, and `next_before` goes on below what it read.
    partial: bool = False


@dataclass(frozen=True, slots=True)
class PruneCounts:
    """What `prune` removed, or would remove on a dry run."""

    before: datetime  # what finished before this went
    dry_run: bool
    deliveries: int  # ledger rows, those of the removed reminders included
    done: int  # finished one-shots and ended rules
    cancelled: int
    dead_letters: int  # retried or moot dead letters of the removed reminders


@dataclass(frozen=True, slots=True)
class ImportResult:
    """What `import_lines` did."""

    lines: int  # reminders read (blank lines not counted)
    imported: int
    skipped: int  # reminders whose key existed already
    notes: tuple[str, ...] = ()  # e.g. a field read under its old name


@dataclass(frozen=True, slots=True)
class Contracted:
    """What `migrate --contract` did to the schema (docs/upgrading.md)."""

    database: str  # the --db file or URL, its password masked
    floor_before: int  # the oldest schema version whose duequeue could run on it, before
    floor: int  # ... and after: older versions now refuse the database
    version: int  # the newest step applied
    steps: tuple[str, ...]  # the contract steps applied; () when none was pending


@dataclass(frozen=True, slots=True)
class Migrated:
    """What `migrate` copied, by table."""

    source: str  # the database copied from: a file, or a URL with its password masked
    destination: str  # the database copied into, as the source
    reminders: int
    targets: int
    deliveries: int
    dead_letters: int
    target_retries: int


@dataclass(frozen=True, slots=True)
class Check:
    """One finding of `doctor`: ok or a problem, and how to fix it."""

    name: str
    ok: bool
    detail: str
    fix: str | None = None
    warning: bool = False  # ok, but worth a look: doctor still exits 0


@dataclass(frozen=True, slots=True)
class DoctorReport:
    """Every check `doctor` ran."""

    checks: tuple[Check, ...]

    @property
    def ok(self) -> bool:
        """Return whether every check passed."""
        return all(c.ok for c in self.checks)


@dataclass(frozen=True, slots=True)
class ConfigReport:
    """The effective settings, secrets masked, and where each came from."""

    settings: dict[str, Any]  # by name, as in the config file; secrets masked
    # by name: "argument" (Queue's keyword, a CLI flag), "DUEQUEUE_X", "config file", "default"
    sources: dict[str, str]
    config_file: str  # the file looked for
    config_file_read: bool  # False: it did not exist (allowed for the default path only)
    tz_data: str  # the tz database release in use and where it comes from
