"""Bulk cancel and bulk retry on a filter (a state of the list and a search), for the API and
the dashboard alike: the reminders the filter matches, at most MAX in one go, read with
`Queue.browse` a page at a time and changed with one `Queue.cancel` or `Queue.retry` call.

What the confirmation counted and what the change finds may differ (a tick ran in between): the
change re-reads the filter, and its result says what it did to each reminder."""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, get_args

from duequeue.api.queue import Queue
from duequeue.api.results import Change
from duequeue.errors import BadInputError

# One transaction changes at most this many reminders; the rest wait for another go.
MAX = 10_000
_PAGE = 1000
Verb = Literal["cancel", "retry"]
STATES = ("all", "pending", "due", "retrying", "paused", "dead", "done", "cancelled")


@dataclass(frozen=True, slots=True)
class Filter:
    """The list's filter: a state and a search (None: everything in that state)."""

    state: str = "all"
    search: str | None = None

    def __post_init__(self) -> None:
        if self.state not in STATES:
            raise BadInputError(
                f"{self.state[:32]!r} is not one of {', '.join(STATES)}", field="state"
            )


@dataclass(frozen=True, slots=True)
class Matched:
    """The ids a filter matched (newest first, at most MAX), and whether more matched."""

    ids: tuple[int, ...]
    more: bool


def matching(q: Queue, f: Filter) -> Matched:
    """Return the reminders `f` matches now, at most MAX."""
    ids: list[int] = []
    before = None
    while len(ids) <= MAX:
        found = q.browse(f.state, search=f.search, before=before, limit=_PAGE)  # type: ignore[arg-type]
        ids += [r.id for r in found.reminders]
        before = found.next_before
        if before is None:
            break
    return Matched(tuple(ids[:MAX]), len(ids) > MAX)


def apply(q: Queue, verb: Verb, f: Filter) -> tuple[Matched, list[Change]]:
    """Cancel or retry what `f` matches now; return the match and what each change did."""
    found = matching(q, f)
    if not found.ids:
        return found, []
    act: Callable[..., list[Change]] = q.cancel if verb == "cancel" else q.retry
    return found, act(*found.ids)


def verb_of(text: Any) -> Verb:
    """Return a bulk verb, or raise BadInputError."""
    if text not in get_args(Verb):
        raise BadInputError("expected cancel or retry", field="action")
    verb: Verb = text
    return verb
