"""The dashboard's HTML: a page frame, tables and forms, every value escaped (html.escape) as it
goes in, so a subject holding `<script>` is shown as text. No script at all: the overview
refreshes itself with a meta refresh, and confirmations are pages of their own."""

from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from html import escape
from urllib.parse import urlencode

from duequeue.api.from_records import on_clock

CSS = """
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0;color:#1d232a;
background:#f6f7f9}
header{background:#1d2b3a;color:#fff;padding:.6em 1.2em;display:flex;gap:1.4em;align-items:center}
header a{color:#dce6f0;text-decoration:none}header a:hover{color:#fff}
header .brand{font-weight:700;color:#fff}header form,header .role{margin-left:auto}
header .role{color:#ffd98a}header .role+form{margin-left:0}
main{padding:1em 1.2em;max-width:1200px}
h1{font-size:1.35em;margin:.3em 0 .7em}h2{font-size:1.1em;margin:1.3em 0 .5em}
table{border-collapse:collapse;background:#fff;width:100%;margin-bottom:1em}
th,td{text-align:left;padding:.35em .6em;border-bottom:1px solid #e3e6ea;vertical-align:top}
th{background:#eef1f4;font-weight:600}
table.facts{max-width:780px}table.facts th{width:45%;background:#fff;font-weight:400;color:#5b6670}
td.num{text-align:right;font-variant-numeric:tabular-nums}
.cards{display:flex;flex-wrap:wrap;gap:.7em;margin-bottom:1em}
.card{background:#fff;border:1px solid #e3e6ea;border-radius:6px;padding:.6em .9em;min-width:9.5em}
.card a{text-decoration:none;color:inherit}
.card .n{font-size:1.6em;font-weight:700;font-variant-numeric:tabular-nums}
.card.bad .n{color:#b42318}.card .l{color:#5b6670;font-size:.9em}
.chart{width:100%;max-width:780px;background:#fff;border:1px solid #e3e6ea;border-radius:6px;
margin:.3em 0 1em;display:block}
.chart .sent{fill:#2e7d32}.chart .failed{fill:#c62828}.chart .due{fill:#1565c0}
.chart .due.capped{fill:#90caf9}
.chart .axis{stroke:#8a949e}.chart .grid{stroke:#e3e6ea}
.chart .tick,.chart .label{font-size:11px;fill:#5b6670}
.chart .label{font-size:12px;fill:#1d232a;font-weight:600}
.state{display:inline-block;padding:0 .45em;border-radius:4px;font-size:.85em;background:#e8edf2}
.state.dead,.state.failed,.state.permanent{background:#fde2e1;color:#8a1c12}
.state.sent,.state.done{background:#dff3e0;color:#1b5e20}
.state.retrying,.state.disabled{background:#fff2cc;color:#7a5200}
.state.cancelled{background:#eceff1;color:#546e7a}
form.inline{display:inline}
button,.button{font:inherit;padding:.3em .9em;border-radius:4px;border:1px solid #1d2b3a;
background:#1d2b3a;color:#fff;cursor:pointer;text-decoration:none;display:inline-block}
.button.secondary,button.secondary{background:#fff;color:#1d2b3a}
button.danger,.button.danger{background:#b42318;border-color:#b42318}
.filters{display:flex;gap:.5em;align-items:center;margin-bottom:.8em;flex-wrap:wrap}
input,select{font:inherit;padding:.25em .4em}
.muted{color:#5b6670}.note{background:#fff;border-left:4px solid #1565c0;padding:.5em .8em}
.error{background:#fff;border-left:4px solid #b42318;padding:.5em .8em}
.pager{display:flex;gap:1em;margin:.5em 0 1em}
.local{color:#1b4f8a;white-space:nowrap}.utc{white-space:nowrap}
.banner{background:#fff2cc;border-left:4px solid #b26a00;padding:.5em .8em;margin-bottom:1em}
.outcome{font-weight:600}.outcome.skipped{color:#7a5200}
form.stack label{display:block;margin:.5em 0}form.stack input,form.stack textarea{width:100%;
max-width:640px;display:block}textarea{font:inherit;padding:.25em .4em}
.actions{display:flex;flex-wrap:wrap;gap:.5em;align-items:center;margin:.5em 0 1em}
code{background:#eef1f4;padding:0 .25em;border-radius:3px}
pre.sends{margin:0;white-space:pre-wrap;overflow-wrap:anywhere;font-size:.95em}
"""


def h(value: object) -> str:
    """Return any value as HTML text (quotes escaped too, so it is safe in an attribute)."""
    return escape("" if value is None else str(value))


def when(at: datetime | None) -> str:
    """Return an instant as the CLI prints it: UTC, to the second."""
    return "" if at is None else at.strftime("%Y-%m-%d %H:%M:%S UTC")


def at(instant: datetime | None, tz: str | None = None) -> str:
    """Return an instant as HTML: UTC, and beside it the same on the clocks of `tz` (the
    reminder's zone), where people live, unless that is UTC."""
    if instant is None:
        return ""
    utc = f'<span class="utc">{h(when(instant))}</span>'
    local = None if tz is None or tz in ("UTC", "Etc/UTC") else on_clock(instant, tz)
    if local is None:
        return utc
    shown = (
        local.strftime("%Y-%m-%d %H:%M:%S")
        if local.date() != instant.date()
        else (local.strftime("%H:%M:%S"))
    )
    return f'{utc} <span class="local">({h(shown)} {h(tz)})</span>'


def span(d: timedelta | None) -> str:
    """Return a span to the second (ms below a second)."""
    if d is None:
        return "none"
    s = d.total_seconds()
    if abs(s) < 1:
        return f"{round(s * 1000)} ms"
    if abs(s) < 120:
        return f"{s:.1f} s"
    if abs(s) < 7200:
        return f"{s / 60:.1f} min"
    return f"{s / 3600:.1f} h"


def url(path: str, **query: object) -> str:
    """Return a path with its query string, the empty values left out."""
    kept = {k: str(v) for k, v in query.items() if v not in (None, "")}
    return path + ("?" + urlencode(kept) if kept else "")


def page(
    title: str,
    body: str,
    *,
    csrf: str | None = None,
    logout: bool = False,
    refresh: int | None = None,
    note: str | None = None,
) -> str:
    """Return a whole page: the frame, its navigation (with `note`, such as read-only, beside
    the logout button) and `body` (already HTML)."""
    meta = f'<meta http-equiv="refresh" content="{refresh}">' if refresh else ""
    out = (
        f'<form method="post" action="/logout">{hidden("csrf", csrf)}'
        f'<button class="secondary" type="submit">Log out</button></form>'
        if logout and csrf
        else ""
    )
    if note:
        out = f'<span class="role" id="role">{h(note)}</span>' + out
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        f"{meta}<title>{h(title)} · duequeue</title>"
        '<link rel="stylesheet" href="/static/style.css"></head><body>'
        '<header><a class="brand" href="/">duequeue</a><a href="/">Overview</a>'
        '<a href="/reminders">Reminders</a><a href="/reminders?state=dead">Dead letters</a>'
        f"{out}</header><main>{body}</main></body></html>"
    )


def hidden(name: str, value: object) -> str:
    """Return a hidden form field."""
    return f'<input type="hidden" name="{h(name)}" value="{h(value)}">'


def table(headers: Sequence[str], rows: Iterable[Sequence[str]], empty: str = "none") -> str:
    """Return a table; each cell is already HTML."""
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    if not body:
        return f'<p class="muted">{h(empty)}</p>'
    head = "".join(f"<th>{h(x)}</th>" for x in headers)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def facts(rows: Iterable[tuple[str, str]]) -> str:
    """Return a two-column table of names (text) and values (already HTML), no header."""
    body = "".join(f'<tr><th scope="row">{h(k)}</th><td>{v}</td></tr>' for k, v in rows)
    return f'<table class="facts"><tbody>{body}</tbody></table>'


def state(name: str) -> str:
    """Return a state as a small coloured label."""
    cls = name.split(" ", 1)[0]
    return f'<span class="state {h(cls)}">{h(name)}</span>'


def post_button(
    action: str, label: str, csrf: str, fields: dict[str, str] | None = None, danger: bool = False
) -> str:
    """Return a form of one button that POSTs to `action` with the CSRF token."""
    extra = "".join(hidden(k, v) for k, v in (fields or {}).items())
    cls = ' class="danger"' if danger else ""
    return (
        f'<form class="inline" method="post" action="{h(action)}">{hidden("csrf", csrf)}{extra}'
        f'<button type="submit"{cls}>{h(label)}</button></form>'
    )


def status(label: str) -> str:
    """Return a reminder's status (`Reminder.status`: `done, 1 dead letter`) as labels: its
    state, `retrying`, and its open dead letters in the dead colour."""
    return " ".join(
        state(part)
        if i == 0 or part == "retrying"
        else f'<span class="state dead">{h(part)}</span>'
        for i, part in enumerate(label.split(", "))
    )
