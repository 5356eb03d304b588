"""What every channel receives (a Message) and returns (an Outcome), and the checks every
channel's addresses share."""

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from duequeue.errors import BadInputError

Status = Literal["sent", "failed", "permanent"]


@dataclass(frozen=True, slots=True)
class Outcome:
    """The result of one delivery attempt to one target.

    `failed` is transient (retry later); `permanent` will fail again the same way (4xx, SMTP 5xx,
    refused recipient) and is never retried. `retry_after` is the wait in seconds a server asked for
    (Retry-After on 429/503); the policy never retries sooner than that. `gone` says the endpoint
    answered 410 Gone: the target is switched off and sent nothing more (Standard Webhooks).
    """

    status: Status
    error: str | None = None
    retry_after: float | None = None
    gone: bool = False


# The outcome of every successful send: immutable, so one instance serves them all.
SENT = Outcome("sent")

# The 4xx a server uses to say "not now" (408, 425, 429): retried. Every other 4xx will repeat,
# so a webhook or notify answered with one fails for good.
TRANSIENT_4XX = frozenset({408, 425, 429})


@dataclass(slots=True)  # not frozen: built for every send, see store/records.py
class Message:
    """One fire of one reminder, addressed to one target.

    `delivery_id` is stable for (reminder, fire, target) across retries: it becomes the webhook-id
    and the email Message-ID so receivers can deduplicate an at-least-once network.
    """

    reminder_id: int
    fire_at: datetime
    subject: str
    body: str
    data: Any
    delivery_id: str


def delivery_id(reminder_id: int, fire_at_ms: int, target_id: int) -> str:
    """Return the stable id of one (reminder, fire, target) delivery."""
    return f"dq_{reminder_id}_{fire_at_ms}_{target_id}"


def causes(exc: BaseException) -> list[BaseException]:
    """Return `exc` and what caused it, outermost first (a library's wrapper around the error
    that tells what happened: a timeout, a refused connection)."""
    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in chain:
        chain.append(current)
        current = current.__cause__ or current.__context__
    return chain


# What any channel's address may be, whatever the channel: short, one line, no spaces.
MAX_ADDRESS = 2048
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def plain_text(address: str, *, what: str = "URL", quote: bool = True) -> None:
    """Raise BadInputError unless `address` (a `what`) is at most MAX_ADDRESS characters of one
    line without spaces or control characters; `quote`: whether the message may quote it (not
    when it holds tokens)."""
    if len(address) > MAX_ADDRESS:
        raise BadInputError(f"{what} longer than {MAX_ADDRESS} characters")
    if _CONTROL.search(address) or " " in address:
        shown = repr(address) if quote else f"the {what}"
        raise BadInputError(f"{shown} contains spaces or control characters")
