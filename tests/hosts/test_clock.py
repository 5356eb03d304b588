"""Clock skew: one clock, the database server's, decides what is due and when a lease ends.

Each host's clock is moved with `faketime` (libfaketime: the wall clock only; the monotonic clock
that times waits is left alone, FAKETIME_DONT_FAKE_MONOTONIC=1).
"""

from typing import Any

import pytest

from tests.hosts.conftest import note
from tests.hosts.site import Site

pytestmark = [
    pytest.mark.hosts,
    pytest.mark.timeout(600),
    pytest.mark.usefixtures("needs_faketime"),
]

AHEAD, BEHIND = "+2m", "-2m"


def db_now(site: Site) -> int:
    return int(site.one("SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint"))


def test_skewed_hosts_fire_on_the_database_clock_and_keep_off_live_leases(make_site: Any) -> None:
    site: Site = make_site(hosts=3)
    fast, slow, right = site.h
    facts: dict[str, Any] = {"injected": "h1 2 min ahead, h2 2 min behind (faketime), h3 right"}

    # Due in a minute: a host 2 minutes ahead must not fire them now.
    site.seed([f"http:ok/early{i}" for i in range(5)], due_ms=db_now(site) + 60_000)
    _, summary, err = site.run_tick(fast, faketime=AHEAD)
    assert summary is not None, err
    facts["ahead_claimed_not_due"] = summary["claimed"]
    facts["ahead_sent_early"] = site.count(prefix="ok/early")

    # Due a second ago: a host 2 minutes behind must fire them now (not in 2 minutes).
    site.seed([f"http:ok/late{i}" for i in range(5)], due_ms=db_now(site) - 1_000)
    _, summary, err = site.run_tick(slow, faketime=BEHIND)
    assert summary is not None, err
    facts["behind_claimed_due"] = summary["claimed"]
    if summary["claimed"] == 0:  # main: the host's clock decides; let the rows go for step 3
        site.drain(right)

    # The host behind holds 4 sends in flight; its leases are live, whatever its clock says: a
    # host with the right clock must not take them.
    # (Due 3 minutes ago, so that they are due by every clock here: this step is about leases.)
    site.seed([f"http:gate/{i}" for i in range(4)], due_ms=db_now(site) - 180_000)
    env = {"DUEQUEUE_CHANNEL_TIMEOUT": "2"}
    holder = site.tick(slow, faketime=BEHIND, env=env)
    site.wait("the behind host's sends held", lambda: site.count(prefix="gate") == 4)
    _, summary, err = site.run_tick(right, env=env)
    assert summary is not None, err
    facts["right_claimed_live_leases"] = summary["claimed"]
    site.open_gate()
    holder.communicate(timeout=120)
    got = site.ids("got")
    facts.update(
        gate_received=site.count(prefix="gate"),
        ledger_twice=site.ledger_twice(),
        received_twice=sum(1 for n in got.values() if n > 1),
    )
    note("d: clock skew", facts)
    assert site.ledger_twice() == 0
    assert facts["ahead_claimed_not_due"] == 0 and facts["ahead_sent_early"] == 0, facts
    assert facts["behind_claimed_due"] == 5, facts
    assert facts["right_claimed_live_leases"] == 0 and facts["gate_received"] == 4, facts
