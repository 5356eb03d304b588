"""A tick that outlived its lease: its write-back is refused, counted, and changes nothing newer.

The tick's first (and only) send is answered by a receiver that first lets another tick take the
row, as happens when a cut-off host's lease ends and another host claims what it held (issue 26).
"""

import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from duequeue.engine.tick import TickOptions, tick
from duequeue.errors import DatabaseLostError
from duequeue.store.records import NewReminder, NewTarget
from duequeue.store.store import Store
from tests.servers import HttpSink

NOW = 1_800_000_000_000
LEASE_MS = 60_000


def test_a_write_back_after_the_lease_ended_is_refused_and_counted(
    open_store: Callable[[], Store], store: Store
) -> None:
    other = open_store()
    taken: list[int] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length", 0)))
            # The lease ended meanwhile: another tick takes the row before this answer arrives.
            taken.extend(
                f.reminder_id for f in other.claim(NOW + LEASE_MS + 1, 10, 3, LEASE_MS, "b")
            )
            self.send_response(200)
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/r"
        rid = store.add(
            NewReminder(
                "s", "b", None, "UTC", NOW - 1000, NOW - 1000, (NewTarget("webhook", url),)
            ),
            NOW - 1000,
        )[0]
        summary = tick(store, NOW, TickOptions(lease_ms=LEASE_MS), lambda: NOW)
    finally:
        server.shutdown()
        server.server_close()
        other.close()
    assert taken == [rid]
    assert (summary.sent, summary.refused) == (0, 1), summary.line()
    assert "refused 1" in summary.line()
    # The send happened, so its record landed; the row is still the other tick's, pending.
    assert [d.outcome for d in store.deliveries(rid)] == ["sent"]
    view = store.get(rid)
    assert view is not None and view.state == "pending"
    # The other tick, finding the target sent in the ledger, sends nothing again.
    assert (
        store.claim(NOW + 2 * LEASE_MS + 2, 10, 3, LEASE_MS, "c")[0]
        .ledger[store.deliveries(rid)[0].target_id]
        .sent
    )


def test_a_claim_answered_after_its_lease_was_ending_sends_nothing(
    store: Store, http: HttpSink
) -> None:
    # A link that heals after a cut may deliver the claim's answer when its lease is about to
    # end (here: the clock already says so): another tick may take those rows any moment.
    rid = store.add(
        NewReminder(
            "s", "b", None, "UTC", NOW - 1000, NOW - 1000, (NewTarget("webhook", http.url("/r")),)
        ),
        NOW - 1000,
    )[0]
    # The clock reads NOW when the tick sets its deadline (so the store's watchdog is not
    # already due: a tick whose deadline passed before it began gets no answer at all), and
    # the lease's end once the claim has answered.
    readings = iter([NOW])
    with pytest.raises(DatabaseLostError, match="the claim answered too late") as lost:
        tick(store, NOW, TickOptions(lease_ms=LEASE_MS), lambda: next(readings, NOW + LEASE_MS))
    assert lost.value.summary.claimed == 1
    assert http.requests == []
    assert store.deliveries(rid) == []
