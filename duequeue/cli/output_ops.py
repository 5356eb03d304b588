"""Render the operator's results (history, changes, stats, prune, doctor, config) for people and
as the stable JSON docs/reference.md documents, from the public types of duequeue.results
(history's and stats' JSON is api/jsonforms.py's, the API's own)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from duequeue.cli import table
from duequeue.cli.instants import iso, seconds
from duequeue.cli.output import reason_first, target_text
from duequeue.cli.report import setting_source

if TYPE_CHECKING:
    from datetime import datetime, timedelta

    from duequeue.api.results import (
        Change,
        ConfigReport,
        DoctorReport,
        History,
        PruneCounts,
        QueuePause,
        Recomputed,
        Reminder,
        Stats,
    )


def history_text(h: History, width: int | None) -> str:
    """Return `history` as a heading and tables: one line a row fitted to `width`, or
    tab-separated (None)."""
    r = h.reminder

    def when(at: datetime | None, empty: str = "") -> str:
        # A terminal gets instants to the second (milliseconds cost a column four places);
        # a pipe gets them whole.
        stamp = iso(at)
        return empty if stamp is None else stamp if width is None else stamp[:19] + "Z"

    parts = [
        f"reminder {r.id} {r.subject!r}: {r.status}; next fire {iso(r.next_fire_at) or '-'}",
        *sends_text(r, width),
    ]
    if h.attempts:
        rows = [
            (
                when(a.at),
                when(a.fire_at),
                target_text(a.target),
                a.outcome,
                str(a.attempt),
                a.error or "",
            )
            for a in h.attempts
        ]
        columns = ("at", "fire", "target", "outcome", "attempt", "error")
        parts += [
            "",
            "attempts",
            table.render(
                columns,
                rows,
                width,
                shorten=("target", "error"),
                keep=("at", "target", "outcome", "error"),
            ).with_note(),
        ]
    else:
        parts.append("no delivery attempts yet")
    if h.dead_letters:
        dead = [
            (
                when(d.fire_at),
                when(d.dead_at),
                str(d.error_count),
                reason_first(d.last_error, r.targets),
                when(d.retried_at, "-"),
            )
            for d in h.dead_letters
        ]
        headers = ("fire", "died", "errors", "last error", "retried")
        parts += [
            "",
            "dead letters",
            table.render(
                headers, dead, width, shorten=("last error",), keep=("fire", "last error")
            ).with_note(),
        ]
    if h.target_retries:
        retrying = [
            (
                when(t.fire_at),
                target_text(t.target),
                str(t.error_count),
                when(t.next_try_at),
                reason_first(t.last_error, () if t.target is None else (t.target,)),
            )
            for t in h.target_retries
        ]
        headers = ("fire", "target", "errors", "next try", "last error")
        parts += [
            "",
            "target retries (of a partial success)",
            table.render(
                headers,
                retrying,
                width,
                shorten=("target", "last error"),
                keep=("fire", "target", "next try", "last error"),
            ).with_note(),
        ]
    if h.changes:
        # One line each, time first: a change is a sentence, not columns.
        parts += ["", "changes (reschedule, edit)"]
        parts += [f"{iso(c.at)}  {c.what}" for c in h.changes]
    if h.moved_fires:
        moved: list[tuple[str, ...]] = [
            (
                iso(m.old_fire_at) or "",
                iso(m.new_fire_at) or "",
                f"{m.old_release} -> {m.new_release}",
                iso(m.moved_at) or "",
            )
            for m in h.moved_fires
        ]
        shown = ("fire", "moved to", "tz data", "moved at")
        moves = table.render(shown, moved, width).with_note()
        parts += ["", "fires moved by zone rules changes", moves]
    return "\n".join(parts)


def sends_text(r: Reminder, width: int | None) -> list[str]:
    """Return what a reminder sends, a labelled line each (a body's own lines indented under
    it), its data as compact JSON, secrets masked; each line cut to `width` on a terminal."""
    data = "-" if r.data is None else json.dumps(r.data, ensure_ascii=False)
    body = r.body.splitlines() or ["-"]
    lines = [
        "sends",
        f"  subject  {r.subject}",
        f"  body     {body[0]}",
        *(f"           {more}" for more in body[1:]),
        f"  data     {data}",
        f"  to       {', '.join(target_text(t) for t in r.targets) or '-'}",
    ]
    return [table.fit(line, width) for line in lines]


def changes_json(changes: Sequence[Change], verb: str) -> dict[str, Any]:
    """Return the JSON of `retry`, `cancel`, `enable`, `pause` or `resume`: `verb` is
    "retried", "cancelled", "enabled", "paused" or "resumed"; a retried or resumed reminder
    names its pending fire (the dead fire re-armed, the fire that is due again)."""
    applied: list[Any] = [
        {"id": c.reminder_id, "fire_at": iso(c.fire_at)}
        if verb in ("retried", "resumed")
        else c.reminder_id
        for c in changes
        if c.applied
    ]
    skipped = [{"id": c.reminder_id, "reason": c.skipped} for c in changes if not c.applied]
    return {verb: applied, "skipped": skipped}


def changes_text(changes: Sequence[Change], verb: str) -> str:
    """Return a line per reminder changed or skipped, then the counts."""
    done = [c for c in changes if c.applied]
    skipped = [c for c in changes if not c.applied]
    lines = [
        f"{verb} {c.reminder_id}"
        + (
            f" (next fire {iso(c.fire_at)})"
            if c.fire_at is not None and verb == "resumed"
            else f" (fire {iso(c.fire_at)} is due now)"
            if c.fire_at is not None
            else ""
        )
        for c in done
    ]
    lines += [f"skipped {c.reminder_id}: {c.skipped}" for c in skipped]
    lines.append(f"{verb} {len(done)}, skipped {len(skipped)}")
    return "\n".join(lines)


def queue_pause_json(p: QueuePause) -> dict[str, Any]:
    """Return the JSON of `pause` and `resume` without ids: the whole queue's pause."""
    return {"paused": p.paused, "since": iso(p.since), "changed": p.changed}


def queue_pause_text(p: QueuePause) -> str:
    """Return the line of `pause` and `resume` without ids."""
    if p.paused:
        verb = "paused" if p.changed else "already paused"
        return f"queue {verb} since {iso(p.since)}: ticks deliver nothing until `duequeue resume`"
    if p.changed:
        return f"queue resumed (paused since {iso(p.since)})"
    return "queue was not paused; nothing changed"


def stats_text(s: Stats) -> str:
    """Return `stats` for people, one fact a line."""
    late = seconds(s.oldest_due_lateness)
    paused = (
        [
            f"queue PAUSED since {iso(s.queue_paused_since)}: "
            "ticks deliver nothing (`duequeue resume`)"
        ]
        if s.queue_paused_since is not None
        else []
    )
    return "\n".join(
        [
            *paused,
            f"reminders: {s.pending} pending, {s.done} done, {s.dead} dead, "
            f"{s.cancelled} cancelled, {s.paused} paused",
            f"due now: {s.due} (oldest waiting {'-' if late is None else f'{late:.1f}s'}); "
            f"retrying: {s.retrying}; leased by a tick: {s.leased}",
            f"dead letters awaiting retry: {s.dead_letters} "
            f"(on {s.dead_reminders} reminder{'' if s.dead_reminders == 1 else 's'})",
            f"targets retrying a fire on their own: {s.retrying_targets}; "
            f"disabled (410 Gone): {s.disabled_targets}",
            f"deliveries, last hour: {s.sent_last_hour} sent, {s.failed_last_hour} failed; "
            f"last day: {s.sent_last_day} sent, {s.failed_last_day} failed",
            "last successful tick: "
            + (
                "never"
                if s.last_successful_tick is None
                else f"{iso(s.last_successful_tick)} "
                f"({seconds(s.at - s.last_successful_tick):.0f}s ago)"
            ),
            *_hosts_lines(s),
            f"fires moved by zone rules changes: {s.moved_fires}",
        ]
    )


def _hosts_lines(s: Stats) -> list[str]:
    if not s.hosts:
        return []
    seen = [
        f"{h.host} {_ago(s.at - h.last_tick)} ago (clock {h.clock_offset.total_seconds():+.3f}s)"
        for h in s.hosts
    ]
    return [f"hosts ticking, last day: {', '.join(seen)}"]


def _ago(span: timedelta) -> str:
    secs = max(0, round(span.total_seconds()))
    return f"{secs}s" if secs < 120 else f"{secs // 60}m" if secs < 7200 else f"{secs // 3600}h"


def recomputed_json(r: Recomputed) -> dict[str, Any]:
    """Return the stable JSON object of `recompute`."""
    return {
        "release": r.release,
        "dry_run": r.dry_run,
        "checked": r.checked,
        "moved": r.moved,
        "moves": [
            {
                "id": m.reminder_id,
                "old_fire_at": iso(m.old_fire_at),
                "new_fire_at": iso(m.new_fire_at),
                "old_release": m.old_release,
            }
            for m in r.moves
        ],
    }


def recomputed_text(r: Recomputed) -> str:
    """Return a line per moved fire, then the counts."""
    lines = [
        f"{m.reminder_id}: {iso(m.old_fire_at)} ({m.old_release}) -> {iso(m.new_fire_at)}"
        for m in r.moves
    ]
    if r.moved > len(r.moves):
        lines.append(f"... and {r.moved - len(r.moves)} more")
    verb = "would move" if r.dry_run else "moved"
    lines.append(
        f"{verb} {r.moved} of {r.checked} pending fires computed by tz data older than {r.release}"
    )
    return "\n".join(lines)


def prune_json(c: PruneCounts) -> dict[str, Any]:
    """Return the stable JSON object of `prune`."""
    return {
        "dry_run": c.dry_run,
        "before": iso(c.before),
        "deliveries": c.deliveries,
        "done": c.done,
        "cancelled": c.cancelled,
        "dead_letters": c.dead_letters,
    }


def prune_text(c: PruneCounts) -> str:
    """Return what `prune` removed, or would remove, in one line."""
    return (
        f"{'would prune' if c.dry_run else 'pruned'}: {c.deliveries} ledger rows, {c.done} done "
        f"reminders, {c.cancelled} cancelled reminders, {c.dead_letters} dead letters"
    )


def doctor_json(report: DoctorReport) -> dict[str, Any]:
    """Return the JSON object of `doctor`."""
    return {
        "ok": report.ok,
        "checks": [
            {"name": c.name, "ok": c.ok, "warning": c.warning, "detail": c.detail, "fix": c.fix}
            for c in report.checks
        ],
    }


def doctor_text(report: DoctorReport) -> str:
    """Return a line per check (and a fix line under a problem), then the verdict."""
    lines = []
    for c in report.checks:
        label = "PROBLEM" if not c.ok else "warning" if c.warning else "ok     "
        lines.append(f"{label}  {c.name}: {c.detail}")
        if c.fix:
            lines.append(f"         fix: {c.fix}")
    warnings = sum(c.warning for c in report.checks)
    verdict = "all checks passed" if report.ok else "some checks found problems"
    lines.append(verdict + (f" ({warnings} warning{'s' * (warnings > 1)})" if warnings else ""))
    return "\n".join(lines)


def config_text(report: ConfigReport) -> str:
    """Return the effective settings as TOML lines, each with where its value came from."""
    state = "read" if report.config_file_read else "not found, none read"
    lines = [f"# config file: {report.config_file} ({state})", f"# tz data: {report.tz_data}"]
    for name, value in report.settings.items():
        source = setting_source(name, report.sources[name])
        lines.append(f"{name} = {json.dumps(value)}  # {source}")
    return "\n".join(lines)
