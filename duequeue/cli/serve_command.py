"""`duequeue serve`: flags, then the web package's server (duequeue/web/), over the same Queue
settings as every other command."""

from typing import Annotated

import typer

from duequeue.api.queue import Queue


def serve(
    ctx: typer.Context,
    host: Annotated[
        str,
        typer.Option(
            "--host",
            metavar="ADDR",
            help="Address to listen on; other than loopback only with DUEQUEUE_WEB_TOKEN set.",
        ),
    ] = "127.0.0.1",
    port: Annotated[
        int, typer.Option("--port", metavar="N", help="TCP port (0: any free one).")
    ] = 8325,
    read_only: Annotated[
        bool,
        typer.Option("--read-only", help="Serve the dashboard and the read API, no actions."),
    ] = False,
    web_forwarded_allow_ips: Annotated[
        str | None,
        typer.Option(
            "--forwarded-allow-ips",
            metavar="ADDRS",
            help="Reverse proxies (IPs or networks, comma-separated; * for any) whose"
            " X-Forwarded-For/-Proto/-Host or Forwarded headers are believed; default"
            " DUEQUEUE_WEB_FORWARDED_ALLOW_IPS, else none.",
        ),
    ] = None,
) -> None:
    """Serve the web dashboard and the HTTP API (/api/v1/) until SIGTERM.

    Tokens: DUEQUEUE_WEB_TOKEN (everything) and DUEQUEUE_WEB_READ_TOKEN (reads only); without
    a token, this machine only. Behind a TLS-terminating proxy, name it in
    --forwarded-allow-ips.
    """
    # lazy: only serve needs aiohttp's server and the web package; every other command (the app
    # imports this module) would pay for them.
    from duequeue.web import server

    root = ctx.find_root().params

    def make() -> Queue:
        # Refuses a missing database, as `tick` and `worker` do: a server runs unattended (a
        # unit file), so a mistyped path must fail at start, not fill a queue nothing ticks.
        given = (
            {}
            if web_forwarded_allow_ips is None
            else {"web_forwarded_allow_ips": web_forwarded_allow_ips}
        )
        return Queue(root.get("db"), config=root.get("config"), create=False, **given)

    server.serve(make, host, port, read_only=read_only)
