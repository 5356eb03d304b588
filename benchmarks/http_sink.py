"""A fast loopback HTTP sink for the webhook benchmark, run as its own process.

Answers every POST with 204; `GET /stats` answers `<requests> <distinct webhook-ids>`. Prints its
port on stdout once listening and runs until SIGTERM.
"""

import asyncio
import signal
import socket

from aiohttp import web


async def serve() -> None:
    """Serve until SIGTERM or SIGINT."""
    seen: set[str] = set()
    count = 0

    async def hook(request: web.Request) -> web.Response:
        nonlocal count
        await request.read()
        count += 1
        seen.add(request.headers.get("webhook-id", ""))
        return web.Response(status=204)

    async def stats(request: web.Request) -> web.Response:
        return web.Response(text=f"{count} {len(seen)}")

    app = web.Application()
    app.router.add_get("/stats", stats)
    app.router.add_post("/{tail:.*}", hook)
    runner = web.AppRunner(app, access_log=None, handle_signals=False)
    await runner.setup()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    site = web.SockSite(runner, sock, backlog=1024)
    await site.start()
    print(sock.getsockname()[1], flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    loop.add_signal_handler(signal.SIGINT, stop.set)
    await stop.wait()
    await runner.cleanup()


if __name__ == "__main__":
    asyncio.run(serve())
