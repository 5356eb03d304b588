"""Cancelling a reminder while a tick is delivering it: the cancellation wins for later fires."""

import threading
from pathlib import Path

from duequeue.engine.summary import TickSummary
from duequeue.engine.tick import TickOptions, tick
from duequeue.store.records import NewTarget
from duequeue.store.sqlite import connect as open_sqlite
from tests.servers import HttpSink, Reply
from tests.store_contract import NOW, reminder


def test_a_cancel_during_a_running_tick_wins_over_its_write_back(db_path: Path) -> None:
    with HttpSink() as http:
        http.respond("/slow", Reply(hang=True))  # held until the channel timeout cuts it
        setup = open_sqlite(db_path)
        hook = (NewTarget("webhook", http.url("/slow")),)
        rid, _ = setup.add(reminder(NOW, targets=hook, rule="FREQ=MINUTELY"), NOW)
        setup.close()

        result: list[TickSummary] = []

        def run_tick() -> None:
            store = open_sqlite(db_path)
            try:
                options = TickOptions(channel_timeout=1.0)
                result.append(tick(store, NOW, options, lambda: NOW + 1))
            finally:
                store.close()

        ticking = threading.Thread(target=run_tick)
        ticking.start()
        http.wait_for_requests(1)  # the delivery is in flight now
        operator = open_sqlite(db_path)
        try:
            (change,) = operator.cancel([rid], NOW + 1)
            assert change.skipped is None
            ticking.join(30)
            assert not ticking.is_alive()
            (summary,) = result
            # The in-flight attempt ran its course and is in the ledger, but the tick's
            # write-back (a retry in a minute) was refused: the row is nobody's to reschedule.
            assert (summary.claimed, summary.deliveries_failed, summary.retried) == (1, 1, 0)
            view = operator.get(rid)
            assert view is not None
            assert (view.state, view.next_fire_at) == ("cancelled", None)
            assert [d.outcome for d in operator.deliveries(rid)] == ["failed"]
            assert operator.claim(NOW + 3_600_000, 10, 3, 60_000, "later") == []
        finally:
            operator.close()
