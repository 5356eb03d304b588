"""A host cut from the database ends before its lease, whatever its URL says; the rows a cut
client locked come free in seconds on a server with its default settings (issue 30, items 1-2).

Item 1: the tick's deadline is its lease minus a margin; every wait, connecting included, must
end by then. A commit cut mid-tick fails after tcp_user_timeout and the store reconnects: with
`connect_timeout=60` in the URL that reconnect used to run far past the lease (the process waits
for its database thread before it exits).

Item 2: the session duequeue opens bounds how long the server keeps a silent client's open
transaction (idle_in_transaction_session_timeout, the server's own TCP keepalives and
tcp_user_timeout), so no server setting is needed for its rows to come free.
"""

import subprocess
import threading
import time
from typing import Any

import pytest

from duequeue.schedule import release
from tests.hosts.conftest import note
from tests.hosts.netns import Host, run
from tests.hosts.site import Site
from tests.hosts.test_partitions import claimable

pytestmark = [pytest.mark.hosts, pytest.mark.timeout(600)]
MARGIN_S = 6.0  # a tick's deadline is its lease minus busy timeout (1 s here) + 5 s


def lease_end_s(site: Site) -> float:
    """The latest lease on the queue, as a unix time in seconds (the server's clock)."""
    return float(site.one("SELECT coalesce(max(lease_until), 0) FROM reminders")) / 1000


def pin_neighbour(site: Site, host: Host) -> None:
    """Make `host` know the database's link address for good (a permanent neighbour entry).

    Otherwise, some 30 s into a cut, the host's ARP entry for the database expires and every
    connect fails at once with "No route to host": the cut no longer looks like a link beyond
    the switch gone silent, and no connect ever waits its timeout. With the entry pinned,
    packets leave and nothing answers, as when the partition is further away.
    """
    shown = run("ip", "-n", site.dbhost.name, "-o", "link", "show", "db0").stdout
    mac = shown.split("link/ether ")[1].split()[0]
    run(
        "ip", "-n", host.name, "neigh", "replace", site.dbhost.addr["db"],
        "lladdr", mac, "dev", "db0", "nud", "permanent",
    )  # fmt: skip


class ConnectWatch:
    """Note, every 0.1 s while `proc` runs, whether `host` has a connect to the database under
    way (a socket in SYN-SENT): the wait no interrupt reaches, which the deadline must bound."""

    def __init__(self, site: Site, host: Host, proc: "subprocess.Popen[str]") -> None:
        self.seen: list[float] = []  # unix times a connect was under way
        args = ["ss", "-Htn", "state", "syn-sent", "dst", site.dbhost.addr["db"]]
        self._cmd = [*host.exec_prefix(), *args]
        self._proc = proc
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        while self._proc.poll() is None:
            out = subprocess.run(self._cmd, capture_output=True, text=True, check=False).stdout
            if out.strip():
                self.seen.append(time.time())
            time.sleep(0.1)

    def last(self) -> float | None:
        self._thread.join(timeout=10)
        return self.seen[-1] if self.seen else None


def lock_waits(site: Site, addr: str) -> int:
    """How many sessions of the host at `addr` wait on a lock."""
    return int(
        site.one(
            """SELECT count(*) FROM pg_stat_activity
               WHERE client_addr = %s AND wait_event_type = 'Lock'""",
            addr,
        )
    )


@pytest.mark.parametrize("query", ["", "?connect_timeout=60"], ids=["default", "timeout60"])
def test_a_host_cut_mid_tick_ends_before_its_lease_whatever_its_url_says(
    make_site: Any, query: str
) -> None:
    site: Site = make_site(hosts=2)
    h1, h2 = site.h
    total, held = 12, 4
    site.seed([f"http:gate/{i}" for i in range(held)] + [f"http:ok/{i}" for i in range(8)])
    pin_neighbour(site, h1)
    env = {"DUEQUEUE_CONCURRENCY": "4", "DUEQUEUE_WEBHOOK_PER_HOST": "4"}
    # The 4 held sends fill every slot: h1 is mid-tick, its claim committed, nothing recorded.
    p1 = site.tick(h1, env=env, db=site.db_url() + query)
    site.wait("4 sends held", lambda: site.count(prefix="gate") == held)
    lease_end = lease_end_s(site)
    deadline = lease_end - MARGIN_S
    site.net.cut(h1, "db")
    cut_at = time.time()
    watch = ConnectWatch(site, h1, p1)
    site.open_gate()  # answered: outcomes h1 must record through the cut link
    p1.wait(timeout=lease_end - cut_at + 120)
    ended_at = time.time()
    last_connect = watch.last()
    _, err1 = p1.communicate()
    site.net.heal(h1, "db")
    site.wait("h1's leases to end", lambda: time.time() > lease_end + 0.5, timeout=200)
    summaries = site.drain(h2, env=env)
    got = site.ids("got")
    facts = {
        "injected": f"h1 (URL{query or ' as given'}) cut from the database, 4 sends in flight",
        "h1_exit": p1.returncode,
        "h1_stderr": err1.strip().splitlines(),
        "h1_ended_after_cut_s": round(ended_at - cut_at, 1),
        "h1_ended_after_lease_s": round(ended_at - lease_end, 1),
        "h1_connecting_after_deadline_s": None
        if last_connect is None
        else round(last_connect - deadline, 1),
        "h2_ticks": [
            {k: s[k] for k in ("claimed", "sent", "released", "refused", "errors", "lost")}
            for s in summaries
        ],
        "receiver_ids": len(got),
        "received_twice": sum(1 for n in got.values() if n > 1),
        "ledger_sent": site.ledger_sent(),
        "ledger_twice": site.ledger_twice(),
        "undone": site.undone(),
    }
    note(f"lease bound ({query or 'default URL'})", facts)
    assert site.ledger_twice() == 0 and site.ledger_sent() == total and site.undone() == 0
    assert len(got) == total
    # The deadline is lease - (busy timeout + 5 s) = lease - 6 s here: no connect is under way
    # past it (before, a reconnect started before it ran its URL's connect_timeout), and the
    # tick, winding down after it, ends before its lease.
    assert last_connect is not None and last_connect < deadline + 0.2, facts
    assert ended_at < lease_end, facts
    assert p1.returncode == 1 and len(err1.strip().splitlines()) == 1, facts


def test_rows_a_cut_client_locked_come_free_in_seconds_on_a_default_server(
    make_site: Any,
) -> None:
    # The server runs with its defaults: no idle_in_transaction_session_timeout, the kernel's
    # keepalives (2 hours). What frees the rows is what duequeue's session asked for.
    site: Site = make_site(hosts=2)
    h1, h2 = site.h
    assert site.cluster is not None
    total = 10
    site.seed([f"http:ok/c{i}" for i in range(total)])
    # The queue already computed by this tz release: no catch-up pass runs first, so the
    # statement that waits below is the claim itself (the rows it takes stay locked).
    site.sql(
        "INSERT INTO queue_meta (name, value) VALUES ('tz_release', %s) RETURNING name",
        release.in_use(),
    )
    # A SHARE lock lets the tick read but holds its claim's UPDATE on the server, waiting, when
    # the link goes down; then the lock goes: the claim runs and its transaction stays open
    # (its COMMIT never comes), with the rows locked.
    admin = site.cluster.connect("duequeue")
    admin.execute("BEGIN")
    admin.execute("LOCK TABLE reminders IN SHARE MODE")
    # A busy timeout of 5 s (lock_timeout 5 s, idle_in_transaction_session_timeout 7 s): the
    # claim still waits when the lock goes, rather than give up first on the lock_timeout.
    p1 = site.tick(h1, env={"DUEQUEUE_BUSY_TIMEOUT": "5"})
    site.wait(
        "h1's claim waiting on the lock",
        lambda: lock_waits(site, h1.addr["db"]) == 1,
    )
    waiting = site.one(
        """SELECT left(regexp_replace(query, '\\s+', ' ', 'g'), 50) FROM pg_stat_activity
           WHERE client_addr = %s AND wait_event_type = 'Lock'""",
        h1.addr["db"],
    )
    site.net.cut(h1, "db")
    admin.execute("COMMIT")
    admin.close()
    cut_at = time.monotonic()
    site.wait(
        "h1's claim done on the server",
        lambda: lock_waits(site, h1.addr["db"]) == 0,
    )
    free_in = None
    with_h1 = []
    try:
        site.wait("the rows free", lambda: claimable(site) == total, timeout=60)
        free_in = round(time.monotonic() - cut_at, 1)
    except AssertionError:
        with_h1 = site.sql(
            "SELECT state, count(*) FROM pg_stat_activity WHERE client_addr = %s GROUP BY 1",
            h1.addr["db"],
        )
    settings = site.sql(
        "SELECT name, setting FROM pg_settings WHERE name = 'idle_in_transaction_session_timeout'"
    )
    p1.wait(timeout=200)
    site.net.heal(h1, "db")
    summaries = site.drain(h2)
    got = site.ids("got")
    facts = {
        "injected": "h1 cut while its claim waited on a lock; server at its default settings",
        "waiting_statement": waiting,
        "server_idle_in_transaction_session_timeout": settings,
        "rows_free_after_cut_s": free_in,
        "h1_sessions_when_not_free": with_h1,
        "h1_exit": p1.returncode,
        "h2_claimed": [s["claimed"] for s in summaries],
        "receiver_ids": len(got),
        "received_twice": sum(1 for n in got.values() if n > 1),
        "ledger_sent": site.ledger_sent(),
        "ledger_twice": site.ledger_twice(),
    }
    note("rows of a cut client, default server", facts)
    assert site.ledger_twice() == 0 and site.ledger_sent() == total and site.undone() == 0
    assert len(got) == total and set(got.values()) == {1}
    # The session's idle_in_transaction_session_timeout (busy timeout + 2 s = 7 s here), and
    # the server's TCP settings for it, end the orphaned transaction: seconds, not hours.
    assert free_in is not None and free_in < 20, facts
