"""A fast loopback HTTP sink for the webhook benchmark, run as its own process.

Answers every POST with 204; `GET /stats` answers `<requests> <distinct webhook-ids>`, counted
over all its ports. `python -m benchmarks.http_sink [PORTS]` listens on PORTS ports (default 1:
many distinct receivers, as far as a client's per-host bound can tell), prints them on one line
once listening and runs until SIGTERM.
"""

import asyncio
import signal
import socket
import sys

from aiohttp import web


async def serve(ports: int) -> None:
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
    bound = []
    for _ in range(ports):
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind(("127.0.0.1", 0))
        await web.SockSite(runner, sock, backlog=1024).start()
        bound.append(str(sock.getsockname()[1]))
    print(" ".join(bound), flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    loop.add_signal_handler(signal.SIGINT, stop.set)
    await stop.wait()
    await runner.cleanup()


if __name__ == "__main__":
    asyncio.run(serve(int(sys.argv[1]) if len(sys.argv) > 1 else 1))
