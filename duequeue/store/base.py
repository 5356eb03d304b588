"""The store interface every backend implements, and the records that cross it.

All times are integer unix milliseconds UTC. A store never talks to SMTP or HTTP and never reads
the clock: `now` is always an argument.
"""

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

Channel = Literal["email", "webhook"]
View = Literal["dead", "due", "pending", "all"]
State = Literal["pending", "done", "dead", "cancelled"]


@dataclass(frozen=True, slots=True)
class NewTarget:
    """A target of a reminder being added."""

    channel: Channel
    address: str


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


@dataclass(frozen=True, slots=True)
class Target:
    """A stored target."""

    id: int
    channel: Channel
    address: str


@dataclass(frozen=True, slots=True)
class Claimed:
    """A row a tick has leased, with what the ledger already holds for its pending fire."""

    id: int
    subject: str
    body: str
    data: str | None
    rule_kind: Literal["rrule", "cron"] | None
    rule: str | None
    tz: str
    dtstart: int
    misfire_grace_ms: int | None
    fire_at: int
    error_count: int
    targets: tuple[Target, ...]
    sent: frozenset[int] = frozenset()  # target ids already recorded as sent for fire_at
    permanent: frozenset[int] = frozenset()  # target ids that failed for good for fire_at
    attempts: dict[int, int] = field(default_factory=dict)  # target id -> attempts so far


@dataclass(frozen=True, slots=True)
class DeliveryRecord:
    """One attempt of one target for one fire, for the ledger."""

    reminder_id: int
    target_id: int
    fire_at: int
    outcome: Literal["sent", "failed", "permanent"]
    error: str | None
    attempt: int
    at: int


@dataclass(frozen=True, slots=True)
class WriteBack:
    """The new state of a claimed row after a tick tried its pending fire."""

    reminder_id: int
    fire_at: int  # the fire that was tried
    pending_fire_at: int | None  # scheduled instant of the next pending fire
    next_fire_at: int | None  # when to try it; None parks the row
    error_count: int
    last_error: str | None
    state: Literal["pending", "done", "dead"]
    dead_letter: bool = False  # record fire_at as a dead letter
    fired: bool = False  # fire_at reached at least one target: becomes last_fired_at
    skipped: int = 0  # fires coalesced away after missed ticks


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


class Store(ABC):
    """The persistence contract of duequeue.

    Every method is one transaction: it either happens whole or not at all. Claiming leases rows so
    that concurrent ticks never hold the same row; writing back succeeds only while the lease is
    still held by the same owner.
    """

    @abstractmethod
    def add(self, reminder: NewReminder, now: int) -> tuple[int, bool]:
        """Insert a reminder with its targets; return (id, created).

        With a key that already exists nothing is written and (existing id, False) is returned.
        """

    @abstractmethod
    def claim_due(
        self, now: int, limit: int, max_errors: int, lease_ms: int, owner: str
    ) -> list[Claimed]:
        """Lease up to `limit` due rows, oldest due first, for `owner` until now + lease_ms.

        Due means next_fire_at <= now, error_count < max_errors, and no live lease.
        """

    @abstractmethod
    def record(self, records: Sequence[DeliveryRecord]) -> None:
        """Append delivery attempts to the ledger; a second `sent` of one target and fire is
        ignored."""

    @abstractmethod
    def write_back(self, owner: str, now: int, items: Sequence[WriteBack]) -> int:
        """Apply write-backs of rows still leased by `owner`; return how many applied."""

    @abstractmethod
    def release(self, owner: str, ids: Sequence[int], now: int) -> int:
        """Drop `owner`'s lease on rows it did not finish, so the next tick takes them."""

    @abstractmethod
    def list_view(self, view: View, now: int, limit: int | None = None) -> list[ReminderView]:
        """List reminders for `inspect`: dead fires, due, pending, or all rows."""

    @abstractmethod
    def deliveries(self, reminder_id: int) -> list[DeliveryRecord]:
        """Return every ledger row of a reminder, oldest first."""

    @abstractmethod
    def get(self, reminder_id: int) -> ReminderView | None:
        """Return one reminder, or None when no row has that id."""

    @abstractmethod
    def close(self) -> None:
        """Release the connection."""
