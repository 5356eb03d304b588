"""The webhook baseline: a bare aiohttp client POSTing N JSON bodies, `concurrency` at once.

Usage: python -m benchmarks.bare_http URL[,URL...] N CONCURRENCY. Same body size and header
count as a duequeue webhook, no database and no signing: the physical limit of this client to
this sink. Several URLs take the bodies in turn; no bound per host.
"""

import asyncio
import json
import sys

import aiohttp


async def post_all(urls: list[str], n: int, concurrency: int) -> int:
    """POST `n` bodies to `urls` in turn; return how many got a 2xx."""
    slots = asyncio.Semaphore(concurrency)
    ok = 0
    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector) as session:

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
    ok = asyncio.run(post_all(urls, n, concurrency))
    print(ok)
    sys.exit(0 if ok == n else 1)


if __name__ == "__main__":
    main()
