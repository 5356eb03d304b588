"""The application: routes (api.py, pages.py, /metrics, the style sheet) and the middleware every
request goes through: who may ask (auth.py), CSRF on the dashboard's forms, a Host of this machine
without a token, the headers that keep the page to this server (Content-Security-Policy), and a
DuequeueError as a 4xx naming the field (problem+json for the API, a page for the dashboard)."""

import logging
import time
from collections.abc import Awaitable, Callable

from aiohttp import web

from duequeue.api import prometheus
from duequeue.errors import BadInputError, DuequeueError, NotFoundError, StoreError
from duequeue.web import api, jsonout, pages
from duequeue.web.auth import SESSION_COOKIE, Guard, host_name, is_loopback, new_session, set_cookie
from duequeue.web.html import CSS, h, page
from duequeue.web.keys import GUARD, QUEUES
from duequeue.web.queues import Queues

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

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def make_app(queues: Queues, guard: Guard) -> web.Application:
    """Return the server's application over `queues`, under `guard`'s rules."""
    app = web.Application(middlewares=[_errors, _access], client_max_size=MAX_BODY)
    app[QUEUES] = queues
    app[GUARD] = guard
    app.add_routes([web.get("/static/style.css", _style), web.get("/metrics", _metrics)])
    app.add_routes(api.routes(guard.read_only))
    app.add_routes(pages.routes(guard.read_only))
    return app


def _is_api(request: web.Request) -> bool:
    return request.path.startswith("/api/") or request.path == "/metrics"


def _problem(status: int, title: str, detail: str, fields: tuple[str, ...] = ()) -> web.Response:
    return web.json_response(
        jsonout.problem(status, title, detail, fields),
        status=status,
        content_type="application/problem+json",
    )


def _status(exc: DuequeueError) -> tuple[int, str]:
    if isinstance(exc, BadInputError):
        return 400, "Bad input"
    if isinstance(exc, NotFoundError):
        return 404, "Not found"
    if isinstance(exc, StoreError):
        return 503, "Database unavailable"
    return 500, "Server configuration"


@web.middleware
async def _errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    started = time.perf_counter()
    try:
        response = await handler(request)
    except DuequeueError as exc:
        status, title = _status(exc)
        if _is_api(request):
            response = _problem(status, title, exc.detail, exc.fields)
        else:
            named = f"{'/'.join(exc.fields)}: " if exc.fields else ""
            body = f'<h1>{h(title)}</h1><p class="error">{h(named + exc.detail)}</p>'
            response = web.Response(text=page(title, body), content_type="text/html", status=status)
        if status == 503:
            response.headers["Retry-After"] = "1"
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
        for name in ("WWW-Authenticate", "Location", "Set-Cookie", "Allow"):
            if name in exc.headers and name not in response.headers:
                response.headers[name] = exc.headers[name]
    except Exception:
        log.exception("%s %s", request.method, request.path)
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
    if guard.token is None and not is_loopback(host_name(request.host)):
        # Without a token only this machine may ask; a foreign Host is a rebound DNS name.
        raise web.HTTPForbidden(text="this server answers requests to localhost only")
    if _is_api(request):
        if request.path not in _PUBLIC and not (
            guard.bearer_ok(request) or (request.method == "GET" and guard.cookie_ok(request))
        ):
            raise web.HTTPUnauthorized(
                headers={"WWW-Authenticate": "Bearer"},
                text="send Authorization: Bearer <DUEQUEUE_WEB_TOKEN>",
            )
        return await handler(request)
    session = request.cookies.get(SESSION_COOKIE)
    request[SESSION_COOKIE] = session or new_session()
    if request.path not in _PUBLIC and not guard.cookie_ok(request):
        raise web.HTTPSeeOther("/login")
    if request.method == "POST":
        await _check_form(request, guard)
    response = await handler(request)
    if session is None:
        set_cookie(response, SESSION_COOKIE, request[SESSION_COOKIE], secure=request.secure)
    return response


async def _check_form(request: web.Request, guard: Guard) -> None:
    origin = request.headers.get("Origin")
    if origin is not None and origin != f"{request.scheme}://{request.host}":
        raise web.HTTPForbidden(text="a form of another site")
    form = await request.post()
    if not guard.csrf_ok(request, str(form.get("csrf", ""))):
        raise web.HTTPForbidden(text="the form is stale: reload the page and try again")


async def _style(request: web.Request) -> web.Response:
    response = web.Response(text=CSS, content_type="text/css")
    return response


async def _metrics(request: web.Request) -> web.Response:
    found = await request.app[QUEUES].call(lambda q: q.stats())
    return web.Response(text=prometheus.text(found), content_type="text/plain", charset="utf-8")
