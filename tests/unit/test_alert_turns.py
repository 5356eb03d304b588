"""DUEQUEUE_ALERT sends one at a time per channel: a channel does not bound its callers' sends
(the webhook channel's own semaphore is gone: a tick's pool of workers bounds its sends), so the
alert, which opens each channel for one send at a time, keeps to that itself."""

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterator, Mapping
from datetime import UTC, datetime
from typing import Any

import pytest

from duequeue.channels import registry
from duequeue.channels.base import SENT, Message, Outcome
from duequeue.config.settings import Settings
from duequeue.engine.summary import TickSummary
from duequeue.operations import alert


class _Counting:
    """A webhook stand-in that notes how many of its sends overlap."""

    def __init__(self) -> None:
        self.in_flight = 0
        self.most = 0
        self.got: list[str] = []

    async def send(self, msg: Message, address: str, secret: str | None) -> Outcome:
        self.in_flight += 1
        self.most = max(self.most, self.in_flight)
        await asyncio.sleep(0.01)
        self.in_flight -= 1
        self.got.append(address)
        return SENT if "fine" in address else Outcome("failed", "HTTP 500")


@pytest.fixture
def counting() -> Iterator[_Counting]:
    real = registry.get("webhook")
    sender = _Counting()

    @contextlib.asynccontextmanager
    async def open_counting(opening: registry.Opening) -> AsyncIterator[registry.Sender]:
        yield sender

    def check(address: str, settings: Mapping[str, Any]) -> str:
        return address

    registry.register(registry.Channel("webhook", check=check, open=open_counting))
    try:
        yield sender
    finally:
        registry.register(real)


def test_an_alert_sends_to_the_targets_of_one_channel_one_at_a_time(counting: _Counting) -> None:
    urls = [f"https://{name}.example/hook" for name in ("fine-a", "down-b", "fine-c")]
    settings = Settings(db="q.db", alert=" ".join(urls))
    summary = TickSummary(at=datetime(2026, 1, 1, tzinfo=UTC), dead_letters=((7, 0, "HTTP 400"),))
    failed = alert.send(settings, summary, lambda: 1_767_225_600_000)
    assert counting.got == urls  # every target, in the order named
    assert counting.most == 1
    assert failed is not None and "down-b" in failed and "fine" not in failed
