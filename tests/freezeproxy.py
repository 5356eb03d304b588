"""A TCP proxy on loopback that can be frozen: a network cut that no timeout of TCP notices.

Put between duequeue and PostgreSQL, it forwards bytes both ways until freeze(); from then on it
keeps every socket open and reads what comes, but forwards nothing in either direction: the
client's writes are acknowledged by the proxy's kernel, so keepalives and tcp_user_timeout never
fire, and a query simply never gets its answer. That is the hang a tick's deadline must end.
"""

import asyncio
import threading
from typing import Self
from urllib.parse import urlsplit

LOOPBACK = "127.0.0.1"


class FreezeProxy:
    """A proxy to `upstream` (host, port), served on its own event loop thread."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self.port = 0
        self.frozen = threading.Event()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()

    @classmethod
    def to_url(cls, url: str) -> "FreezeProxy":
        """Return a proxy to the server a postgresql:// URL names."""
        parts = urlsplit(url)
        return cls((parts.hostname or LOOPBACK, parts.port or 5432))

    def url(self, url: str) -> str:
        """Return `url` pointing at this proxy instead of its server."""
        parts = urlsplit(url)
        netloc = f"{parts.username}@" if parts.username else ""
        return parts._replace(netloc=f"{netloc}{LOOPBACK}:{self.port}").geturl()

    def freeze(self) -> None:
        """Stop forwarding, now and for every connection made later; keep the sockets open."""
        self.frozen.set()

    def __enter__(self) -> Self:
        self._thread.start()
        started = asyncio.run_coroutine_threadsafe(self._start(), self._loop)
        started.result(timeout=10)
        return self

    def __exit__(self, *exc: object) -> None:
        asyncio.run_coroutine_threadsafe(self._stop(), self._loop).result(timeout=10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._loop.close()

    async def _start(self) -> None:
        self._server = await asyncio.start_server(self._client, LOOPBACK, 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def _stop(self) -> None:
        assert self._server is not None
        self._server.close()
        for writer in list(self._writers):
            writer.close()
        await self._server.wait_closed()

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.add(writer)
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.upstream)
        except OSError:
            writer.close()
            return
        self._writers.add(up_writer)
        await asyncio.gather(
            self._pipe(reader, up_writer),
            self._pipe(up_reader, writer),
            return_exceptions=True,
        )

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while data := await reader.read(65536):
            if self.frozen.is_set():
                continue  # swallowed: the cut
            writer.write(data)
            await writer.drain()
        writer.close()
