"""What `tick` (and each of `worker`'s ticks) does between `duequeue.Queue` and the engine: the
effective settings made into the tick's options, one tick, then the mark `stats` reads, and the
alert about new dead letters (DUEQUEUE_ALERT, alert.py)."""

import contextlib
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime

from duequeue.config.settings import Settings
from duequeue.engine.summary import TickSummary
from duequeue.engine.tick import HelperOptions, TickOptions, tick
from duequeue.errors import StoreBusyError
from duequeue.shared.timefmt import to_ms
from duequeue.store.store import Store


def run(
    store: Store,
    settings: Settings,
    now: datetime,
    clock: Callable[[], int],
    limit: int | None,
    hold: contextlib.ExitStack | None = None,
) -> TickSummary:
    """Run one tick with the effective settings; stop signals held as engine.tick says."""
    options = TickOptions(
        limit=limit or settings.tick_limit,
        lease_ms=settings.lease_ms,
        budget_s=settings.tick_budget,
        policy=settings.retry_policy,
        webhook_concurrency=settings.concurrency,
        webhook_per_host=settings.webhook_per_host,
        channel_timeout=settings.channel_timeout,
        settings=settings.by_name(),
        busy_timeout_s=settings.busy_timeout,
        # The helper reopens the store the way the CLI opened it.
        commit_helper=HelperOptions(
            settings.db, settings.busy_timeout, settings.commit_helper_rows
        ),
    )
    summary = tick(store, to_ms(now), options, clock, hold=hold)
    # One small write, so `stats --prometheus` can tell when ticks stopped. The tick's work is
    # done and written back; a database too busy for the mark lets the gauge lag one tick
    # rather than fail a tick that delivered.
    with contextlib.suppress(StoreBusyError):
        store.mark_tick(to_ms(now))
    if summary.dead_letters and settings.alert is not None:
        # Lazy: only a tick that wrote dead letters, with someone to tell, sends an alert.
        from duequeue.operations import alert

        failed = alert.send(settings, summary, clock)
        if failed is not None:
            summary = replace(summary, alert_error=failed)
    return summary
