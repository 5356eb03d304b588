"""The overview's two charts as SVG, drawn on the server: no script, no request elsewhere.

Each is bars on a fixed grid, the largest value labelled, a few time labels under it, and a
<title> and <desc> saying the same in words for a screen reader.
"""

from collections.abc import Sequence
from datetime import datetime
from html import escape

_W, _H, _PAD = 720, 160, 28
_END = ' text-anchor="end"'


def deliveries(per_minute: Sequence[tuple[datetime, int, int]]) -> str:
    """Return deliveries per minute (sent above failed, stacked) over the last day."""
    n = len(per_minute) or 1
    peak = max((s + f for _, s, f in per_minute), default=0)
    top = peak or 1
    step = _W / n
    # A minute is half a unit wide: one busy minute alone would be a hairline.
    w = max(step, 2.0)
    sent, failed = [], []
    for i, (_, s, f) in enumerate(per_minute):
        x = min(i * step, _W - w)
        hs, hf = _height(s, top), _height(f, top)
        if f:
            failed.append(f"M{x:.1f} {_H - hf:.1f}h{w:.2f}V{_H}h{-w:.2f}Z")
        if s:
            y = _H - hf - hs
            sent.append(f"M{x:.1f} {y:.1f}h{w:.2f}V{_H - hf:.1f}h{-w:.2f}Z")
    total_s = sum(s for _, s, _f in per_minute)
    total_f = sum(f for _, _s, f in per_minute)
    labels = [(0, per_minute[0][0]), (n // 2, per_minute[n // 2][0]), (n - 1, per_minute[-1][0])]
    desc = f"{total_s} sent and {total_f} failed in the last 24 hours; at most {peak} a minute"
    return _frame(
        "Deliveries per minute, last 24 h",
        desc,
        peak,
        f'<path class="sent" d="{"".join(sent)}"/><path class="failed" d="{"".join(failed)}"/>',
        [(i * step, at.strftime("%H:%M")) for i, at in labels if per_minute],
        legend=(("sent", "sent"), ("failed", "failed")),
    )


def due(per_hour: Sequence[tuple[datetime, int]]) -> str:
    """Return fires due per hour over the next day."""
    n = len(per_hour) or 1
    peak = max((c for _, c in per_hour), default=0)
    top = peak or 1
    step = _W / n
    bars = []
    for i, (_, c) in enumerate(per_hour):
        if c:
            h = _height(c, top)
            bars.append(f"M{i * step + 1:.1f} {_H - h:.1f}h{step - 2:.2f}V{_H}h{2 - step:.2f}Z")
    total = sum(c for _, c in per_hour)
    desc = f"{total} fires due in the next 24 hours; at most {peak} in one hour"
    return _frame(
        "Fires due per hour, next 24 h",
        desc,
        peak,
        f'<path class="due" d="{"".join(bars)}"/>',
        [(i * step, at.strftime("%H:%M")) for i, (at, _) in enumerate(per_hour) if i % 4 == 0],
        legend=(("due", "due"),),
    )


def _height(value: int, top: int) -> float:
    return value / top * (_H - 10)


def _frame(
    title: str,
    desc: str,
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
        f'viewBox="-{_PAD} -{_PAD} {_W + 2 * _PAD} {_H + 2 * _PAD}" aria-label="{escape(title)}">'
        f"<title>{escape(title)}</title><desc>{escape(desc)}</desc>"
        f'<text x="0" y="-9" class="label">{escape(title)} (max {top})</text>{keys}'
        f'<line x1="0" y1="{_H}" x2="{_W}" y2="{_H}" class="axis"/>'
        f"{body}{labels}</svg>"
    )
