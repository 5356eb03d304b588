"""A loopback SMTP sink (aiosmtpd) for the email benchmark, run as its own process.

Accepts every message; prints its port once listening, then runs until SIGTERM. `STATS` is not
SMTP, so the count is kept where the runner can read it: a `NOOP` reply carries it
("250 OK <messages>"), which smtplib's `noop()` returns.
"""

import asyncio
import signal
import socket

from aiosmtpd.smtp import SMTP, Envelope, Session


class _Counter:
    def __init__(self) -> None:
        self.messages = 0

    async def handle_DATA(self, server: SMTP, session: Session, envelope: Envelope) -> str:
        self.messages += 1
        return "250 OK"


class _CountingSMTP(SMTP):
    counter: _Counter

    async def smtp_NOOP(self, arg: str) -> None:
        await self.push(f"250 OK {self.counter.messages}")


async def serve() -> None:
    """Serve until SIGTERM or SIGINT."""
    counter = _Counter()
    _CountingSMTP.counter = counter
    loop = asyncio.get_running_loop()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    server = await loop.create_server(
        lambda: _CountingSMTP(counter, hostname="sink.invalid"), sock=sock
    )
    print(sock.getsockname()[1], flush=True)
    stop = asyncio.Event()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    loop.add_signal_handler(signal.SIGINT, stop.set)
    await stop.wait()
    server.close()


if __name__ == "__main__":
    asyncio.run(serve())
