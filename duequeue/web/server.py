"""Run the server: check where it may listen, start it, stop cleanly on SIGTERM or SIGINT.

Without a token (DUEQUEUE_WEB_TOKEN / web_token) it listens on the loopback interface only, and
a --host elsewhere is refused before anything starts (Hangfire's local-requests-only default).
"""

import asyncio
import signal
import sys
from collections.abc import Callable

from aiohttp import web

from duequeue.api.queue import Queue
from duequeue.errors import BadInputError, ConfigError
from duequeue.web.app import make_app
from duequeue.web.auth import Guard, is_loopback
from duequeue.web.queues import Queues

# A token shorter than this is guessable; one from `openssl rand -hex 32` is 64.
MIN_TOKEN = 16


def check(host: str, port: int, token: str | None) -> None:
    """Refuse a host, port or token serve must not run with (BadInputError naming it)."""
    if not 0 <= port <= 65535:
        raise BadInputError(f"{port} is not a TCP port (0-65535)", field="port")
    if token is not None and len(token) < MIN_TOKEN:
        raise ConfigError(
            f"at least {MIN_TOKEN} characters (try: openssl rand -hex 32)", field="web_token"
        )
    if token is None and not is_loopback(host):
        raise BadInputError(
            f"{host} is not a loopback address: without a token serve answers this machine only;"
            " set DUEQUEUE_WEB_TOKEN (or web_token in the config file), e.g. to the output of"
            " `openssl rand -hex 32`, to listen there",
            field="host",
        )


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
    token = probe.settings.web_token
    check(host, port, token)
    try:
        probe.stats()  # a database that cannot be opened fails here, before anything listens
    finally:
        probe.close()
    queues = Queues(make_queue, threads)
    try:
        asyncio.run(_run(make_app(queues, Guard(token, read_only)), host, port, announce))
    finally:
        queues.close()


async def _run(
    app: web.Application, host: str, port: int, announce: Callable[[str], None] | None
) -> None:
    runner = web.AppRunner(app, handle_signals=False, access_log=None)
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
