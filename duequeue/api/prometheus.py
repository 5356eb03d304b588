"""`stats` as a Prometheus textfile (the node_exporter format), written atomically."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from duequeue.errors import BadInputError, DuequeueError

if TYPE_CHECKING:
    from duequeue.api.results import Stats


def text(s: Stats) -> str:
    """Return the node_exporter textfile format of `stats`, every metric with HELP and TYPE."""
    lateness = s.oldest_due_lateness
    late = 0.0 if lateness is None else round(lateness.total_seconds(), 3)
    metrics: list[tuple[str, str, list[tuple[str, float]]]] = [
        (
            "duequeue_reminders",
            "Reminders by state.",
            [
                ('{state="pending"}', s.pending),
                ('{state="done"}', s.done),
                ('{state="dead"}', s.dead),
                ('{state="cancelled"}', s.cancelled),
                ('{state="paused"}', s.paused),
            ],
        ),
        (
            "duequeue_queue_paused",
            "1 while the whole queue is paused (`duequeue pause`): ticks deliver nothing.",
            [("", 0 if s.queue_paused_since is None else 1)],
        ),
        ("duequeue_due_reminders", "Pending reminders due now, waiting for a tick.", [("", s.due)]),
        (
            "duequeue_retrying_reminders",
            "Pending reminders backing off after failed attempts.",
            [("", s.retrying)],
        ),
        ("duequeue_leased_reminders", "Reminders a tick holds right now.", [("", s.leased)]),
        (
            "duequeue_dead_letters",
            "Dead-lettered fires awaiting retry (what inspect --dead lists).",
            [("", s.dead_letters)],
        ),
        (
            "duequeue_dead_reminders",
            "Reminders with a dead letter awaiting retry, whatever their state.",
            [("", s.dead_reminders)],
        ),
        (
            "duequeue_retrying_targets",
            "Failed targets of a partial success retrying their fire on their own.",
            [("", s.retrying_targets)],
        ),
        (
            "duequeue_disabled_targets",
            "Targets switched off after their endpoint answered 410 Gone.",
            [("", s.disabled_targets)],
        ),
        (
            "duequeue_oldest_due_lateness_seconds",
            "How long the oldest due reminder has waited for a tick (0 when none is due).",
            [("", late)],
        ),
        (
            "duequeue_deliveries_last_hour",
            "Delivery attempts recorded in the last hour, by outcome.",
            [('{outcome="sent"}', s.sent_last_hour), ('{outcome="failed"}', s.failed_last_hour)],
        ),
        (
            "duequeue_deliveries_last_day",
            "Delivery attempts recorded in the last 24 hours, by outcome.",
            [('{outcome="sent"}', s.sent_last_day), ('{outcome="failed"}', s.failed_last_day)],
        ),
        (
            "duequeue_last_successful_tick_timestamp_seconds",
            "When the last tick that ended without error started (unix seconds; 0: never); "
            "alert when it is minutes old.",
            [("", 0 if s.last_successful_tick is None else s.last_successful_tick.timestamp())],
        ),
        (
            "duequeue_stats_timestamp_seconds",
            "When these figures were taken (unix seconds); alert when it stops moving.",
            [("", s.at.timestamp())],
        ),
    ]
    out = []
    for name, help_text, samples in metrics:
        out.append(f"# HELP {name} {help_text}")
        out.append(f"# TYPE {name} gauge")
        out.extend(f"{name}{labels} {_number(value)}" for labels, value in samples)
    return "\n".join(out) + "\n"


def _number(value: float) -> str:
    # Counts print as integers; repr keeps every digit of a float (a unix timestamp too).
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def write_atomically(path: Path, text: str) -> None:
    """Replace `path` with `text` so a reader (node_exporter) never sees half a file."""
    directory = path.parent
    if not directory.is_dir():
        raise BadInputError(f"directory {directory} does not exist", field="prometheus")
    try:
        # Same directory, so os.replace is a rename within one filesystem; the name does not end
        # in .prom, so the textfile collector ignores it until the rename.
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    except OSError as exc:
        raise DuequeueError(f"cannot write in {directory}: {exc}", field="prometheus") from exc
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)  # node_exporter usually runs as another user
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise DuequeueError(f"cannot write {path}: {exc}", field="prometheus") from exc
