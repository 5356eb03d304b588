"""Real loopback servers for tests: an SMTP sink (aiosmtpd) and an HTTP sink (stdlib).

Both bind 127.0.0.1 only, on an ephemeral port, serve from background threads, record what they
receive in thread-safe lists and shut down cleanly when used as context managers:

    with SmtpSink(refuse={"bad@example.com"}) as smtp, HttpSink() as http:
        http.respond("/hook", Reply(503, headers={"Retry-After": "60"}))
        ...  # point duequeue at smtp.url and http.url("/hook")
        assert smtp.messages[0]["Subject"] == "Pay rent"
        assert http.requests_for("/hook")[0].headers["webhook-id"] == "dq_1_..."

End-to-end tests import these classes; keep their names and attributes stable.
"""

import asyncio
import contextlib
import email.policy
import socket
import ssl
import struct
import sys
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from email.message import EmailMessage
from email.parser import BytesParser
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import SMTP, AuthResult, Envelope, LoginPassword, Session

LOOPBACK = "127.0.0.1"
_WAIT = 5.0  # the longest any helper waits for a server thread before failing the test


def free_port() -> int:
    """Return a TCP port on 127.0.0.1 that was free a moment ago (nothing listens on it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((LOOPBACK, 0))
        port: int = sock.getsockname()[1]
        return port


# --------------------------------------------------------------------------------------------
# SMTP


class ReceivedMessage(EmailMessage):
    """An email the SMTP sink accepted, parsed, with its SMTP envelope."""

    mail_from: str
    rcpt_tos: list[str]
    raw: bytes  # as received, CRLF line ends
    tls: bool  # whether it arrived over TLS (STARTTLS or implicit)


class SmtpSink:
    """An aiosmtpd server on 127.0.0.1 that records accepted mail.

    - `refuse`: recipients answered `550` at RCPT (case-insensitive).
    - `defer`: a message to any of these recipients is answered `451` at the end of DATA.
    - `reject`: a message to any of these recipients is answered `554` at the end of DATA.
    - `hang_up`: for a message to any of these, the server closes the connection after the
      message data arrived, without a reply (the client cannot know whether it was delivered).
    - `hold`: a message to any of these is never answered after its data arrived; the
      connection stays open until `stop()` or `drop_connections()` (a server dying mid-send).
    - `credentials`: `(user, password)`; when given, MAIL needs AUTH first (PLAIN/LOGIN, no TLS
      unless `starttls` or `implicit_tls` is given).
    - `auth_mechanisms`: offer only these of aiosmtpd's AUTH mechanisms (`PLAIN`, `LOGIN`).
    - `auth_refusal`: the reply to a refused AUTH (default aiosmtpd's `535 5.7.8 ...`).
    - `starttls`: a server context; the sink then offers STARTTLS and requires it before AUTH
      and MAIL (port 587 style). `url` becomes `smtp+starttls://`.
    - `implicit_tls`: a server context; the sink speaks TLS from the first byte (port 465
      style). `url` becomes `smtps://`.
    - `port`: a fixed port; by default a free ephemeral one, kept across `stop()` / `start()`.

    `messages` are `ReceivedMessage`s (an EmailMessage, LF line ends, plus `mail_from`,
    `rcpt_tos` and the CRLF `raw` bytes);
    `connections` counts client connections; `data_attempts` counts message transfers (DATA
    completed, whatever the answer); `logins` lists users that authenticated; `auth_failures`
    counts refused AUTH attempts.
    `stop()` takes the server down (connection refused from then on, open connections dropped);
    `start()` brings it back on the same port; `drop_connections()` closes every open client
    connection from the server side, as an idle timeout would.
    """

    def __init__(
        self,
        *,
        refuse: Iterable[str] = (),
        defer: Iterable[str] = (),
        reject: Iterable[str] = (),
        hang_up: Iterable[str] = (),
        hold: Iterable[str] = (),
        credentials: tuple[str, str] | None = None,
        auth_mechanisms: Iterable[str] = ("PLAIN", "LOGIN"),
        auth_refusal: str | None = None,
        starttls: ssl.SSLContext | None = None,
        implicit_tls: ssl.SSLContext | None = None,
        port: int | None = None,
    ) -> None:
        self.refuse = frozenset(a.lower() for a in refuse)
        self.defer = frozenset(a.lower() for a in defer)
        self.reject = frozenset(a.lower() for a in reject)
        self.hang_up = frozenset(a.lower() for a in hang_up)
        self.hold = frozenset(a.lower() for a in hold)
        self.credentials = credentials
        self.auth_mechanisms = frozenset(m.upper() for m in auth_mechanisms)
        self.auth_refusal = auth_refusal
        self.starttls = starttls
        self.implicit_tls = implicit_tls
        self.port = port if port is not None else free_port()
        self._lock = threading.Condition()
        self._messages: list[ReceivedMessage] = []
        self._logins: list[str] = []
        self._auth_failures = 0
        self._connections = 0
        self._data_attempts = 0
        self._counting = False
        self._live: dict[SMTP, asyncio.BaseTransport] = {}
        self._controller: _SinkController | None = None

    @property
    def url(self) -> str:
        """Return the `smtp://127.0.0.1:PORT` URL of the sink (`smtps://`, `smtp+starttls://`)."""
        scheme = "smtps" if self.implicit_tls else "smtp+starttls" if self.starttls else "smtp"
        return f"{scheme}://{LOOPBACK}:{self.port}"

    @property
    def messages(self) -> list[ReceivedMessage]:
        """Return a snapshot of the accepted messages, oldest first."""
        with self._lock:
            return list(self._messages)

    @property
    def connections(self) -> int:
        """Return how many client connections were opened since the first start."""
        with self._lock:
            return self._connections

    @property
    def data_attempts(self) -> int:
        """Return how many messages were transferred, accepted or not."""
        with self._lock:
            return self._data_attempts

    @property
    def logins(self) -> list[str]:
        """Return the users that authenticated, one entry per successful AUTH."""
        with self._lock:
            return list(self._logins)

    @property
    def auth_failures(self) -> int:
        """Return how many AUTH attempts the sink refused."""
        with self._lock:
            return self._auth_failures

    @property
    def running(self) -> bool:
        """Return whether the server is listening."""
        return self._controller is not None

    def start(self) -> Self:
        """Start listening (again) on `self.port`."""
        if self._controller is not None:
            return self
        kwargs: dict[str, Any] = {}
        if self.credentials is not None:
            # auth_required=True would make aiosmtpd warn on every connection (AUTH without
            # TLS); handle_MAIL enforces the login instead. With STARTTLS, aiosmtpd offers AUTH
            # only after it; it cannot tell an implicit-TLS connection is encrypted.
            kwargs.update(authenticator=self._authenticate, auth_require_tls=bool(self.starttls))
            kwargs.update(auth_exclude_mechanism={"PLAIN", "LOGIN"} - self.auth_mechanisms)
        if self.starttls is not None:
            kwargs.update(tls_context=self.starttls, require_starttls=True)
        if self.implicit_tls is not None:
            kwargs.update(ssl_context=self.implicit_tls)
        controller = _SinkController(self, **kwargs)
        with self._lock:
            self._counting = False
        controller.start()
        # Controller.start() opens one probe connection of its own; it is done by now.
        with self._lock:
            self._counting = True
        self._controller = controller
        return self

    def stop(self) -> None:
        """Take the server down: drop open connections and stop listening."""
        controller, self._controller = self._controller, None
        if controller is None:
            return
        # Stop listening before dropping: a client connecting in between would be accepted,
        # never greeted and left to time out, where it should find the port closed.
        server = controller.server
        if server is not None:
            asyncio.run_coroutine_threadsafe(_close(server), controller.loop).result(_WAIT)
        self._drop(controller)
        controller.stop()

    def drop_connections(self) -> None:
        """Close every open client connection from the server side; return once all are closed."""
        if self._controller is not None:
            self._drop(self._controller)

    def wait_for_data_attempts(self, count: int, timeout: float = _WAIT) -> int:
        """Return once at least `count` message transfers arrived; fail after `timeout`."""
        with self._lock:
            if not self._lock.wait_for(lambda: self._data_attempts >= count, timeout):
                raise AssertionError(f"expected {count} transfers, got {self._data_attempts}")
            return self._data_attempts

    def wait_for_messages(self, count: int, timeout: float = _WAIT) -> list[ReceivedMessage]:
        """Return the messages once at least `count` arrived; fail after `timeout` seconds."""
        with self._lock:
            if not self._lock.wait_for(lambda: len(self._messages) >= count, timeout):
                raise AssertionError(f"expected {count} messages, got {len(self._messages)}")
            return list(self._messages)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def _drop(self, controller: "_SinkController") -> None:
        with self._lock:
            transports = list(self._live.values())
        for transport in transports:
            controller.loop.call_soon_threadsafe(transport.close)
        with self._lock:
            if not self._lock.wait_for(lambda: not self._live, _WAIT):
                raise AssertionError("SMTP sink: open connections did not close")

    def _opened(self, protocol: SMTP, transport: asyncio.BaseTransport) -> None:
        with self._lock:
            self._live[protocol] = transport
            if self._counting:
                self._connections += 1

    def _closed(self, protocol: SMTP) -> None:
        with self._lock:
            self._live.pop(protocol, None)
            self._lock.notify_all()

    def _authenticate(
        self,
        server: SMTP,
        session: Session,
        envelope: Envelope,
        mechanism: str,
        auth_data: object,
    ) -> AuthResult:
        ok = (
            self.credentials is not None
            and isinstance(auth_data, LoginPassword)
            and (auth_data.login.decode(), auth_data.password.decode()) == self.credentials
        )
        with self._lock:
            if ok:
                self._logins.append(self.credentials[0] if self.credentials else "")
            else:
                self._auth_failures += 1
        # handled=False: let aiosmtpd answer (535 unless told) itself (True: "I already replied").
        return AuthResult(success=ok, handled=False, message=None if ok else self.auth_refusal)

    # aiosmtpd handler hooks (looked up by name on the handler object, which is the sink).

    async def handle_MAIL(
        self,
        server: SMTP,
        session: Session,
        envelope: Envelope,
        address: str,
        mail_options: list[str],
    ) -> str:
        if self.credentials is not None and not session.authenticated:
            return "530 5.7.0 Authentication required"
        envelope.mail_from = address
        envelope.mail_options.extend(mail_options)
        return "250 OK"

    async def handle_RCPT(
        self,
        server: SMTP,
        session: Session,
        envelope: Envelope,
        address: str,
        rcpt_options: list[str],
    ) -> str:
        if address.lower() in self.refuse:
            return "550 5.1.1 Mailbox unavailable"
        envelope.rcpt_tos.append(address)
        return "250 2.1.5 OK"

    async def handle_DATA(self, server: SMTP, session: Session, envelope: Envelope) -> str:
        recipients = {r.lower() for r in envelope.rcpt_tos}
        with self._lock:
            self._data_attempts += 1
            self._lock.notify_all()
        if recipients & self.hold:
            await asyncio.get_running_loop().create_future()  # cancelled when the link drops
        if recipients & self.hang_up:
            assert server.transport is not None
            server.transport.close()
            # Never answer; connection_lost cancels this coroutine.
            await asyncio.get_running_loop().create_future()
        if recipients & self.defer:
            return "451 4.3.0 Try again later"
        if recipients & self.reject:
            return "554 5.6.0 Message rejected"
        raw = envelope.original_content or b""
        # SMTP carries CRLF; tests compare with Python strings, which use LF.
        parsed = BytesParser(ReceivedMessage, policy=email.policy.default).parsebytes(
            raw.replace(b"\r\n", b"\n")
        )
        assert isinstance(parsed, ReceivedMessage)
        parsed.raw = raw
        parsed.mail_from = envelope.mail_from or ""
        parsed.rcpt_tos = list(envelope.rcpt_tos)
        parsed.tls = server.transport is not None and bool(
            server.transport.get_extra_info("ssl_object")
        )
        with self._lock:
            self._messages.append(parsed)
            self._lock.notify_all()
        return "250 2.0.0 OK"


async def _close(server: asyncio.AbstractServer) -> None:
    # On the server's loop: close() shuts the listening sockets before it returns.
    server.close()


class _SinkSMTP(SMTP):
    """An aiosmtpd protocol that reports its connection to the sink."""

    def __init__(self, sink: SmtpSink, handler: Any, **kwargs: Any) -> None:
        super().__init__(handler, **kwargs)
        self._sink = sink

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        starttls = self.transport is not None
        super().connection_made(transport)
        if not starttls:
            self._sink._opened(self, transport)

    def connection_lost(self, error: Exception | None) -> None:
        try:
            super().connection_lost(error)
        finally:
            self._sink._closed(self)


class _SinkController(Controller):
    def __init__(self, sink: SmtpSink, **kwargs: Any) -> None:
        super().__init__(sink, hostname=LOOPBACK, port=sink.port, **kwargs)
        self._sink = sink

    def factory(self) -> SMTP:
        return _SinkSMTP(self._sink, self.handler, **self.SMTP_kwargs)


# --------------------------------------------------------------------------------------------
# HTTP


@dataclass(frozen=True)
class Reply:
    """One scripted HTTP answer.

    `hang`: hold the request unanswered until the sink closes. `hang_mid_body`: send the status,
    the headers and `body`, announce one byte more than that, then hold until the sink closes.
    `hold`: answer normally, but only once `HttpSink.release()` is called (or the sink closes).
    `delay`: answer normally after this many seconds (a slow receiver).
    `reset`: read the request, then drop the connection with a TCP reset, answering nothing.
    """

    status: int = 200
    headers: Mapping[str, str] = field(default_factory=dict)
    body: bytes = b""
    hang: bool = False
    hang_mid_body: bool = False
    hold: bool = False
    delay: float = 0.0
    reset: bool = False


@dataclass(frozen=True)
class RecordedRequest:
    """One request the HTTP sink received; header names are lower-cased."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    client_port: int


class HttpSink:
    """A threaded HTTP/1.1 server on 127.0.0.1 that records requests and answers as scripted.

    Unscripted paths get `200 ok`. `respond(path, *replies)` scripts a path: the replies are used
    in order and the last one repeats. Paths are matched exactly, query string included.
    `requests` / `requests_for(path)` return snapshots; `client_port` tells connections apart.
    With `tls` (a server context) it speaks HTTPS, and `url` says so. `port` 0 is any free one.
    """

    def __init__(self, tls: ssl.SSLContext | None = None, port: int = 0) -> None:
        self.tls = tls
        self._port = port  # 0: any free port
        self._lock = threading.Condition()
        self._requests: list[RecordedRequest] = []
        self._replies: dict[str, list[Reply]] = {}
        self._released = threading.Event()
        self._go = threading.Event()
        self._open: set[socket.socket] = set()
        self._server: _HttpServer | None = None
        self._thread: threading.Thread | None = None
        self.port = 0

    def url(self, path: str = "/") -> str:
        """Return the absolute URL of `path` on this sink."""
        return f"{'https' if self.tls else 'http'}://{LOOPBACK}:{self.port}{path}"

    def respond(self, path: str, *replies: Reply) -> None:
        """Script the answers for `path`: in order, the last one repeating."""
        if not replies:
            raise ValueError("respond() needs at least one Reply")
        with self._lock:
            self._replies[path] = list(replies)

    def release(self) -> None:
        """Let requests held by `Reply(hold=True)` be answered, now and from now on."""
        self._go.set()

    @property
    def requests(self) -> list[RecordedRequest]:
        """Return a snapshot of every request received, oldest first."""
        with self._lock:
            return list(self._requests)

    def requests_for(self, path: str) -> list[RecordedRequest]:
        """Return a snapshot of the requests received for `path`."""
        with self._lock:
            return [r for r in self._requests if r.path == path]

    def wait_for_requests(self, count: int, timeout: float = _WAIT) -> list[RecordedRequest]:
        """Return the requests once at least `count` arrived; fail after `timeout` seconds."""
        with self._lock:
            if not self._lock.wait_for(lambda: len(self._requests) >= count, timeout):
                raise AssertionError(f"expected {count} requests, got {len(self._requests)}")
            return list(self._requests)

    def start(self) -> Self:
        """Start serving in a background thread."""
        if self._server is not None:
            return self
        self._released.clear()
        server = _HttpServer(self, self._port)
        if self.tls is not None:
            server.socket = self.tls.wrap_socket(server.socket, server_side=True)
        self.port = server.server_address[1]
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )
        self._thread.start()
        return self

    def close(self) -> None:
        """Release hanging requests, close open connections and stop the server."""
        server, self._server = self._server, None
        if server is None:
            return
        self._released.set()
        self._go.set()
        server.shutdown()
        with self._lock:
            sockets = list(self._open)
        for sock in sockets:
            # Wakes handler threads blocked reading a kept-alive connection or writing a body.
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        server.server_close()  # joins the handler threads
        if self._thread is not None:
            self._thread.join(_WAIT)
            self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _record(self, request: RecordedRequest) -> Reply:
        with self._lock:
            self._requests.append(request)
            self._lock.notify_all()
            script = self._replies.get(request.path)
            if not script:
                return Reply(200, body=b"ok")
            return script.pop(0) if len(script) > 1 else script[0]

    def _track(self, sock: socket.socket, is_open: bool) -> None:
        with self._lock:
            if is_open:
                self._open.add(sock)
            else:
                self._open.discard(sock)


class _HttpServer(ThreadingHTTPServer):
    # Non-daemon handler threads so that server_close() joins them: nothing outlives the sink.
    daemon_threads = False
    block_on_close = True
    # The stdlib default of 5 drops the SYNs of many concurrent clients, which then wait a
    # second or more to retry: fault tests open dozens of connections at once.
    request_queue_size = 256

    def __init__(self, sink: HttpSink, port: int = 0) -> None:
        super().__init__((LOOPBACK, port), _HttpHandler)
        self.sink = sink

    def process_request(self, request: Any, client_address: Any) -> None:
        # Headers and body go out in two writes; without NODELAY the second one waits for the
        # client's delayed ACK (~40 ms per request on Linux).
        request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sink._track(request, True)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        self.sink._track(request, False)
        super().shutdown_request(request)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that hangs up mid-answer (a timeout, a capped read) is expected here.
        if isinstance(sys.exc_info()[1], OSError):
            return
        super().handle_error(request, client_address)


class _HttpHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, so clients can pool connections
    server: _HttpServer

    def _serve(self) -> None:
        sink = self.server.sink
        headers: dict[str, str] = {}
        for name, value in self.headers.items():
            key = name.lower()
            headers[key] = f"{headers[key]}, {value}" if key in headers else value
        request = RecordedRequest(
            self.command, self.path, headers, self._read_body(), self.client_address[1]
        )
        reply = sink._record(request)
        if reply.reset:
            # Linger 0: closing sends RST, not FIN; the socket really closes once the handler's
            # files are closed, before socketserver's shutdown_request (which then finds it gone).
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.connection.close()
            self.close_connection = True
            return
        if reply.hang:
            sink._released.wait()
            self.close_connection = True
            return
        if reply.hold:
            sink._go.wait()
        if reply.delay:
            sink._released.wait(reply.delay)
        self.send_response(reply.status)
        for name, value in reply.headers.items():
            self.send_header(name, value)
        if not any(name.lower() == "content-length" for name in reply.headers):
            extra = 1 if reply.hang_mid_body else 0
            self.send_header("Content-Length", str(len(reply.body) + extra))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(reply.body)
        if reply.hang_mid_body:
            self.wfile.flush()
            sink._released.wait()
            self.close_connection = True

    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks: list[bytes] = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass  # trailers
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = _serve

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep test output clean; the sink records everything worth asserting on
