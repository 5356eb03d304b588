"""The notify channel's sending: Apprise's blocking calls on a few threads of their own.

Apprise's calls block (requests underneath), so each send runs on a small pool of threads of
its own, never on the tick's event loop. A send waits for a free thread before its timer starts
(the wait is not counted against the attempt), and a thread counts as busy until its call has
really returned, even after the tick stopped waiting for it: a slow service holds its own
threads, never the loop or the other channels. Apprise's own connect and read timeouts are set
to the channel's, so a call ends on its own; the channel's wait on it is the attempt's bound.

Apprise returns only True or False; why a send failed is in what it logs. A handler on the
`apprise` logger keeps each thread's warnings apart, and the send's outcome quotes them
(redacted: Apprise URLs carry tokens). An HTTP 4xx that cannot pass on a retry is `permanent`,
like a webhook's, and so is an MQTT login the broker refuses, like SMTP's; everything else is
`failed` and retried on the backoff table.
"""

import asyncio
import logging
import re
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from duequeue.channels.apprise_urls import (
    INSTALL_HINT,
    WORKERS,
    MissingExtraError,
    apprise_module,
    instantiate,
)
from duequeue.channels.base import SENT, TRANSIENT_4XX, Message, Outcome
from duequeue.shared import redact

# Apprise's HTTP plugins end a failure's message with ", error=503." (their status code).
_STATUS = re.compile(r"error=(\d{3})\b")
_MAX_ERROR = 300


class _PerThread(logging.Handler):
    """Keep the warnings Apprise logs, by the thread that logged them."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self._found: dict[int, list[str]] = {}
        self._found_lock = threading.Lock()

    def emit(self, record: logging.LogRecord) -> None:
        with self._found_lock:
            self._found.setdefault(record.thread or 0, []).append(record.getMessage())

    def take(self) -> list[str]:
        with self._found_lock:
            return self._found.pop(threading.get_ident(), [])


class NotifyChannel:
    """Deliver messages to Apprise URLs; use as `async with NotifyChannel(...) as channel:`."""

    def __init__(
        self,
        *,
        timeout: float,
        workers: int = WORKERS,
        with_data: bool = False,
        refuse: str | None = None,
    ) -> None:
        self._timeout = timeout
        self._refuse = refuse  # why every send is refused for good (the private-address block)
        self._workers = workers
        self._with_data = with_data
        self._apprise: Any = None
        self._pool: ThreadPoolExecutor | None = None
        self._free: asyncio.Semaphore | None = None
        self._handler = _PerThread()
        self._propagate = True

    async def __aenter__(self) -> "NotifyChannel":
        try:
            self._apprise = apprise_module()
        except MissingExtraError:
            self._apprise = None  # every send fails, recorded and retried, until it is installed
        self._pool = ThreadPoolExecutor(self._workers, thread_name_prefix="duequeue-notify")
        self._free = asyncio.Semaphore(self._workers)
        logger = logging.getLogger("apprise")
        logger.addHandler(self._handler)
        # Apprise's messages may quote a token; this channel reports them, redacted, instead of
        # letting them reach the root logger (or stderr, through logging's last resort).
        self._propagate, logger.propagate = logger.propagate, False
        return self

    async def __aexit__(self, *exc: object) -> None:
        logger = logging.getLogger("apprise")
        logger.removeHandler(self._handler)
        logger.propagate = self._propagate
        pool, self._pool = self._pool, None
        if pool is not None:
            # A call still running past its timeout is not waited for here; Apprise's own
            # timeouts end it, and the interpreter joins its thread at exit.
            pool.shutdown(wait=False, cancel_futures=True)

    async def send(self, msg: Message, url: str, secret: str | None = None) -> Outcome:
        """Send one message to one Apprise URL and return its outcome; never raise."""
        if self._refuse is not None:
            return Outcome("permanent", self._refuse)
        if self._apprise is None:
            return Outcome("failed", INSTALL_HINT)
        pool, free = self._pool, self._free
        if pool is None or free is None:
            return Outcome("failed", "notify channel used outside 'async with'")
        title, body = self._text(msg)
        await free.acquire()  # a free thread, before the attempt's timer starts
        loop = asyncio.get_running_loop()
        try:
            future = loop.run_in_executor(pool, self._call, url, title, body)
        except RuntimeError as exc:  # the pool is shut down
            free.release()
            return Outcome("failed", f"notify channel closed: {exc}")
        # The thread is free again when its call returns, not when this send stops waiting.
        future.add_done_callback(lambda _: free.release())
        try:
            async with asyncio.timeout(self._timeout):
                ok, errors = await asyncio.shield(future)
        except TimeoutError:
            return Outcome("failed", f"notify timeout after {self._timeout:g}s (delivery unknown)")
        except Exception as exc:  # Apprise raised: still data, never a crash of the tick
            return Outcome("failed", redact.secrets(f"{type(exc).__name__}: {exc}", url))
        if ok:
            return SENT
        return _failure(errors, url)

    def _text(self, msg: Message) -> tuple[str, str]:
        body = msg.body
        if self._with_data and msg.data is not None:
            import json  # lazy: only DUEQUEUE_NOTIFY_DATA with data to show needs it

            data = json.dumps(msg.data, ensure_ascii=False, indent=2, sort_keys=True)
            body = f"{body}\n\n{data}" if body else data
        # Apprise refuses a message without a body: the subject alone becomes the body.
        return ("", msg.subject) if not body else (msg.subject, body)

    def _call(self, url: str, title: str, body: str) -> tuple[bool, list[str]]:
        """On a pool thread: one Apprise call; return its result and what it logged."""
        self._handler.take()  # nothing left over from this thread's last call
        plugin = instantiate(self._apprise, url)
        if plugin is None:
            return False, ["not a valid Apprise URL"]
        plugin.socket_connect_timeout = self._timeout
        plugin.socket_read_timeout = self._timeout
        login = _MqttLogin(plugin)
        try:
            ok = bool(plugin.notify(body=body, title=title))
        except Exception:
            if login.refusal(0) is None:
                raise
            ok = False  # Apprise's MQTT plugin raises when the broker closes on a refused login
        finally:
            errors = self._handler.take()
        # A message Apprise counts as published may have gone out before the broker answered.
        refused = login.refusal(self._timeout if ok else 0)
        if refused is not None:
            return False, [f"MQTT {_LOGIN_REFUSED} by the broker: {refused}"]
        return ok, errors


# A refused login is answered the same way on every retry: permanent, as SMTP's 535.
_LOGIN_REFUSED = "login refused"
# MQTT CONNACK reason codes (v5 values; paho maps MQTT 3.1.1's 4 and 5 to them): bad user name
# or password, not authorized.
_MQTT_REFUSED_LOGIN = frozenset({134, 135})


class _MqttLogin:
    """The broker's answer to an MQTT plugin's login, heard on paho's on_connect.

    Apprise reports only that a message was not published ("the connection was lost"), or, at
    QoS 0, that it was written to the socket, possibly before the broker answered the login
    (MQTT lets a client send before CONNACK). The CONNACK says whether the broker took it.
    """

    def __init__(self, plugin: Any) -> None:
        self.refused: str | None = None
        self._answered = threading.Event()
        client: Any = getattr(plugin, "client", None)
        self.watching = type(client).__module__ == "paho.mqtt.client"
        if self.watching:
            client.on_connect = self._on_connect  # Apprise sets none of its own

    def _on_connect(self, client: Any, userdata: Any, flags: Any, reason: Any, *props: Any) -> None:
        if getattr(reason, "value", None) in _MQTT_REFUSED_LOGIN:
            self.refused = str(reason)
        self._answered.set()

    def refusal(self, timeout: float) -> str | None:
        """Return why the broker refused the login, waiting up to `timeout` for its answer."""
        if self.watching and self.refused is None:
            self._answered.wait(timeout)
        return self.refused


def _failure(errors: list[str], url: str) -> Outcome:
    text = " ".join(" ".join(errors).split()) or "the service refused the notification"
    text = redact.secrets(text, url)
    if len(text) > _MAX_ERROR:
        text = text[:_MAX_ERROR] + "..."
    if text.startswith(f"MQTT {_LOGIN_REFUSED}"):
        return Outcome("permanent", text)
    statuses = [int(m) for m in _STATUS.findall(text)]
    if statuses and all(400 <= s < 500 and s not in TRANSIENT_4XX for s in statuses):
        return Outcome("permanent", text)
    return Outcome("failed", text)
