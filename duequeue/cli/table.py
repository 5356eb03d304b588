"""Plain-text tables: columns aligned by spaces, wrapped to fit a terminal's width.

No box drawing and no trailing padding, as `kubectl get` prints: the same text reads well on a
terminal, greps and cuts cleanly in a pipe, and encodes in any charset the subjects fit.
"""

import os
import shutil
import sys
import textwrap
import unicodedata
from collections.abc import Collection, Iterable, Sequence

GAP = "  "
NARROWEST = 6  # a text column is not wrapped narrower than this before the others give way


def terminal_width() -> int | None:
    """Return the width to fit tables to: COLUMNS if set, the terminal's, or None in a pipe."""
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    if sys.stdout.isatty():
        return shutil.get_terminal_size().columns
    return None  # a pipe or a file: one line per row, whatever its length


def render(
    headers: Sequence[str],
    rows: Sequence[Sequence[str]],
    width: int | None,
    wrap: Collection[str] = (),
) -> str:
    """Return the table as text; with a width, cells wrap inside their column to fit it.

    The columns named in `wrap` (free text: subjects, addresses, errors) narrow first; ids,
    states and times only when the terminal is too narrow for even that.
    """
    cells = [[_flat(c) for c in row] for row in rows]
    widths = [max([_len(h), *(_len(row[i]) for row in cells)]) for i, h in enumerate(headers)]
    if width is not None:
        room = width - len(GAP) * (len(widths) - 1)
        texts = [i for i, h in enumerate(headers) if h in wrap]
        _narrow(widths, texts, NARROWEST, room)
        _narrow(widths, range(len(widths)), 1, room)
    lines = []
    for row in [list(headers), *cells]:
        wrapped = [_wrap(cell, w) for cell, w in zip(row, widths, strict=True)]
        for n in range(max(len(parts) for parts in wrapped)):
            parts = [p[n] if n < len(p) else "" for p in wrapped]
            line = GAP.join(p + " " * (w - _len(p)) for p, w in zip(parts, widths, strict=True))
            lines.append(line.rstrip())
    return "\n".join(lines)


def _narrow(widths: list[int], columns: Iterable[int], floor: int, room: int) -> None:
    """Take a character at a time from the widest of `columns` until the row fits `room`."""
    candidates = list(columns)
    while sum(widths) > room:
        shrinkable = [i for i in candidates if widths[i] > floor]
        if not shrinkable:
            return
        widths[max(shrinkable, key=lambda i: widths[i])] -= 1


def _wrap(cell: str, width: int) -> list[str]:
    if _len(cell) <= width:
        return [cell]
    if _len(cell) != len(cell):  # wide characters: cut by display width, not by words
        return _cut(cell, width)
    return textwrap.wrap(cell, width, break_on_hyphens=False) or [""]


def _cut(cell: str, width: int) -> list[str]:
    lines, line = [], ""
    for ch in cell:
        if _len(line + ch) > width and line:
            lines.append(line)
            line = ""
        line += ch
    return [*lines, line]


def _len(text: str) -> int:
    """Return the columns `text` takes on a terminal: East Asian wide characters take two."""
    if text.isascii():
        return len(text)
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def _flat(cell: str) -> str:
    # One line per cell: a subject's tab or newline would break the columns.
    return " ".join(cell.split())
