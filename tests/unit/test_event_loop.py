"""The tick's deliveries run on uvloop where it is installed, on asyncio's loop otherwise."""

import asyncio
import sys

import pytest
import uvloop

from duequeue.engine import tick


async def _running_loop() -> type:
    return type(asyncio.get_running_loop())


def test_deliveries_run_on_uvloop() -> None:
    assert tick._event_loop_run(_running_loop()) is uvloop.Loop


def test_without_uvloop_asyncio_runs_them(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "uvloop", None)  # what an install without it raises
    kind = tick._event_loop_run(_running_loop())
    assert kind is not uvloop.Loop
    assert issubclass(kind, asyncio.AbstractEventLoop)
