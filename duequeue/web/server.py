"""Run the server: check where it may listen and with which tokens and trusted proxies, start
it, log to stderr, stop cleanly on SIGTERM or SIGINT.

Without a token (DUEQUEUE_WEB_TOKEN / web_token) it listens on the loopback interface only, and
a --host elsewhere is refused before anything starts (Hangfire's local-requests-only default).
"""

import asyncio
import logging
import signal
import sys
from collections.abc import Callable
from typing import Any

from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError

from duequeue.api.queue import Queue
from duequeue.errors import BadInputError, ConfigError
from duequeue.web.app import make_app
from duequeue.web.auth import Guard, is_loopback
from duequeue.web.proxy import Trusted, parse_allowed
from duequeue.web.queues import Queues

# A token shorter than this is guessable; one from `openssl rand -hex 32` is 64.
MIN_TOKEN = 16
log = logging.getLogger("duequeue.serve")


def check(
    host: str,
    port: int,
    token: str | None,
    read_token: str | None = None,
    web_forwarded_allow_ips: str = "",
) -> Trusted:
    """Refuse a host, port, token or trusted proxy serve must not run with (BadInputError or
    ConfigError naming it); return the trusted proxies."""
    if not 0 <= port <= 65535:
        raise BadInputError(f"{port} is not a TCP port (0-65535)", field="port")
    for name, value in (("web_token", token), ("web_read_token", read_token)):
        if value is not None and len(value) < MIN_TOKEN:
            raise ConfigError(
                f"at least {MIN_TOKEN} characters (try: openssl rand -hex 32)", field=name
            )
    if read_token is not None and token is None:
        raise ConfigError(
            "a read token needs the admin token beside it: set DUEQUEUE_WEB_TOKEN too",
            field="web_read_token",
        )
    if read_token is not None and read_token == token:
        raise ConfigError("must differ from the admin token", field="web_read_token")
    trusted = parse_allowed(web_forwarded_allow_ips)
    if token is None and not is_loopback(host):
        raise BadInputError(
            f"{host} is not a loopback address: without a token serve answers this machine only;"
            " set DUEQUEUE_WEB_TOKEN (or web_token in the config file), e.g. to the output of"
            " `openssl rand -hex 32`, to listen there",
            field="host",
        )
    return trusted


def serve(
    make_queue: Callable[[], Queue],
    host: str,
    port: int,
    *,
    read_only: bool = False,
    threads: int = 4,
    announce: Callable[[str], None] | None = None,
) -> None:
    """Serve the dashboard and the API until SIGTERM or SIGINT; return then."""
    probe = make_queue()
    settings = probe.settings
    try:
        trusted = check(
            host,
            port,
            settings.web_token,
            settings.web_read_token,
            settings.web_forwarded_allow_ips,
        )
        probe.stats()  # a database that cannot be opened fails here, before anything listens
    finally:
        probe.close()
    guard = Guard(settings.web_token, read_only, settings.web_read_token)
    _log_to_stderr()
    queues = Queues(make_queue, threads)
    try:
        asyncio.run(_run(make_app(queues, guard, trusted), host, port, announce))
    finally:
        queues.close()


async def _run(
    app: web.Application, host: str, port: int, announce: Callable[[str], None] | None
) -> None:
    runner = web.AppRunner(app, handle_signals=False, access_log=None, logger=_ConnectionLog())
    await runner.setup()
    try:
        site = web.TCPSite(runner, host, port, shutdown_timeout=5)
        await site.start()
        # The port actually bound (--port 0 asks for any free one), for the line tests read.
        sockets = getattr(site._server, "sockets", None) or ()
        bound = sockets[0].getsockname()[1] if sockets else port
        shown = f"[{host}]" if ":" in host else host
        (announce or _print)(f"duequeue serve: listening on http://{shown}:{bound}/")
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        await stop.wait()
    finally:
        await runner.cleanup()  # lets the requests under way finish, then closes


def _print(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _log_to_stderr() -> None:
    """Send serve's log (wrong tokens, malformed requests, errors) to stderr, one line each:
    journald or the terminal adds the time."""
    if log.handlers:
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("duequeue serve: %(message)s"))
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    log.propagate = False


class _ConnectionLog(logging.Logger):
    """aiohttp's log of a connection (what happens before any handler runs).

    A request its parser refuses (a NUL in a header, a malformed request line or chunk) has
    already been answered 400: that is the client's doing, so one line says so, never a
    traceback. Anything else is logged as aiohttp logs it.
    """

    def __init__(self) -> None:
        super().__init__("duequeue.serve.http")
        self.parent = log

    def exception(self, msg: object, *args: object, exc_info: Any = True, **kw: Any) -> None:
        exc = exc_info if isinstance(exc_info, BaseException) else sys.exc_info()[1]
        if isinstance(exc, HttpProcessingError):
            client = args[0] if args else "?"
            what = (exc.message or type(exc).__name__).split("\n", 1)[0].strip()[:120]
            self.info("refused a malformed request from %s: %d %s", client, exc.code, what)
            return
        super().exception(msg, *args, exc_info=exc_info, **kw)
