"""The overview's two charts as SVG, drawn on the server: no script, no request elsewhere.

Each is bars on a fixed grid with a scale: a y axis from 0 to a round number at or above the
largest bar, with gridlines and their values, and time labels (UTC) under it; a <title> and a
<desc> say the same in words for a screen reader. Deliveries come per minute (1,440 of them in a
day) but are drawn per BUCKET_MINUTES: a minute is half a pixel at this width, so a burst in one
minute would be a hairline; in a bucket of ten it is a bar five pixels wide.
"""

from collections.abc import Sequence
from datetime import datetime
from html import escape

_W, _H, _PAD, _LEFT = 720, 160, 28, 44
_END = ' text-anchor="end"'
# Minutes a bar of the deliveries chart adds up: 144 bars of 5 px over a day.
BUCKET_MINUTES = 10


def buckets(
    per_minute: Sequence[tuple[datetime, int, int]], size: int = BUCKET_MINUTES
) -> list[tuple[datetime, int, int]]:
    """Return the minutes added up `size` at a time: (first minute, sent, failed) each."""
    found = []
    for i in range(0, len(per_minute), size):
        part = per_minute[i : i + size]
        found.append((part[0][0], sum(s for _, s, _f in part), sum(f for _, _s, f in part)))
    return found


def deliveries(per_minute: Sequence[tuple[datetime, int, int]], newest_only: bool = False) -> str:
    """Return deliveries (sent above failed, stacked) per BUCKET_MINUTES over the last day;
    `newest_only`: the ledger was read newest first up to a cap, so the day holds more."""
    bars = buckets(per_minute)
    n = len(bars) or 1
    peak = max((s + f for _, s, f in bars), default=0)
    top = nice(peak)
    step = _W / n
    sent, failed = [], []
    for i, (_, s, f) in enumerate(bars):
        x, w = i * step + 0.5, max(step - 1, 1.0)
        hs, hf = _height(s, top), _height(f, top)
        if f:
            failed.append(f"M{x:.1f} {_H - hf:.1f}h{w:.2f}V{_H}h{-w:.2f}Z")
        if s:
            y = _H - hf - hs
            sent.append(f"M{x:.1f} {y:.1f}h{w:.2f}V{_H - hf:.1f}h{-w:.2f}Z")
    total_s = sum(s for _, s, _f in bars)
    total_f = sum(f for _, _s, f in bars)
    desc = (
        f"{total_s} sent and {total_f} failed in the last 24 hours; "
        f"at most {peak} in {BUCKET_MINUTES} minutes"
    )
    title = f"Deliveries per {BUCKET_MINUTES} minutes, last 24 h"
    if newest_only:
        desc = (
            f"the newest {total_s + total_f} deliveries of the last 24 hours (counting stops there)"
        )
        title = f"Deliveries per {BUCKET_MINUTES} minutes, the newest {total_s + total_f:,} of 24 h"
    every = max(1, round(n / 8))  # a label every 3 hours
    return _frame(
        title,
        desc,
        peak,
        top,
        f'<path class="sent" d="{"".join(sent)}"/><path class="failed" d="{"".join(failed)}"/>',
        [(i * step, at.strftime("%H:%M")) for i, (at, _, _f) in enumerate(bars) if i % every == 0],
        legend=(("sent", "sent"), ("failed", "failed")),
    )


def due(per_hour: Sequence[tuple[datetime, int]], at_least: Sequence[datetime] = ()) -> str:
    """Return fires due per hour over the next day; the hours in `at_least` stopped counting at
    their cap and are drawn apart, as lower bounds."""
    n = len(per_hour) or 1
    peak = max((c for _, c in per_hour), default=0)
    top = nice(peak)
    step = _W / n
    exact: list[str] = []
    capped: list[str] = []
    for i, (at, c) in enumerate(per_hour):
        if c:
            h = _height(c, top)
            bar = f"M{i * step + 1:.1f} {_H - h:.1f}h{step - 2:.2f}V{_H}h{2 - step:.2f}Z"
            (capped if at in at_least else exact).append(bar)
    total = sum(c for _, c in per_hour)
    desc = f"{total} fires due in the next 24 hours; at most {peak} in one hour"
    legend: tuple[tuple[str, str], ...] = (("due", "due"),)
    title = "Fires due per hour, next 24 h"
    if capped:
        title += f", counted to {peak:,}"
        desc = (
            f"at least {total} fires due in the next 24 hours; {len(capped)} of the hours hold "
            f"more than the {peak} counted in each (counting an hour stops there)"
        )
        legend += (("due capped", f"{peak:,}+"),)
    return _frame(
        title,
        desc,
        peak,
        top,
        f'<path class="due" d="{"".join(exact)}"/>'
        + (f'<path class="due capped" d="{"".join(capped)}"/>' if capped else ""),
        [(i * step, at.strftime("%H:%M")) for i, (at, _) in enumerate(per_hour) if i % 3 == 0],
        legend=legend,
    )


def nice(peak: int) -> int:
    """Return the top of the scale: the smallest of 1, 2, 2.5, 5 times a power of ten at or
    above `peak` (at least 1), so its half and quarters are round numbers too."""
    if peak <= 1:
        return 1
    power = 1
    while True:
        for m in (1, 2, 5, 10):
            if m * power >= peak:
                return m * power
        power *= 10


def _height(value: int, top: int) -> float:
    return value / top * _H


def _scale(top: int) -> str:
    """Return the y axis: gridlines at 0, half and the top, each with its value."""
    out = []
    for v in (0.0, top / 2, float(top)):
        y = _H - v / top * _H
        out.append(
            f'<line x1="0" y1="{y:.1f}" x2="{_W}" y2="{y:.1f}" class="grid"/>'
            f'<text x="-6" y="{y + 4:.1f}" class="tick"{_END}>{v:g}</text>'
        )
    return "".join(out)


def _frame(
    title: str,
    desc: str,
    peak: int,
    top: int,
    body: str,
    ticks: list[tuple[float, str]],
    legend: tuple[tuple[str, str], ...],
) -> str:
    # The last label ends at the right edge instead of running past it.
    labels = "".join(
        f'<text x="{x:.0f}" y="{_H + 16}" class="tick"{_END if x >= _W - 40 else ""}>'
        f"{escape(text)}</text>"
        for x, text in ticks
    )
    keys = "".join(
        f'<rect x="{_W - 140 + i * 70}" y="-18" width="10" height="10" class="{cls}"/>'
        f'<text x="{_W - 126 + i * 70}" y="-9" class="tick">{escape(name)}</text>'
        for i, (cls, name) in enumerate(legend)
    )
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" role="img" class="chart" '
        f'viewBox="-{_LEFT} -{_PAD} {_W + _LEFT + _PAD} {_H + 2 * _PAD}" '
        f'aria-label="{escape(title)}">'
        f"<title>{escape(title)}</title><desc>{escape(desc)}</desc>"
        f'<text x="0" y="-9" class="label">{escape(title)} (max {peak}; times UTC)</text>{keys}'
        f"{_scale(top)}"
        f'<line x1="0" y1="{_H}" x2="{_W}" y2="{_H}" class="axis"/>'
        f"{body}{labels}</svg>"
    )
