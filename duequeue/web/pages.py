"""The dashboard's pages: overview, reminders (filtered, searched, paged by key), one reminder,
the confirmation of each action and its result, login. Each handler makes one Queue call (two
for a reminder's page: its history and its next fires), then renders html.py's parts."""

import json
from datetime import datetime
from typing import Any

from aiohttp import web

from duequeue.api.queue import Queue
from duequeue.api.results import Change, History, Overview, Page, Reminder, Target
from duequeue.errors import BadInputError, NotFoundError
from duequeue.web import bulk, charts, inputs, queues, tries
from duequeue.web.auth import (
    DEVICE_AGE,
    DEVICE_COOKIE,
    LOGIN_COOKIE,
    SESSION_COOKIE,
    safe_next,
    set_cookie,
)
from duequeue.web.html import (
    at,
    facts,
    h,
    page,
    post_button,
    span,
    state,
    status,
    table,
    url,
    when,
)
from duequeue.web.keys import GUARD, QUEUES, THROTTLE, may_change, parse_id, role

STATES = ("all", "pending", "due", "retrying", "paused", "dead", "done", "cancelled")
PAGE_SIZE = 50
ACTIONS = {
    "retry": (
        "Retry",
        "Re-arm the oldest dead fire of reminder {id}: it is due now and goes "
        "to every target that lacks it.",
    ),
    "cancel": ("Cancel", "Cancel reminder {id}: it never fires again."),
    "enable": (
        "Enable targets",
        "Switch back on the targets of reminder {id} that were "
        "disabled after their endpoint answered 410 Gone.",
    ),
    "pause": (
        "Pause",
        "Pause reminder {id}: no tick delivers it, nor its targets' own retries, until it is "
        "resumed; its pending fire is kept.",
    ),
    "resume": (
        "Resume",
        "Resume reminder {id}: its pending fire is due again, at the next tick if its time "
        "passed while it was paused.",
    ),
}


def routes(read_only: bool) -> list[web.RouteDef]:
    """Return the dashboard's routes; with `read_only`, no actions."""
    found = [
        web.get("/", overview),
        web.get("/reminders", reminders),
        web.get("/reminders/{id}", reminder),
        web.get("/login", login_form),
        web.post("/login", login),
        web.post("/logout", logout),
    ]
    if not read_only:
        found += [
            web.get("/reminders/{id}/{action}", confirm),
            web.post("/reminders/{id}/{action}", act),
            web.get("/retry-all", confirm_retry_all),
            web.post("/retry-all", retry_all),
        ]
    return found


def csrf_of(request: web.Request) -> str:
    """Return the CSRF token of the forms shown to this browser session."""
    return request.app[GUARD].csrf(request[SESSION_COOKIE])


def html_page(
    request: web.Request, title: str, body: str, status: int = 200, refresh: int | None = None
) -> web.Response:
    """Return a page in the frame, with the logout button and role note this request gets."""
    guard = request.app[GUARD]
    # Logged in with the read token: the header says so (and pages show no action).
    reader = guard.token is not None and role(request) == "read" and _logged_in(request)
    text = page(
        title,
        body,
        csrf=csrf_of(request),
        logout=guard.token is not None and _logged_in(request),
        refresh=refresh,
        note="read-only" if reader or guard.read_only else None,
    )
    return web.Response(text=text, content_type="text/html", status=status)


def _logged_in(request: web.Request) -> bool:
    return request.app[GUARD].cookie(request) is not None


def require_changer(request: web.Request) -> None:
    """Refuse a page that leads to a change to whoever may not make it (the read token)."""
    if not may_change(request):
        raise web.HTTPForbidden(text="the read-only token changes nothing")


# -- overview --------------------------------------------------------------------------------


async def overview(request: web.Request) -> web.Response:
    o = await request.app[QUEUES].call(lambda q: q.overview(cap=queues.COUNT_CAP))
    body = render_overview(o, not may_change(request))
    return html_page(request, "Overview", body, refresh=30)


def render_overview(o: Overview, read_only: bool = True) -> str:
    s = o.stats

    def fig(field: str) -> str:
        """Return a count as shown: with a "+" when counting stopped at the cap."""
        value: int = getattr(s, field)
        return f"{value:,}+" if field in s.lower_bounds else str(value)

    cards = [
        ("pending", fig("pending"), "pending", False),
        (
            "due now",
            fig("due"),
            "due",
            s.due > 0
            and s.oldest_due_lateness is not None
            and s.oldest_due_lateness.total_seconds() > 120,
        ),
        ("retrying", fig("retrying"), "retrying", False),
        ("paused", fig("paused"), "paused", False),
        ("targets retrying on their own", fig("retrying_targets"), None, False),
        # The reminders the dead list shows (those marked dead in every view), not their fires.
        (
            "dead (reminders with a dead letter)",
            fig("dead_reminders"),
            "dead",
            s.dead_reminders > 0,
        ),
        ("disabled targets (410)", fig("disabled_targets"), None, s.disabled_targets > 0),
        ("cancelled", fig("cancelled"), "cancelled", False),
        ("done", fig("done"), "done", False),
    ]
    html_cards = "".join(
        f'<div class="card{" bad" if bad else ""}" id="count-{h(label.split(" ")[0])}">'
        + (f'<a href="{h(url("/reminders", state=link))}">' if link else "")
        + f'<div class="n">{n}</div><div class="l">{h(label)}</div>'
        + ("</a>" if link else "")
        + "</div>"
        for label, n, link, bad in cards
    )
    shown = facts(
        [
            ("max lateness of the last ticks (first attempts, 15 min)", h(span(o.max_lateness))),
            ("oldest due row waiting", h(span(s.oldest_due_lateness))),
            (
                "dead letters: fires awaiting retry",
                f"{fig('dead_letters')} on {fig('dead_reminders')} reminder"
                + ("" if s.dead_reminders == 1 else "s"),
            ),
            ("sent / failed, last hour", f"{fig('sent_last_hour')} / {fig('failed_last_hour')}"),
            ("sent / failed, last 24 h", f"{fig('sent_last_day')} / {fig('failed_last_day')}"),
            ("rows a tick holds now", fig("leased")),
            ("as of", h(when(s.at))),
        ]
    )
    # Said plainly: a "+" figure is a lower bound, and where the exact one is.
    capped = (
        f'<p class="muted" id="estimate">Figures with a "+" are at least that: counting stops '
        f"at {queues.COUNT_CAP:,} rows here ({max(1, queues.COUNT_CAP // 10):,} for dead letters, "
        "rows a tick holds and each hour of the due chart), so that this page stays fast at any "
        "size. <code>duequeue stats</code> counts exactly.</p>"
        if s.estimate or o.per_hour_lower_bounds
        else ""
    )
    return (
        f"<h1>Overview</h1>{_paused(s.queue_paused_since, read_only)}"
        f'<div class="cards">{html_cards}</div>{capped}{shown}'
        f"{charts.deliveries(o.per_minute, 'sent_last_day' in s.lower_bounds)}"
        f"{charts.due(o.per_hour, o.per_hour_lower_bounds)}"
        '<p class="muted">This page refreshes itself every 30 seconds.</p>'
    )


def _paused(since: datetime | None, read_only: bool) -> str:
    """Return the whole queue's pause as a banner (with Resume), or a Pause button."""
    if since is None:
        return (
            ""
            if read_only
            else '<p class="actions"><a class="button secondary" href="/queue/pause">'
            "Pause the queue…</a></p>"
        )
    button = "" if read_only else ' <a class="button" href="/queue/resume">Resume…</a>'
    return (
        f'<p class="banner" id="queue-paused">The queue is paused since {at(since)}: ticks '
        f"deliver nothing until it is resumed.{button}</p>"
    )


# -- the list --------------------------------------------------------------------------------


async def reminders(request: web.Request) -> web.Response:
    q = request.query
    st = q.get("state", "all")
    if st not in STATES:
        raise BadInputError(f"{st[:32]!r} is not one of {', '.join(STATES)}", field="state")
    search = inputs.query_search(request)
    before = inputs.query_id(request, "before")
    found: Page = await request.app[QUEUES].call(
        lambda queue: queue.browse(st, search=search, before=before, limit=PAGE_SIZE)  # type: ignore[arg-type]
    )
    body = render_list(found, st, search, before is not None, not may_change(request))
    title = "Dead letters" if st == "dead" else "Reminders"
    return html_page(request, title, body)


def render_list(found: Page, st: str, search: str | None, paged: bool, read_only: bool) -> str:
    options = "".join(
        f'<option value="{s}"{" selected" if s == st else ""}>{s}</option>' for s in STATES
    )
    filters = (
        '<form class="filters" method="get" action="/reminders">'
        f'<label>state <select name="state">{options}</select></label>'
        f'<label>search <input type="search" name="search" value="{h(search)}" '
        'placeholder="subject, key or target"></label><button type="submit">Filter</button>'
        "</form>"
    )
    rows = [_row(r, st) for r in found.reminders]
    pager = ['<div class="pager">']
    if paged:
        pager.append(f'<a href="{h(url("/reminders", state=st, search=search))}">First page</a>')
    if found.next_before is not None:
        nxt = url("/reminders", state=st, search=search, before=found.next_before)
        pager.append(f'<a id="next-page" href="{h(nxt)}">Next page</a>')
    pager.append("</div>")
    if found.partial:
        # The search read its window (Queue.browse) before the page was full.
        pager.insert(
            0,
            '<p class="note" id="partial">This search read as many reminders as one page may '
            f"(down to id {found.next_before}) before the page was full; the next page "
            "searches the older ones.</p>",
        )
    bulk = []
    if (found.reminders or found.partial) and not read_only:
        if st == "dead":
            bulk.append(
                f'<a class="button danger" href="{h(url("/retry-all", search=search))}">'
                "Retry all dead letters matching this filter…</a>"
            )
        if st not in ("cancelled", "done"):
            bulk.append(
                f'<a class="button danger" href="{h(url("/bulk-cancel", state=st, search=search))}"'
                ">Cancel all matching this filter…</a>"
            )
    if not read_only:
        bulk.append(
            '<form class="inline" method="get" action="/cancel-key"><label>key '
            '<input name="key" required maxlength="255"></label> '
            '<button class="secondary" type="submit">Cancel by key…</button></form>'
        )
    actions = f'<div class="actions">{"".join(bulk)}</div>' if bulk else ""
    heading = "Dead letters" if st == "dead" else "Reminders"
    return (
        f"<h1>{heading}</h1>{filters}{actions}"
        + table(
            ["id", "subject", "key", "state", "next fire (UTC and local)", "targets", "last error"],
            rows,
            "no reminders match",
        )
        + "".join(pager)
    )


def _row(r: Reminder, st: str) -> list[str]:
    del st  # every list shows a reminder's status the same way (Reminder.status)
    return [
        f'<a href="/reminders/{r.id}">{r.id}</a>',
        f'<a href="/reminders/{r.id}">{h(r.subject)}</a>',
        h(r.key),
        status(r.status),
        at(r.next_fire_at, r.tz) or (at(r.fire_at, r.tz) if r.state == "paused" else ""),
        "<br>".join(h(f"{t.channel}: {t.display}") for t in r.targets),
        h(r.last_error),
    ]


# -- one reminder ----------------------------------------------------------------------------


async def reminder(request: web.Request) -> web.Response:
    rid = reminder_id(request)

    def work(q: Queue) -> tuple[History, Any]:
        return q.history(rid), q.next_fires(rid, 5)

    found, fires = await request.app[QUEUES].call(work)
    body = render_reminder(found, fires, csrf_of(request), not may_change(request))
    return html_page(request, f"Reminder {rid}", body)


def reminder_id(request: web.Request) -> int:
    """Return the reminder id of the URL, or raise NotFoundError."""
    rid = parse_id(request.match_info["id"], "id")
    if rid is None:
        raise NotFoundError(f"no reminder with id {request.match_info['id'][:32]}", field="id")
    return rid


def target_state(t: Target, found: History) -> str:
    """Return how a target stands: disabled by 410, retrying, dead, or its last outcome."""
    if t.disabled_at is not None:
        return "disabled (410 Gone)"
    if any(x.target is not None and x.target.id == t.id for x in found.target_retries):
        return "retrying"
    last = [a for a in found.attempts if a.target is not None and a.target.id == t.id]
    if not last:
        return "waiting"
    a = last[-1]
    dead = {d.fire_at for d in found.dead_letters if d.retried_at is None}
    if a.outcome != "sent" and a.fire_at in dead:
        return "dead"
    return a.outcome


def _body(body: str) -> str:
    if not body:
        return '<span class="muted" id="body">none</span>'
    return f'<pre class="sends" id="body">{h(body)}</pre>'


def _data(data: Any) -> str:
    """Return a reminder's data (masked by Queue) as indented JSON, or `none`."""
    if data is None:
        return '<span class="muted">none</span>'
    shown = json.dumps(data, indent=2, ensure_ascii=False)
    return f'<pre class="sends" id="data">{h(shown)}</pre>'


def render_reminder(found: History, fires: Any, csrf: str, read_only: bool) -> str:
    r = found.reminder
    rule = f"RRULE {r.rrule}" if r.rrule else f"cron {r.cron}" if r.cron else "once"
    open_dead = [d for d in found.dead_letters if d.retried_at is None]
    actions = []
    if not read_only:
        if open_dead or r.state == "dead":
            actions.append(f'<a class="button" href="/reminders/{r.id}/retry">Retry…</a>')
        if r.state in ("pending", "paused"):
            actions.append(
                f'<a class="button secondary" href="/reminders/{r.id}/reschedule">Reschedule…</a>'
            )
        if r.state not in ("cancelled", "done"):
            actions.append(f'<a class="button secondary" href="/reminders/{r.id}/edit">Edit…</a>')
        if r.state == "pending":
            actions.append(f'<a class="button secondary" href="/reminders/{r.id}/pause">Pause…</a>')
        if r.state == "paused":
            actions.append(f'<a class="button" href="/reminders/{r.id}/resume">Resume…</a>')
        if r.state not in ("cancelled", "done"):
            actions.append(f'<a class="button danger" href="/reminders/{r.id}/cancel">Cancel…</a>')
        if any(t.disabled_at is not None for t in r.targets):
            actions.append(f'<a class="button" href="/reminders/{r.id}/enable">Enable targets…</a>')
    about = facts(
        [
            ("subject", h(r.subject)),
            ("body", _body(r.body)),
            ("data (secrets masked)", _data(r.data)),
            ("key", h(r.key)),
            ("state", f'<span id="status">{status(r.status)}</span>'),
            ("dead letters awaiting retry", f'<span id="dead-letters">{r.dead_letters}</span>'),
            ("rule", h(rule)),
            ("zone", h(r.tz)),
            ("next fire", at(r.next_fire_at, r.tz) if r.paused_at is None else "none while paused"),
            *(
                [("paused since", at(r.paused_at, r.tz)), ("pending fire", at(r.fire_at, r.tz))]
                if r.paused_at is not None
                else []
            ),
            ("errors on the pending fire", f"{r.error_count} {h(r.last_error or '')}"),
            ("created", at(r.created_at, r.tz)),
        ]
    )
    next_rows = [[h(f.local.strftime("%Y-%m-%d %H:%M:%S %Z")), h(when(f.at))] for f in fires.fires]
    targets = [
        [h(t.channel), h(t.display), state(target_state(t, found)), "yes" if t.has_secret else ""]
        for t in r.targets
    ]
    tz = r.tz
    attempts = [
        [
            at(a.at, tz),
            at(a.fire_at, tz),
            h("" if a.target is None else f"{a.target.channel}: {a.target.display}"),
            state(a.outcome),
            str(a.attempt),
            h(a.error),
        ]
        for a in found.attempts
    ]
    dead = [
        [
            at(d.fire_at, tz),
            at(d.dead_at, tz),
            str(d.error_count),
            h(d.last_error),
            at(d.retried_at, tz) or "awaiting retry",
        ]
        for d in found.dead_letters
    ]
    retrying = [
        [
            at(t.fire_at, tz),
            h("" if t.target is None else t.target.display),
            str(t.error_count),
            h(t.last_error),
            at(t.next_try_at, tz),
        ]
        for t in found.target_retries
    ]
    del csrf  # the actions confirm on a page of their own, which carries the token
    return (
        f"<h1>Reminder {r.id}: {h(r.subject)}</h1><p>{' '.join(actions)}</p>{about}"
        f"<h2>Next fires</h2>{table([f'in {r.tz}', 'UTC'], next_rows, 'no more fires')}"
        f"<h2>Targets</h2>{table(['channel', 'address', 'state', 'own secret'], targets)}"
        "<h2>Dead letters</h2>"
        f"{table(['fire', 'dead at', 'errors', 'last error', 'retried'], dead)}"
        f"<h2>Targets retrying on their own</h2>"
        f"{table(['fire', 'target', 'errors', 'last error', 'next try'], retrying)}"
        f"<h2>Attempts ({len(found.attempts)})</h2>"
        + table(
            ["at", "fire", "target", "outcome", "attempt", "error"], attempts, "no attempts yet"
        )
    )


# -- actions ---------------------------------------------------------------------------------


def _action(request: web.Request) -> tuple[int, str]:
    rid, action = reminder_id(request), request.match_info["action"]
    if action not in ACTIONS:
        raise web.HTTPNotFound()
    return rid, action


async def confirm(request: web.Request) -> web.Response:
    rid, action = _action(request)
    require_changer(request)
    label, text = ACTIONS[action]
    body = (
        f"<h1>{h(label)} reminder {rid}?</h1><p>{h(text.format(id=rid))}</p><p>"
        + post_button(
            f"/reminders/{rid}/{action}",
            f"Yes, {label.lower()}",
            csrf_of(request),
            danger=action == "cancel",
        )
        + f' <a class="button secondary" href="/reminders/{rid}">No, go back</a></p>'
    )
    return html_page(request, f"{label} reminder {rid}", body)


async def act(request: web.Request) -> web.Response:
    rid, action = _action(request)
    changes: list[Change] = await request.app[QUEUES].call(lambda q: getattr(q, action)(rid))
    return html_page(
        request,
        f"{ACTIONS[action][0]}: reminder {rid}",
        render_changes(ACTIONS[action][0], changes, f"/reminders/{rid}"),
    )


def render_changes(label: str, changes: list[Change], back: str) -> str:
    # Words, not the coloured labels of a state: "done" here would read as the reminder's state.
    rows = [
        [
            f'<a href="/reminders/{c.reminder_id}">{c.reminder_id}</a>',
            '<span class="outcome">changed</span>'
            if c.applied
            else '<span class="outcome skipped">not changed</span>',
            (f"fire {at(c.fire_at)}" if c.fire_at else "") if c.applied else h(c.skipped),
        ]
        for c in changes
    ]
    applied = sum(c.applied for c in changes)
    return (
        f'<h1>{h(label)}</h1><p class="note" id="result">{applied} of {len(changes)} changed.</p>'
        + table(["reminder", "what happened", "detail"], rows, "nothing to do")
        + f'<p><a class="button secondary" href="{h(back)}">Back</a></p>'
    )


async def confirm_retry_all(request: web.Request) -> web.Response:
    require_changer(request)
    search = inputs.query_search(request)
    f = bulk.Filter("dead", search)
    matched: bulk.Matched = await request.app[QUEUES].call(lambda q: bulk.matching(q, f))
    count = len(matched.ids)
    what = "dead letters" + (f" matching {search!r}" if search else "")
    back = url("/reminders", state="dead", search=search)
    more = f" (the first {bulk.MAX} of more)" if matched.more else ""
    body = (
        f'<h1>Retry {count} {h(what)}?</h1><p id="count"><strong>{count}</strong> reminders '
        f"with a dead fire match now{h(more)}. Each reminder's oldest dead fire is re-armed, "
        "due now, as <code>duequeue retry</code> does.</p><p>"
        + post_button(
            "/retry-all",
            f"Yes, retry {count}",
            csrf_of(request),
            {"search": search or ""},
            danger=True,
        )
        + f' <a class="button secondary" href="{h(back)}">No, go back</a></p>'
    )
    return html_page(request, "Retry all", body)


async def retry_all(request: web.Request) -> web.Response:
    form = await inputs.form(request)
    search = inputs.search_text(inputs.text_field(form, "search"))

    def work(q: Queue) -> list[Change]:
        if search is None:
            return q.retry(all_dead=True)  # `duequeue retry --all-dead`
        return bulk.apply(q, "retry", bulk.Filter("dead", search))[1]

    changes = await request.app[QUEUES].call(work)
    back = url("/reminders", state="dead", search=search)
    return html_page(request, "Retry all", render_changes("Retry all", changes, back))


# -- login -----------------------------------------------------------------------------------


async def login_form(request: web.Request) -> web.Response:
    return html_page(request, "Log in", _login_body(request, None, request.query.get("next")))


def _login_body(request: web.Request, error: str | None, back: str | None = None) -> str:
    guard = request.app[GUARD]
    if guard.token is None:
        return '<h1>Log in</h1><p class="note">No token is set: this server answers this machine only, without a login.</p>'  # noqa: E501
    shown = f'<p class="error">{h(error)}</p>' if error else ""
    return (
        f"<h1>Log in</h1>{shown}"
        '<form method="post" action="/login"><input type="hidden" name="csrf" '
        f'value="{h(csrf_of(request))}">{_next_field(back)}<label>Token '
        '<input type="password" name="token" '
        'autocomplete="current-password" autofocus></label> <button type="submit">Log in</button>'
        "</form>"
    )


def _next_field(back: str | None) -> str:
    safe = safe_next(back)
    return "" if safe is None else f'<input type="hidden" name="next" value="{h(safe)}">'


async def login(request: web.Request) -> web.Response:
    guard, throttle = request.app[GUARD], request.app[THROTTLE]
    if guard.token is None:
        return _see_other("/")
    # A browser that logged in before is judged by its own failures, not by its address's, so
    # that nobody sharing the address can keep its owner out (throttle.py).
    device = guard.device(request)
    key = tries.key(request, device)
    wait = throttle.wait(key)
    if wait:
        return _refused(request, f"Too many wrong tokens from here: try again in {wait} s.", wait)
    form = await inputs.form(request)
    found = guard.role_of(inputs.text_field(form, "token"))
    back = safe_next(inputs.text_field(form, "next"))
    if found is None:
        wait = tries.failed(request, key, "the login")
        later = f" Too many wrong tokens from here: the next try waits {wait} s." if wait else ""
        body = _login_body(request, "That is not the token." + later, back)
        return html_page(request, "Log in", body, 401)
    throttle.succeeded(key)
    # Back to the page asked for before the login (a path of this site only), else the overview.
    response = _see_other(back or "/")
    set_cookie(response, LOGIN_COOKIE, guard.login_value(found), secure=request.secure)
    if device is None:
        set_cookie(
            response, DEVICE_COOKIE, guard.new_device(), secure=request.secure, max_age=DEVICE_AGE
        )
    return response


def _refused(request: web.Request, error: str, wait: int) -> web.Response:
    response = html_page(request, "Log in", _login_body(request, error), 429)
    response.headers["Retry-After"] = str(wait)
    return response


async def logout(request: web.Request) -> web.Response:
    response = _see_other("/login")
    response.del_cookie(LOGIN_COOKIE, path="/")
    return response


def _see_other(location: str) -> web.Response:
    return web.Response(status=303, headers={"Location": location})
