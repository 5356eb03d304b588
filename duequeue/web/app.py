"""The application: routes (api.py, pages.py, /metrics, the style sheet) and the middleware every
request goes through, outermost first: the client as trusted proxies saw it (proxy.py); errors
as a status (problems.py: problem+json for the API, a page for the dashboard) and the headers
that keep the page to this server (Content-Security-Policy); who may ask (auth.py, the
throttle), CSRF and Origin on the dashboard's forms, a Host of this machine without a token."""

import logging
import time
from collections.abc import Awaitable, Callable
from urllib.parse import urlencode, urlsplit

from aiohttp import web

from duequeue.api import prometheus
from duequeue.errors import DuequeueError
from duequeue.web import action_pages, api, api_changes, inputs, pages, problems, proxy, tries
from duequeue.web.auth import (
    SESSION_COOKIE,
    Guard,
    host_name,
    is_loopback,
    new_session,
    safe_next,
    session_of,
    set_cookie,
)
from duequeue.web.html import CSS, h, page
from duequeue.web.keys import GUARD, PROXIES, QUEUES, ROLE, THROTTLE
from duequeue.web.queues import Queues
from duequeue.web.throttle import Throttle

log = logging.getLogger("duequeue.serve")

# A reminder's body is at most 64 KiB, its data 16 KiB; with its targets and secrets, a request
# larger than this is not one reminder.
MAX_BODY = 256 * 1024

# No request from the page to anywhere but this server, and no script at all.
CSP = (
    "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; "
    "frame-ancestors 'none'; base-uri 'none'"
)
_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    # Not no-referrer: under it a browser sends `Origin: null` with the dashboard's own forms,
    # and the Origin is what tells them from another site's.
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}
_PUBLIC = {"/login", "/static/style.css", "/api/v1/openapi.json"}
# What a browser may POST without the admin's role: its own login and logout.
_ANYONE_POSTS = {"/login", "/logout"}
_READS = {"GET", "HEAD"}
_KEPT = ("WWW-Authenticate", "Location", "Set-Cookie", "Allow", "Retry-After")

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def make_app(
    queues: Queues,
    guard: Guard,
    proxies: proxy.Trusted | None = None,
    throttle: Throttle | None = None,
) -> web.Application:
    """Return the server's application over `queues`, under `guard`'s rules, believing the
    forwarding headers of `proxies`' requests alone."""
    app = web.Application(middlewares=[_proxied, _errors, _access], client_max_size=MAX_BODY)
    app[QUEUES] = queues
    app[GUARD] = guard
    app[PROXIES] = proxies or proxy.Trusted()
    app[THROTTLE] = throttle or Throttle()
    app.add_routes([web.get("/static/style.css", _style), web.get("/metrics", _metrics)])
    app.add_routes(api.routes(guard.read_only))
    if not guard.read_only:
        # Before pages.py's: its /reminders/{id}/{action} would take their paths.
        app.add_routes(api_changes.routes())
        app.add_routes(action_pages.routes())
    app.add_routes(pages.routes(guard.read_only))
    return app


def _is_api(request: web.Request) -> bool:
    return request.path.startswith("/api/") or request.path == "/metrics"


@web.middleware
async def _proxied(request: web.Request, handler: Handler) -> web.StreamResponse:
    # Outermost, so that every later part (the Origin and Host checks, the cookie's Secure flag,
    # the throttle, the log) sees the client's scheme, host and address.
    seen = proxy.seen(request, request.app[PROXIES])
    if seen is not None:
        request = request.clone(scheme=seen.scheme, host=seen.host, remote=seen.remote)
    return await handler(request)


def _problem(status: int, title: str, detail: str) -> web.Response:
    return _problem_response(problems.problem(status, title, detail))


def _problem_response(body: dict[str, object]) -> web.Response:
    status = body["status"]
    assert isinstance(status, int)
    return web.json_response(body, status=status, content_type="application/problem+json")


@web.middleware
async def _errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    started = time.perf_counter()
    try:
        response = await handler(request)
    except DuequeueError as exc:
        status, title = problems.status(exc)
        if _is_api(request):
            response = _problem_response(problems.of_error(exc))
        else:
            named = f"{'/'.join(exc.fields)}: " if exc.fields else ""
            body = f'<h1>{h(title)}</h1><p class="error">{h(named + exc.detail)}</p>'
            response = web.Response(text=page(title, body), content_type="text/html", status=status)
        if status == 503:
            response.headers["Retry-After"] = str(problems.RETRY_AFTER_S)
        if status >= 500:
            log.warning("%s %s from %s: %d %s", request.method, request.path, request.remote,
                        status, exc)  # fmt: skip
    except web.HTTPException as exc:
        if exc.status >= 400 and _is_api(request):
            response = _problem(exc.status, exc.reason, exc.text or exc.reason)
        elif exc.status >= 400:
            detail = exc.text if exc.text and exc.text != f"{exc.status}: {exc.reason}" else ""
            body = f'<h1>{h(exc.status)} {h(exc.reason)}</h1><p class="error">{h(detail)}</p>'
            response = web.Response(
                text=page(exc.reason, body), content_type="text/html", status=exc.status
            )
        else:
            response = exc
        for name in _KEPT:
            if name in exc.headers and name not in response.headers:
                response.headers[name] = exc.headers[name]
    except Exception:
        log.exception("%s %s from %s", request.method, request.path, request.remote)
        if _is_api(request):
            response = _problem(500, "Internal error", "see the server's log")
        else:
            response = web.Response(
                text=page("Error", "<h1>Internal error</h1>"), content_type="text/html", status=500
            )
    response.headers.update(_HEADERS)
    # How long the server took (benchmarks/serve_pages.py reads it; a browser shows it).
    response.headers["Server-Timing"] = f"app;dur={(time.perf_counter() - started) * 1000:.1f}"
    return response


@web.middleware
async def _access(request: web.Request, handler: Handler) -> web.StreamResponse:
    guard = request.app[GUARD]
    if guard.token is None and not _local(request):
        # Without a token only this machine may ask; a foreign Host is a rebound DNS name, a
        # foreign client one a trusted proxy let in.
        raise web.HTTPForbidden(text="this server answers requests to localhost only")
    if _is_api(request):
        if request.path not in _PUBLIC:
            request[ROLE] = _api_role(request, guard)
        return await handler(request)
    session = session_of(request)
    request[SESSION_COOKIE] = session or new_session()
    found = guard.cookie(request)
    if found is None and request.path not in _PUBLIC:
        # Back to the page asked for once logged in (a path of this site only: auth.safe_next).
        back = safe_next(request.path_qs) if request.method in _READS else None
        asked = "?" + urlencode({"next": back}) if back and back != "/" else ""
        raise web.HTTPSeeOther("/login" + asked)
    request[ROLE] = found or "read"
    if request.method not in _READS:
        await _check_form(request, guard)
        if request.path not in _ANYONE_POSTS and found != "admin":
            raise web.HTTPForbidden(text="the read-only token changes nothing")
    response = await handler(request)
    if session is None:
        set_cookie(response, SESSION_COOKIE, request[SESSION_COOKIE], secure=request.secure)
    return response


def _local(request: web.Request) -> bool:
    client = proxy.address(request.remote or "")
    return is_loopback(host_name(request.host)) and client is not None and client.is_loopback


def _api_role(request: web.Request, guard: Guard) -> str:
    """Return the role of an API request's token, or raise 401, 403 or 429."""
    if guard.token is None:
        return "admin"
    found = None
    if "Authorization" in request.headers:
        # A token given is a try: judged only outside a wait, counted when wrong.
        key = tries.key(request)
        wait = request.app[THROTTLE].wait(key)
        if wait:
            raise tries.too_many(wait)
        found = guard.bearer(request)
        if found is None:
            tries.failed(request, key, "the API")
    elif request.method in _READS and guard.cookie(request) is not None:
        found = "read"  # a login cookie reads the API but changes nothing there
    if found is None:
        raise web.HTTPUnauthorized(
            headers={"WWW-Authenticate": "Bearer"},
            text="send Authorization: Bearer <DUEQUEUE_WEB_TOKEN>",
        )
    if request.method not in _READS and found != "admin":
        raise web.HTTPForbidden(text="this token reads only: changes take DUEQUEUE_WEB_TOKEN")
    return found


async def _check_form(request: web.Request, guard: Guard) -> None:
    origin = request.headers.get("Origin")
    if origin is not None and not _same_origin(origin, request.scheme, request.host):
        raise web.HTTPForbidden(text="a form of another site")
    found = await inputs.form(request)
    if not guard.csrf_ok(request, inputs.text_field(found, "csrf")):
        raise web.HTTPForbidden(text="the form is stale: reload the page and try again")


_PORTS = {"http": 80, "https": 443}


def _same_origin(origin: str, scheme: str, host: str) -> bool:
    """Return whether an Origin header names this server as the client reached it (a default
    port written or not)."""
    try:
        given = urlsplit(origin)
        ours = urlsplit(f"{scheme}://{host}")
        return (
            given.scheme == ours.scheme
            and given.hostname is not None
            and given.hostname == ours.hostname
            and (given.port or _PORTS.get(given.scheme)) == (ours.port or _PORTS.get(ours.scheme))
        )
    except ValueError:  # a port that is no number, or out of range
        return False


async def _style(request: web.Request) -> web.Response:
    response = web.Response(text=CSS, content_type="text/css")
    return response


async def _metrics(request: web.Request) -> web.Response:
    found = await request.app[QUEUES].call(lambda q: q.stats())
    return web.Response(text=prometheus.text(found), content_type="text/plain", charset="utf-8")
