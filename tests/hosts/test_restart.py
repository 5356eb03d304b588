"""Restart and failover: `pg_ctl restart -m fast` mid-ticks; a standby promoted mid-run."""

from typing import Any

import pytest

from tests.hosts.conftest import note
from tests.hosts.site import Site

pytestmark = [pytest.mark.hosts, pytest.mark.timeout(600)]

NOISE = ("psycopg", "Pipeline", "Traceback", "error ignored")


def leases_over(site: Site) -> bool:
    return bool(
        site.one(
            """SELECT coalesce(max(lease_until), 0) < extract(epoch FROM clock_timestamp()) * 1000
               FROM reminders WHERE done_at IS NULL"""
        )
    )


def finish(site: Site, proc: Any) -> dict[str, Any]:
    out, err = proc.communicate(timeout=200)
    return {"exit": proc.returncode, "stderr": err.strip().splitlines(), "summary": out.strip()}


def clean_end(result: dict[str, Any]) -> bool:
    """Recovered (exit 0, nothing on stderr) or failed cleanly (exit 1, one line, no noise)."""
    lines = result["stderr"]
    if any(word in line for line in lines for word in NOISE):
        return False
    return (result["exit"] == 0 and lines == []) or (result["exit"] == 1 and len(lines) == 1)


def test_a_fast_restart_of_the_database_mid_ticks(make_site: Any) -> None:
    site: Site = make_site(hosts=2)
    assert site.cluster is not None
    h1, h2 = site.h
    targets = [f"http:ok/{i}" for i in range(30)] + [f"http:gate/{i}" for i in range(6)]
    targets += [f"mail:ok{i}" for i in range(4)] + [f"http:ok/z{i}" for i in range(30)]
    site.seed(targets)
    total = len(targets)
    env = {"DUEQUEUE_CONCURRENCY": "4", "DUEQUEUE_CHANNEL_TIMEOUT": "2"}
    ticks = [site.tick(h, "--limit", "20", env=env) for h in (h1, h2)]
    site.wait("sends held mid-tick", lambda: site.count(prefix="gate") >= 2)
    before = site.ledger_sent()
    site.cluster.ctl("restart", "-m", "fast")
    site.open_gate()
    results = [finish(site, p) for p in ticks]
    # What a failed tick still held comes back when its lease ends; then the next ticks go on.
    site.wait("the leases of the interrupted ticks", lambda: leases_over(site), timeout=200)
    after = [finish(site, site.tick(h, env=env)) for h in (h1, h2)]
    rest = site.drain(h1)
    got = site.ids("got")
    facts = {
        "injected": f"pg_ctl restart -m fast with {before} sends recorded, sends held in flight",
        "ticks_during_restart": results,
        "ticks_after": [(r["exit"], r["stderr"]) for r in after],
        "drain_claimed": [s["claimed"] for s in rest],
        "receiver_ids": len(got),
        "received_twice": sum(1 for n in got.values() if n > 1),
        "ledger_sent": site.ledger_sent(),
        "ledger_twice": site.ledger_twice(),
        "undone": site.undone(),
    }
    note("e: pg_ctl restart -m fast mid-ticks", facts)
    assert site.ledger_twice() == 0
    assert site.ledger_sent() == total and site.undone() == 0 and len(got) == total
    assert all(clean_end(r) for r in results), facts
    assert all(r["exit"] == 0 and r["stderr"] == [] for r in after), facts
    # Re-sends only for sends in flight at the restart (those held, at most).
    assert sum(1 for n in got.values() if n > 1) <= 6 + 4, facts
