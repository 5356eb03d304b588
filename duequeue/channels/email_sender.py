"""The email channel: send messages over one reused SMTP connection, return an Outcome."""

import asyncio
import base64
import contextlib
import email.policy
import re
import smtplib
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from email.message import EmailMessage
from email.utils import format_datetime, parseaddr
from typing import NamedTuple

from duequeue.channels import smtpconnect
from duequeue.channels.base import SENT, Message, Outcome, causes
from duequeue.channels.smtpurl import parse_smtp_url
from duequeue.shared.timefmt import iso, to_ms

_FALLBACK_DOMAIN = "duequeue.invalid"
_DOMAIN = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?$")


def build_email(msg: Message, sender: str, to: str, now: float) -> EmailMessage:
    """Return the email of one message; its Message-ID is stable across retries."""
    mail = EmailMessage()
    mail["From"] = sender
    mail["To"] = to
    # A newline in a header value is an injection vector (and rejected by the policy).
    subject = " ".join(msg.subject.splitlines())
    if "=?" in subject:
        # Text that looks like an RFC 2047 encoded word would be decoded by the receiver (and
        # by the email package, which then re-emits it decoded): send it encoded, as is.
        mail.set_raw("Subject", _encoded_words(subject))
    else:
        mail["Subject"] = subject
    # An aware UTC time gives "+0000"; formatdate's "-0000" means "zone unknown" (RFC 5322).
    mail["Date"] = format_datetime(datetime.fromtimestamp(now, UTC))
    mail["Message-ID"] = f"<{msg.delivery_id}@{_domain_of(sender)}>"
    mail["X-Duequeue-Reminder-Id"] = str(msg.reminder_id)
    mail["X-Duequeue-Fire-At"] = iso(to_ms(msg.fire_at)) or ""
    mail.set_content(msg.body, charset="utf-8")
    return mail


def _encoded_words(text: str) -> str:
    """Return `text` as folded RFC 2047 base64 words that decode to exactly `text`."""
    chunks, chunk = [], ""
    for ch in text:
        # 39 bytes make a 64-character word: "Subject: " and one word fit a 78-character line.
        if len((chunk + ch).encode("utf-8")) > 39:
            chunks.append(chunk)
            chunk = ""
        chunk += ch
    chunks.append(chunk)
    words = (
        "=?utf-8?b?" + base64.b64encode(c.encode("utf-8")).decode("ascii") + "?=" for c in chunks
    )
    return "\n ".join(words)


def _domain_of(sender: str) -> str:
    _local, at, domain = parseaddr(sender)[1].rpartition("@")
    return domain if at and _DOMAIN.match(domain) else _FALLBACK_DOMAIN


class EmailChannel:
    """Deliver messages over one SMTP connection, opened on the first send and then reused.

    smtplib blocks, so every SMTP exchange runs on one dedicated worker thread: sends are
    serialised on the one connection while the event loop stays free for webhooks. A send's
    wait therefore includes the emails queued before it.

    `timeout` bounds one whole attempt (connect, TLS, login, MAIL, RCPT, DATA), not only each
    socket read: a server that drips its replies a byte at a time would otherwise hold a send,
    and the tick's lease, for as long as it likes.
    """

    def __init__(
        self,
        *,
        smtp_url: str,
        sender: str,
        timeout: float,
        clock: Callable[[], float] = time.time,
        smtp_user: str | None = None,
        smtp_password: str | None = None,
    ) -> None:
        self._settings = parse_smtp_url(smtp_url, smtp_user, smtp_password)
        self._sender = sender
        self._envelope_from = parseaddr(sender)[1] or sender
        self._timeout = timeout
        self._clock = clock
        self._executor: ThreadPoolExecutor | None = None
        # Touched only on the worker thread.
        self._conn: smtplib.SMTP | None = None
        self._tls: ssl.SSLContext | None = None
        # The connection an attempt is using, and whether the watchdog cut it; see _bounded.
        self._active: smtplib.SMTP | None = None
        self._expired = False
        # Set once the server refused the login for good; see _login_refused.
        self._refusal: Outcome | None = None
        self._watchdog = _Watchdog(self._expire)

    async def __aenter__(self) -> "EmailChannel":
        """Prepare the worker; connect only when the first message is sent."""
        # The thread itself starts on the first submit, so an email-less tick costs nothing.
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="duequeue-smtp")
        return self

    async def __aexit__(self, *exc: object) -> None:
        """Say QUIT if connected, close the connection and let the worker thread end."""
        executor, self._executor = self._executor, None
        if executor is None:
            return
        try:
            await asyncio.get_running_loop().run_in_executor(executor, self._quit)
        finally:
            # The QUIT above ran last on the single worker, so the thread is idle and exits now.
            executor.shutdown(wait=False)
            self._watchdog.close()

    async def send(self, msg: Message, address: str, secret: str | None = None) -> Outcome:
        """Send one message to `address` and return its outcome; never raise."""
        try:
            executor = self._executor
            if executor is None:
                return Outcome("failed", "email channel used outside 'async with'")
            # Built here, on the event loop, while the worker is still busy with the previous
            # email's round trips: building takes about as long as one of them, and the worker
            # then only waits on the network.
            prepared = self._prepare(msg, address, self._clock())
            if isinstance(prepared, Outcome):
                return prepared
            loop = asyncio.get_running_loop()
            return await loop.run_in_executor(executor, self._deliver, prepared)
        except Exception as exc:  # the channel contract: report, never raise
            return Outcome("failed", self._redact(f"{type(exc).__name__}: {exc}"))

    def _deliver(self, prepared: "_Prepared") -> Outcome:
        if self._refusal is not None:
            return self._refusal
        with self._bounded():
            return self._attempt(prepared)

    @contextlib.contextmanager
    def _bounded(self) -> Iterator[None]:
        """Cut the connection when the attempt outlives the timeout (runs on the worker)."""
        self._expired = False
        self._active = self._conn
        self._watchdog.arm(self._timeout)
        try:
            yield
        finally:
            self._watchdog.disarm()

    def _expire(self) -> bool:
        # Runs on the timer thread. Shutting the socket down wakes the worker's blocked read or
        # write with an error; the attempt then fails as a timeout and the connection is dropped.
        # False when there is no socket yet (the deadline passed while connect() was still
        # making it): the watchdog then tries again shortly, or a server that drips its greeting
        # would hold the attempt for ever.
        self._expired = True
        sock = getattr(self._active, "sock", None)
        if sock is None:
            return False
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)
        return True

    def _prepare(self, msg: Message, address: str, now: float) -> "_Prepared | Outcome":
        """Return the envelope and bytes of one email, or why it can never be sent."""
        recipient = parseaddr(address)[1]
        if not recipient:
            return Outcome("permanent", "invalid email address")
        international = not (self._envelope_from + recipient).isascii()
        try:
            mail = build_email(msg, self._sender, address, now)
            policy = email.policy.SMTPUTF8 if international else email.policy.SMTP
            payload = mail.as_bytes(policy=policy)
        except (TypeError, ValueError) as exc:
            # The same message would fail the same way on every retry.
            return Outcome("permanent", f"cannot build the email: {' '.join(str(exc).split())}")
        return _Prepared(recipient, payload, international)

    def _attempt(self, prepared: "_Prepared") -> Outcome:
        recipient, payload, international = prepared
        options = ("SMTPUTF8", "BODY=8BITMIME") if international else ()
        try:
            return self._transact(recipient, payload, options)
        except smtplib.SMTPNotSupportedError as exc:
            self._drop()
            if international:
                return Outcome("permanent", f"SMTP server cannot take a non-ASCII address: {exc}")
            return Outcome("failed", f"SMTP: {exc}")
        except smtplib.SMTPAuthenticationError as exc:
            self._drop()
            return self._login_refused(exc)
        except Exception as exc:
            # The connection is in an unknown state; the next send starts a fresh one.
            self._drop()
            return Outcome("failed", self._describe(exc))

    def _transact(self, recipient: str, payload: bytes, options: tuple[str, ...]) -> Outcome:
        conn, code, reply = self._mail(options)
        if code != 250:
            return self._refused(conn, "sender", code, reply)
        code, reply = conn.rcpt(recipient)
        if code not in (250, 251):
            return self._refused(conn, "recipient", code, reply)
        try:
            code, reply = conn.data(payload)
        except smtplib.SMTPDataError as exc:
            # The DATA command itself was refused: nothing of the message was sent.
            return self._refused(conn, "message", exc.smtp_code, exc.smtp_error)
        except (smtplib.SMTPServerDisconnected, OSError) as exc:
            # Never resend after DATA started: the server may have queued the message already.
            self._drop()
            return Outcome("failed", f"{self._describe(exc)} (during DATA; delivery unknown)")
        if code != 250:
            return self._refused(conn, "message", code, reply)
        return SENT

    def _mail(self, options: tuple[str, ...]) -> tuple[smtplib.SMTP, int, bytes]:
        reused = self._conn is not None
        conn = self._connection()
        try:
            code, reply = conn.mail(self._envelope_from, options)
        except (smtplib.SMTPServerDisconnected, ConnectionError) as exc:
            if not reused or _timed_out(exc):
                raise
            code, reply = 421, b""
        if code == 421 and reused:
            # The server dropped the idle connection. It accepted nothing of this message yet,
            # so trying once more on a fresh connection cannot deliver it twice.
            self._drop()
            conn = self._connection()
            code, reply = conn.mail(self._envelope_from, options)
        return conn, code, reply

    def _connection(self) -> smtplib.SMTP:
        if self._conn is not None:
            return self._conn
        context = self._tls_context()
        conn = smtpconnect.client(self._settings, self._timeout, context)
        # Known to the watchdog before its first read: a silent server is cut, too.
        self._active = conn
        smtpconnect.establish(conn, self._settings, context)
        self._conn = conn
        return conn

    def _tls_context(self) -> ssl.SSLContext:
        if self._tls is None:
            self._tls = smtpconnect.tls_context()
        return self._tls

    def _login_refused(self, exc: smtplib.SMTPAuthenticationError) -> Outcome:
        # A refused password (535, or any 5xx) does not fix itself within the backoff, and
        # logging in again for every email can get the account or the host locked out: the
        # refusal is permanent and answers the rest of this channel's emails (one batch of a
        # tick) without another login. A 4xx (454: the provider's auth service is down) is
        # retried as usual.
        error = self._describe(exc)
        if 500 <= exc.smtp_code < 600:
            self._refusal = Outcome("permanent", error)
            return self._refusal
        return Outcome("failed", error)

    def _refused(self, conn: smtplib.SMTP, what: str, code: int, reply: bytes | str) -> Outcome:
        error = f"{what} {'refused' if code >= 500 else 'deferred'}: {code} {_text(reply)}"
        if code == 421 or not 400 <= code < 600:
            # 421 means the server is closing the connection; anything else is not SMTP.
            self._drop()
        else:
            try:
                # Clear the half-done transaction so the connection serves the next message.
                conn.rset()
            except (smtplib.SMTPException, OSError):
                self._drop()
        return Outcome("permanent" if 500 <= code < 600 else "failed", self._redact(error.strip()))

    def _drop(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()

    def _quit(self) -> None:
        conn, self._conn = self._conn, None
        if conn is None:
            return
        try:
            with self._bounded():
                self._active = conn
                conn.quit()
        except (smtplib.SMTPException, OSError):
            pass
        finally:
            conn.close()

    def _describe(self, exc: BaseException) -> str:
        settings = self._settings
        where = f"{settings.host}:{settings.port}"
        if self._expired or _timed_out(exc):
            return f"SMTP timeout after {self._timeout:g}s ({where})"
        if isinstance(exc, smtplib.SMTPAuthenticationError):
            detail = self._redact(f"{exc.smtp_code} {_text(exc.smtp_error)}")
            return f"SMTP authentication failed for user {settings.user} ({where}): {detail}"
        if isinstance(exc, smtplib.SMTPConnectError):
            return f"SMTP server refused the connection: {exc.smtp_code} {_text(exc.smtp_error)}"
        if isinstance(exc, smtplib.SMTPResponseException):
            return self._redact(f"SMTP error: {exc.smtp_code} {_text(exc.smtp_error)}")
        if isinstance(exc, ConnectionRefusedError):
            return f"SMTP connection refused ({where})"
        if isinstance(exc, socket.gaierror):
            return f"SMTP host lookup failed for {settings.host}: {exc.strerror}"
        if isinstance(exc, ssl.SSLCertVerificationError):
            return f"SMTP TLS certificate not accepted ({where}): {exc.verify_message}"
        if isinstance(exc, ssl.SSLError):
            return f"SMTP TLS error ({where}): {exc}"
        if isinstance(exc, smtplib.SMTPServerDisconnected):
            return f"SMTP connection lost ({where}): {exc}"
        if isinstance(exc, OSError):
            return f"SMTP connection error ({where}): {exc}"
        return self._redact(f"{type(exc).__name__}: {exc}")

    def _redact(self, text: str) -> str:
        text = " ".join(text.split())
        settings = self._settings
        password = settings.password
        # A very short password would match everywhere; such a value cannot be hidden this way.
        if not password or len(password) < 4:
            return text
        # Also what AUTH PLAIN and AUTH LOGIN put on the wire: a server that echoes the command
        # in its error reply would otherwise leak the password in base64.
        wire = (f"\0{settings.user or ''}\0{password}", password)
        forms = [password, *(base64.b64encode(w.encode()).decode() for w in wire)]
        for form in sorted(forms, key=len, reverse=True):
            text = text.replace(form, "***")
        return text


class _Prepared(NamedTuple):
    """One email ready for the wire: envelope recipient, bytes, and whether it needs SMTPUTF8."""

    recipient: str
    payload: bytes
    international: bool


class _Watchdog:
    """One thread for the channel's life that cuts an attempt outliving its deadline.

    A threading.Timer per message started a thread per email, and waking a thread on every
    arm cost nearly as much. Attempts run one at a time on the worker, so one deadline is kept;
    arming only wakes the thread when it would otherwise sleep past the new deadline (while
    emails flow it sleeps a whole timeout, then re-checks the latest deadline).
    """

    def __init__(self, on_expire: Callable[[], bool]) -> None:
        self._on_expire = on_expire
        self._cond = threading.Condition()
        self._deadline: float | None = None
        self._wake_at: float | None = None  # when the sleeping thread next looks; None: never
        self._closed = False
        self._thread: threading.Thread | None = None

    def arm(self, seconds: float) -> None:
        """Expire `seconds` from now unless disarmed first."""
        with self._cond:
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="duequeue-smtp-watchdog", daemon=True
                )
                self._thread.start()
            self._deadline = time.monotonic() + seconds
            if self._wake_at is None or self._wake_at > self._deadline:
                self._cond.notify()

    def disarm(self) -> None:
        """Cancel the pending deadline (the thread notices when it next wakes)."""
        with self._cond:
            self._deadline = None

    def close(self) -> None:
        """Stop the thread."""
        with self._cond:
            self._closed = True
            self._cond.notify()
            thread, self._thread = self._thread, None
        if thread is not None:
            thread.join()

    def _run(self) -> None:
        with self._cond:
            while not self._closed:
                if self._deadline is None:
                    self._wake_at = None
                    self._cond.wait()
                    continue
                left = self._deadline - time.monotonic()
                if left > 0:
                    self._wake_at = self._deadline
                    self._cond.wait(left)
                    continue
                if self._on_expire():
                    self._deadline = None
                else:
                    self._deadline = time.monotonic() + _RETRY_CUT_S


_RETRY_CUT_S = 0.05  # how soon the watchdog looks again for a socket it could not cut yet


def _timed_out(exc: BaseException) -> bool:
    # smtplib wraps a read timeout into SMTPServerDisconnected; the cause chain keeps it.
    return any(isinstance(e, TimeoutError) for e in causes(exc))


def _text(reply: bytes | str) -> str:
    text = reply.decode("utf-8", errors="replace") if isinstance(reply, bytes) else reply
    return " ".join(text.split())
