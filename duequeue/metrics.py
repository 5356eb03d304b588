"""Render `stats` as stable JSON and as a Prometheus textfile, written atomically."""

import contextlib
import os
import tempfile
from pathlib import Path
from typing import Any

from duequeue.errors import BadInputError, DuequeueError
from duequeue.store.base import Stats
from duequeue.timefmt import iso


def oldest_due_lateness_s(s: Stats, now: int) -> float | None:
    """Return how long the oldest due row has waited for a tick, or None when nothing is due."""
    return None if s.oldest_due_at is None else round((now - s.oldest_due_at) / 1000, 3)


def stats_json(s: Stats, now: int) -> dict[str, Any]:
    """Return the stable JSON object of `stats` (README documents every key)."""
    return {
        "at": iso(now),
        "reminders": {
            "pending": s.pending,
            "done": s.done,
            "dead": s.dead,
            "cancelled": s.cancelled,
        },
        "due": s.due,
        "retrying": s.retrying,
        "leased": s.leased,
        "dead_letters": s.dead_letters,
        "retrying_targets": s.retrying_targets,
        "disabled_targets": s.disabled_targets,
        "oldest_due_lateness_s": oldest_due_lateness_s(s, now),
        "deliveries": {
            "last_hour": {"sent": s.sent_last_hour, "failed": s.failed_last_hour},
            "last_day": {"sent": s.sent_last_day, "failed": s.failed_last_day},
        },
    }


def stats_lines(s: Stats, now: int) -> list[str]:
    """Return `stats` for people, one fact a line."""
    late = oldest_due_lateness_s(s, now)
    return [
        f"reminders: {s.pending} pending, {s.done} done, {s.dead} dead, {s.cancelled} cancelled",
        f"due now: {s.due} (oldest waiting {'-' if late is None else f'{late:.1f}s'}); "
        f"retrying: {s.retrying}; leased by a tick: {s.leased}",
        f"dead letters awaiting retry: {s.dead_letters}",
        f"targets retrying a fire on their own: {s.retrying_targets}; "
        f"disabled (410 Gone): {s.disabled_targets}",
        f"deliveries, last hour: {s.sent_last_hour} sent, {s.failed_last_hour} failed; "
        f"last day: {s.sent_last_day} sent, {s.failed_last_day} failed",
    ]


def prometheus_text(s: Stats, now: int) -> str:
    """Return the node_exporter textfile format of `stats`, every metric with HELP and TYPE."""
    late = oldest_due_lateness_s(s, now) or 0.0
    metrics: list[tuple[str, str, list[tuple[str, float]]]] = [
        (
            "duequeue_reminders",
            "Reminders by state.",
            [
                ('{state="pending"}', s.pending),
                ('{state="done"}', s.done),
                ('{state="dead"}', s.dead),
                ('{state="cancelled"}', s.cancelled),
            ],
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
            "duequeue_stats_timestamp_seconds",
            "When these figures were taken (unix seconds); alert when it stops moving.",
            [("", now / 1000)],
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
        raise BadInputError(f"--prometheus: directory {directory} does not exist")
    try:
        # Same directory, so os.replace is a rename within one filesystem; the name does not end
        # in .prom, so the textfile collector ignores it until the rename.
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    except OSError as exc:
        raise DuequeueError(f"--prometheus: cannot write in {directory}: {exc}") from exc
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
        raise DuequeueError(f"--prometheus: cannot write {path}: {exc}") from exc
