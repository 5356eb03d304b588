"""A raw TCP server on 127.0.0.1 whose every connection runs a scripted misbehaviour.

For the faults the real HTTP and SMTP sinks cannot show: a connection reset, a reply dripped
one byte at a time, a body that never ends. Handlers stop when the client goes away or the
server closes.
"""

import contextlib
import socket
import struct
import threading
from collections.abc import Callable, Iterator
from types import TracebackType
from typing import Self

from tests.servers import LOOPBACK

Handler = Callable[[socket.socket, threading.Event], None]


class RawServer:
    """Serve each connection with `handler(conn, stopping)` on its own thread."""

    def __init__(self, handler: Handler) -> None:
        self._handler = handler
        self._stopping = threading.Event()
        self._sock = socket.create_server((LOOPBACK, 0))
        self.port: int = self._sock.getsockname()[1]
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()
        self.connections = 0

    def url(self, scheme: str = "http", path: str = "/") -> str:
        return f"{scheme}://{LOOPBACK}:{self.port}{path}"

    def __enter__(self) -> Self:
        self._sock.settimeout(0.05)
        accept = threading.Thread(target=self._accept, daemon=True)
        accept.start()
        self._threads.append(accept)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stopping.set()
        for thread in list(self._threads):
            thread.join(5)
        self._sock.close()

    def _accept(self) -> None:
        while not self._stopping.is_set():
            try:
                conn, _ = self._sock.accept()
            except TimeoutError:
                continue
            with self._lock:
                self.connections += 1
            thread = threading.Thread(target=self._serve, args=(conn,), daemon=True)
            thread.start()
            self._threads.append(thread)

    def _serve(self, conn: socket.socket) -> None:
        with conn, contextlib.suppress(OSError):
            conn.settimeout(0.05)
            self._handler(conn, self._stopping)


def read_request_head(conn: socket.socket, stopping: threading.Event) -> bytes:
    """Read up to the end of an HTTP request's headers (the body, if any, is ignored)."""
    data = b""
    while b"\r\n\r\n" not in data and not stopping.is_set():
        try:
            chunk = conn.recv(65536)
        except TimeoutError:
            continue
        if not chunk:
            break
        data += chunk
    return data


def reset(conn: socket.socket, stopping: threading.Event) -> None:
    """Read the request, then abort the connection with a TCP reset."""
    read_request_head(conn, stopping)
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


def drip(first: bytes, then: bytes, every: float, http: bool = True) -> Handler:
    """Send `first`, then `then` one byte every `every` seconds, forever."""

    def handle(conn: socket.socket, stopping: threading.Event) -> None:
        if http:
            read_request_head(conn, stopping)
        conn.sendall(first)
        while not stopping.wait(every):
            for byte in then:
                conn.sendall(bytes([byte]))
                if stopping.wait(every):
                    return

    return handle


def endless(head: bytes) -> Handler:
    """Send `head`, then body bytes as fast as the client takes them, until it hangs up."""

    def handle(conn: socket.socket, stopping: threading.Event) -> None:
        read_request_head(conn, stopping)
        conn.sendall(head)
        block = b"x" * 65536
        sent = 0
        while not stopping.is_set() and sent < 1 << 30:
            try:
                sent += conn.send(block)
            except TimeoutError:
                continue

    return handle


@contextlib.contextmanager
def never_accepts() -> Iterator[str]:
    """Yield the URL of a port that listens but never accepts, its accept queue already full.

    Linux drops every further SYN to it (an overflowing listen queue, as on a receiver that
    cannot keep up), so a client's connect hangs until the client gives up: nothing is sent.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.bind((LOOPBACK, 0))
        listener.listen(0)  # room for one connection waiting to be accepted
        port = listener.getsockname()[1]
        # This one takes that place: its connect returns once it is queued.
        with socket.create_connection((LOOPBACK, port), timeout=5):
            yield f"http://{LOOPBACK}:{port}/hook"
