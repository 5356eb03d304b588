"""Plain-text tables the way `gh` prints them: one line per row on a terminal, tab-separated in a
pipe.

On a terminal each row is one line that fits its width: the widest shortenable cells (subjects,
addresses, errors) are cut with an ellipsis first, never ids, states or times; when even that does
not fit, the least useful columns are left out and a last line says which (`--wide` shows every
column, uncut). In a pipe (stdout not a terminal) cells are separated by one tab, whole, for `cut
-f` and `awk -F'\\t'`. No box drawing and no trailing padding.
"""

import os
import shutil
import sys
import unicodedata
from collections.abc import Collection, Sequence
from dataclasses import dataclass

GAP = "  "
# A shortened column keeps at least this many places (an ellipsis and a few characters that still
# say what it was); a column that cannot get them is left out instead.
NARROWEST = 14
# Room a shortenable column keeps before a column that `keep` does not name is shown at all.
COMFORTABLE = 24
FORCE_TTY = "DUEQUEUE_FORCE_TTY"


def terminal_width() -> int | None:
    """Return the width to fit tables to on a terminal, or None in a pipe (tab-separated).

    DUEQUEUE_FORCE_TTY (as gh's GH_FORCE_TTY) makes a pipe print as a terminal would: a number
    of 20 or more is the width; any other value (1, yes) means COLUMNS or 80.
    """
    columns = os.environ.get("COLUMNS", "")
    from_columns = int(columns) if columns.isdigit() and int(columns) > 0 else None
    forced = os.environ.get(FORCE_TTY, "")
    if forced:
        return int(forced) if forced.isdigit() and int(forced) >= 20 else from_columns or 80
    if sys.stdout.isatty():
        return from_columns or shutil.get_terminal_size().columns
    return None


def table_width(wide: bool) -> int | None:
    """Return the width a command fits its tables to; with --wide, wide enough for anything."""
    width = terminal_width()
    return sys.maxsize if wide and width is not None else width


@dataclass(frozen=True)
class Table:
    """A rendered table and the columns a narrow terminal left out."""

    text: str
    left_out: tuple[str, ...] = ()

    def with_note(self) -> str:
        """Return the text, with a last line naming the columns left out, if any."""
        if not self.left_out:
            return self.text
        names = ", ".join(self.left_out)
        n = len(self.left_out)
        columns = "1 column" if n == 1 else f"{n} columns"
        return (
            f"{self.text}\n({columns} left out: {names}; --wide shows {'it' if n == 1 else 'them'})"
        )


def render(
    headers: Sequence[str],
    rows: Sequence[Sequence[str]],
    width: int | None,
    shorten: Collection[str] = (),
    keep: Sequence[str] = (),
    cut_last: Collection[str] = (),
) -> Table:
    """Return the table: tab-separated without a width, else one line per row fitted to it.

    `shorten` names the free-text columns that may be cut with an ellipsis; `keep` orders the
    columns from most to least useful (unnamed ones last, in table order, and empty ones after
    those): at a width too narrow for all of them, the least useful go first. Ids, states and
    times are never cut. `cut_last` names the shortenable columns that keep their room until
    the others are down to NARROWEST (an error's reason says more than a repeated address).
    """
    cells = [[_flat(c) for c in row] for row in rows]
    if width is None:
        return Table("\n".join("\t".join(row) for row in [list(headers), *cells]))
    natural = [max([_len(h), *(_len(row[i]) for row in cells)]) for i, h in enumerate(headers)]
    cuttable = {i for i, h in enumerate(headers) if h in shorten}
    empty = {i for i in range(len(headers)) if all(row[i] in ("", "-") for row in cells)}
    rank = [headers.index(h) for h in keep if h in headers]
    rank += [i for i in range(len(headers)) if i not in rank]
    # A column with nothing to say in any row (no errors yet) gives way first.
    rank.sort(key=lambda i: i in empty)
    named = [h for h in keep if h in headers] or headers  # no `keep`: every column counts
    essential = {headers.index(h) for h in named} - empty
    shown = _columns_that_fit(natural, cuttable, rank, width, essential, empty)
    widths = {i: natural[i] for i in shown}
    room = width - len(GAP) * (len(shown) - 1)
    while sum(widths.values()) > room:
        candidates = [i for i in shown if i in cuttable and widths[i] > NARROWEST]
        first = [i for i in candidates if headers[i] not in cut_last]
        candidates = first or candidates
        if not candidates:
            break
        widths[max(candidates, key=lambda i: (widths[i], i))] -= 1
    ellipsis = _ellipsis()
    lines = []
    for row in [list(headers), *cells]:
        parts = [_cut(row[i], widths[i], ellipsis) for i in shown]
        padded = [p + " " * (widths[i] - _len(p)) for p, i in zip(parts, shown, strict=True)]
        lines.append(GAP.join(padded).rstrip())
    left_out = tuple(headers[i] for i in range(len(headers)) if i not in shown)
    return Table("\n".join(lines), left_out)


def _columns_that_fit(
    natural: Sequence[int],
    cuttable: Collection[int],
    rank: Sequence[int],
    width: int,
    essential: Collection[int],
    empty: Collection[int],
) -> list[int]:
    """Return the columns, in table order, that fit `width`, the most useful first.

    An essential column (one `keep` names) goes in while the shortenable columns can keep
    NARROWEST places; any other only while they all keep COMFORTABLE ones: a rule or a count
    never squeezes an address or an error down to a stub; a column empty in every row only
    while nothing needs shortening. The first column always goes in.
    """
    shown: list[int] = []
    for i in rank:
        floor = NARROWEST if i in essential else COMFORTABLE
        floor = max(natural) if i in empty else floor
        need = sum(
            min(natural[j], floor) if j in cuttable else natural[j] for j in [*shown, i]
        ) + len(GAP) * len(shown)
        if not shown or need <= width:
            shown.append(i)
    return sorted(shown)


def fit(line: str, width: int | None) -> str:
    """Return one line of text within `width` columns (cut with an ellipsis), or whole (None)."""
    return line if width is None else _cut(line, width, _ellipsis())


def _cut(cell: str, width: int, ellipsis: str) -> str:
    """Return `cell` within `width` display columns, ending in an ellipsis if it was cut."""
    if _len(cell) <= width:
        return cell
    room = width - _len(ellipsis)
    out = ""
    for ch in cell:
        if _len(out + ch) > room:
            break
        out += ch
    return out + ellipsis


def _ellipsis() -> str:
    """Return "…" where the output charset has it, else "..."."""
    try:
        "…".encode(sys.stdout.encoding or "ascii")
    except (UnicodeEncodeError, LookupError):
        return "..."
    return "…"


def _len(text: str) -> int:
    """Return the columns `text` takes on a terminal: East Asian wide characters take two."""
    if text.isascii():
        return len(text)
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def _flat(cell: str) -> str:
    # One line per cell: a subject's tab or newline would break the columns (and a tab the TSV).
    return " ".join(cell.split())
