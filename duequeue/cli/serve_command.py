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
) -> None:
    """Serve the web dashboard and the HTTP API (/api/v1/) until SIGTERM."""
    # lazy: only serve needs aiohttp's server and the web package; every other command (the app
    # imports this module) would pay for them.
    from duequeue.web import server

    root = ctx.find_root().params

    def make() -> Queue:
        # Creates a missing database, as `add` and `worker` do: serve takes adds too.
        return Queue(root.get("db"), config=root.get("config"), create=True)

    server.serve(make, host, port, read_only=read_only)
