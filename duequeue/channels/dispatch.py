"""Route each message to the channel of its target, opening only the channels a tick needs."""

import contextlib
from collections.abc import Callable, Collection
from types import TracebackType
from typing import TYPE_CHECKING

from duequeue.channels.base import Message, Outcome

if TYPE_CHECKING:
    from duequeue.channels.email import EmailChannel
    from duequeue.channels.notify import NotifyChannel
    from duequeue.channels.webhook import WebhookChannel


class Dispatcher:
    """Own the channels of one tick: one HTTP client pool, one SMTP connection, and the notify
    channel's threads."""

    def __init__(
        self,
        *,
        needs: Collection[str],
        timeout: float,
        clock: Callable[[], float],
        smtp_url: str | None,
        email_from: str | None,
        webhook_secret: str | None,
        max_connections: int = 100,
        webhook_block_private: bool = False,
        notify_data: bool = False,
    ) -> None:
        self._needs = set(needs)
        self._timeout = timeout
        self._clock = clock
        self._smtp_url = smtp_url
        self._email_from = email_from
        self._secret = webhook_secret
        self._max_connections = max_connections
        self._block_private = webhook_block_private
        self._notify_data = notify_data
        self._stack = contextlib.AsyncExitStack()
        self._webhook: WebhookChannel | None = None
        self._email: EmailChannel | None = None
        self._notify: NotifyChannel | None = None
        self._email_problem: str | None = None

    async def __aenter__(self) -> "Dispatcher":
        await self.open(self._needs)
        return self

    async def open(self, needs: Collection[str]) -> None:
        """Open the channels in `needs` not open yet (a draining tick meets them batch by
        batch)."""
        # Imported here: a tick with nothing due must not pay for aiohttp or smtplib.
        if "webhook" in needs and self._webhook is None:
            from duequeue.channels.webhook import WebhookChannel

            self._webhook = await self._stack.enter_async_context(
                WebhookChannel(
                    secret=self._secret,
                    timeout=self._timeout,
                    clock=self._clock,
                    max_connections=self._max_connections,
                    block_private=self._block_private,
                )
            )
        if "notify" in needs and self._notify is None:
            from duequeue.channels.notify import BLOCKED, NotifyChannel

            self._notify = await self._stack.enter_async_context(
                NotifyChannel(
                    timeout=self._timeout,
                    with_data=self._notify_data,
                    # Added before the block was switched on: refused now, as `add` would.
                    refuse=f"notify {BLOCKED}" if self._block_private else None,
                )
            )
        if "email" in needs and self._email is None and self._email_problem is None:
            if not self._smtp_url or not self._email_from:
                # A config gap is a failure of these deliveries, not of the tick: they are
                # recorded and retried, and go out once the operator sets the variables.
                self._email_problem = (
                    "email not configured: set DUEQUEUE_SMTP_URL and DUEQUEUE_EMAIL_FROM"
                )
            else:
                from duequeue.channels.email import EmailChannel

                self._email = await self._stack.enter_async_context(
                    EmailChannel(
                        smtp_url=self._smtp_url,
                        sender=self._email_from,
                        timeout=self._timeout,
                        clock=self._clock,
                    )
                )

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self._stack.aclose()

    async def send(
        self, msg: Message, channel: str, address: str, secret: str | None = None
    ) -> Outcome:
        """Send one message to one target (`secret`: a webhook's own); never raises."""
        try:
            if channel == "webhook" and self._webhook is not None:
                return await self._webhook.send(msg, address, secret)
            if channel == "notify" and self._notify is not None:
                return await self._notify.send(msg, address)
            if channel == "email":
                if self._email is None:
                    return Outcome("failed", self._email_problem or "email channel not open")
                return await self._email.send(msg, address)
            return Outcome("failed", f"channel {channel!r} not open")
        except Exception as exc:  # a channel must not raise; if one does, it is still data
            return Outcome("failed", f"{type(exc).__name__}: {exc}")
