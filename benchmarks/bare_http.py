"""The webhook baseline: a bare aiohttp client POSTing N JSON bodies, `concurrency` at once.

Usage: python -m benchmarks.bare_http URL[,URL...] N CONCURRENCY [TIMEOUT]. Same body size and
header count as a duequeue webhook, no database and no signing: the physical limit of this client
to this sink. Several URLs take the bodies in turn; no bound per host. TIMEOUT (seconds) replaces
the session's default total and connect timeouts (300 s, 30 s) by as many of each: the same
timers, longer, for a run under callgrind (benchmarks/budget.py), 50 times slower.
"""

import asyncio
import json
import sys

import aiohttp


async def post_all(urls: list[str], n: int, concurrency: int, timeout: float | None = None) -> int:
    """POST `n` bodies to `urls` in turn; return how many got a 2xx."""
    slots = asyncio.Semaphore(concurrency)
    ok = 0
    connector = aiohttp.TCPConnector(limit=concurrency)
    timeouts = aiohttp.client.DEFAULT_TIMEOUT
    if timeout is not None:
        timeouts = aiohttp.ClientTimeout(total=timeout, sock_connect=timeout)
    async with aiohttp.ClientSession(connector=connector, timeout=timeouts) as session:

        async def one(i: int) -> None:
            nonlocal ok
            body = json.dumps(
                {
                    "type": "reminder.fired",
                    "timestamp": "2023-11-14T22:13:20.000Z",
                    "data": {
                        "reminder_id": i,
                        "fire_at": "2023-11-14T22:13:20.000Z",
                        "subject": f"Reminder {i}",
                        "body": "Due today",
                        "data": None,
                    },
                },
                separators=(",", ":"),
            ).encode()
            headers = {
                "content-type": "application/json",
                "webhook-id": f"bare_{i}",
                "webhook-timestamp": "1700000000",
            }
            url = urls[i % len(urls)]
            async with slots, session.post(url, data=body, headers=headers) as response:
                await response.read()
                ok += 200 <= response.status < 300

        await asyncio.gather(*(one(i) for i in range(n)))
    return ok


def main() -> None:
    urls, n, concurrency = sys.argv[1].split(","), int(sys.argv[2]), int(sys.argv[3])
    timeout = float(sys.argv[4]) if len(sys.argv) > 4 else None
    ok = asyncio.run(post_all(urls, n, concurrency, timeout))
    print(ok)
    sys.exit(0 if ok == n else 1)


if __name__ == "__main__":
    main()
