"""A site: a database host, a receivers' host and N ticking hosts, each a network namespace.

    with Site(hosts=2) as site:
        site.seed([...targets...])                  # one-shot reminders due a minute ago
        proc = site.tick(site.h[0])                 # `duequeue tick --json` inside h1
        site.wait("3 requests", lambda: site.count("got") >= 3)
        site.net.cut(site.h[0], "db")

Ticking hosts run `ip netns exec NS python -m duequeue tick` with this checkout on PYTHONPATH and
DUEQUEUE_DB pointing at the cluster's address; the harness seeds and inspects over the cluster's
Unix socket. Every wait is on an observable state (receiver lines, ledger rows, a process's end),
bounded by a generous timeout.
"""

import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from tests.hosts.cluster import Cluster
from tests.hosts.netns import Host, Network
from tests.paths import ROOT

SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
DB = "duequeue"
MIN = 60_000
# Short timeouts keep the lease (budget + 20 x channel timeout + 3 x busy timeout + 60 s) near
# its floor, so a scenario that waits for a lease to end waits about 85 s, not 6 minutes.
FAST = {
    "DUEQUEUE_CHANNEL_TIMEOUT": "1",
    "DUEQUEUE_TICK_BUDGET": "2",
    "DUEQUEUE_BUSY_TIMEOUT": "1",
}


class Site:
    """See the module's docstring."""

    def __init__(
        self, hosts: int, *, standby: bool = False, pg: dict[str, str] | None = None
    ) -> None:
        self.tmp = Path(tempfile.mkdtemp(prefix="dq-hosts-"))
        self.net = Network()
        self.procs: list[subprocess.Popen[str]] = []
        self.cluster: Cluster | None = None
        self.standby: Cluster | None = None
        try:
            self.dbhost = self.net.host("db", ["db"])
            self.rxhost = self.net.host("rx", ["rx"])
            self.sbhost = self.net.host("sb", ["db"]) if standby else None
            self.h = [self.net.host(f"h{i + 1}", ["db", "rx"]) for i in range(hosts)]
            self.cluster = Cluster(self.dbhost, settings=pg).init().start()
            with self.cluster.connect() as conn:
                conn.execute(f'CREATE DATABASE "{DB}"')
            with self.cluster.connect(DB) as conn:
                conn.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
            self.log = self.tmp / "received.jsonl"
            self.log.touch()
            self.gate = self.tmp / "gate-open"
            self._start_receiver()
        except BaseException:
            self.close()
            raise

    def start_standby(self) -> Cluster:
        """A streaming standby of the cluster in its own namespace ("sb"), started."""
        assert self.cluster is not None and self.sbhost is not None
        self.standby = Cluster(self.sbhost, settings=self.cluster.settings | {}).clone(self.cluster)
        self.standby.settings["listen_addresses"] = self.sbhost.addr["db"]
        self.standby.settings["unix_socket_directories"] = str(self.standby.socket)
        self.standby.settings.pop("synchronous_standby_names", None)
        self.standby.configure()
        return self.standby.start()

    def multi_host_url(self) -> str:
        """libpq's list of hosts: whichever accepts writes (primary, or the promoted standby)."""
        assert self.cluster is not None and self.sbhost is not None
        hosts = f"{self.dbhost.addr['db']}:5432,{self.sbhost.addr['db']}:5432"
        return f"postgresql://postgres@{hosts}/{DB}?target_session_attrs=read-write"

    def fail_over(self) -> None:
        """Promote the standby; from now on the harness reads and writes there."""
        assert self.standby is not None and self.cluster is not None
        self.standby.ctl("promote")
        self.cluster, self.standby = self.standby, self.cluster

    # ---------------------------------------------------------------- receivers

    def _start_receiver(self) -> None:
        addr = self.rxhost.addr["rx"]
        proc = subprocess.Popen(
            [*self.rxhost.exec_prefix(), sys.executable, "-m", "tests.hosts.receiver",
             "--addr", addr, "--log", str(self.log), "--gate", str(self.gate)],
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        self.procs.append(proc)
        assert proc.stdout is not None
        line = proc.stdout.readline()  # the receiver's "listening": both servers are up
        if line.strip() != "listening":
            raise RuntimeError(
                f"receiver did not start: {proc.stderr.read() if proc.stderr else ''}"
            )
        self.http = f"http://{addr}:8080"
        self.smtp = f"smtp://{addr}:2525"

    def received(self, ev: str = "got") -> list[dict[str, Any]]:
        """What the receivers logged with this event ("got": arrived, "done": answered)."""
        lines = self.log.read_text(encoding="utf-8").splitlines()
        return [r for r in map(json.loads, lines) if r["ev"] == ev]

    def count(self, ev: str = "got", peer: str | None = None, prefix: str = "") -> int:
        return sum(
            1
            for r in self.received(ev)
            if (peer is None or r["peer"] == peer) and r["what"].startswith(prefix)
        )

    def ids(self, ev: str = "done") -> Counter[str]:
        """How many times each webhook-id / Message-ID arrived (or was answered)."""
        return Counter(r["id"] for r in self.received(ev))

    def open_gate(self) -> None:
        self.gate.touch()

    # ---------------------------------------------------------------- the queue

    def seed(self, targets: Sequence[str], *, due_ms: int | None = None) -> None:
        """One one-shot reminder per target (`http:PATH` or `mail:LOCAL`), due a minute ago."""
        from datetime import UTC, datetime

        from duequeue.schedule import release
        from duequeue.shared.timefmt import to_ms
        from duequeue.store import open_store
        from duequeue.store.records import NewReminder, NewTarget

        now = to_ms(datetime.now(UTC))
        due = now - MIN if due_ms is None else due_ms
        # Computed by the tz release in use, as add records it: with '' the first tick would
        # first lease every row to take its walls (issue 23's catch-up), and a second host's
        # claim running meanwhile would find nothing to take.
        mine = release.in_use() or ""
        store = open_store(self.local_url)
        try:
            reminders = []
            for i, t in enumerate(targets):
                kind, what = t.split(":", 1)
                target = (
                    NewTarget("webhook", f"{self.http}/{what}")
                    if kind == "http"
                    else NewTarget("email", f"{what}@example.com")
                )
                reminders.append(
                    NewReminder(f"r{i}", "b", None, "UTC", due, due, (target,), release=mine)
                )
            store.add_many(reminders, now)
        finally:
            store.close()

    @property
    def local_url(self) -> str:
        assert self.cluster is not None
        return self.cluster.local_url(DB)

    def db_url(self) -> str:
        assert self.cluster is not None
        return self.cluster.url(DB)

    def sql(self, query: str, *args: Any) -> list[tuple[Any, ...]]:
        assert self.cluster is not None
        with self.cluster.connect(DB) as conn:
            return list(conn.execute(query, args or None).fetchall())

    def execute(self, query: str) -> None:
        """A statement that returns no rows (ALTER SYSTEM, ...)."""
        assert self.cluster is not None
        with self.cluster.connect(DB) as conn:
            conn.execute(query)

    def one(self, query: str, *args: Any) -> Any:
        return self.sql(query, *args)[0][0]

    def ledger_sent(self) -> int:
        return int(self.one("SELECT count(*) FROM deliveries WHERE outcome = 'sent'"))

    def ledger_twice(self) -> int:
        """Targets recorded as sent more than once for one fire (the core rule says 0)."""
        return int(
            self.one(
                """SELECT count(*) FROM (SELECT target_id, fire_at FROM deliveries
                   WHERE outcome = 'sent' GROUP BY 1, 2 HAVING count(*) > 1) AS twice"""
            )
        )

    def undone(self) -> int:
        return int(self.one("SELECT count(*) FROM reminders WHERE done_at IS NULL"))

    def leased(self) -> int:
        return int(self.one("SELECT count(*) FROM reminders WHERE lease_until IS NOT NULL"))

    # ---------------------------------------------------------------- ticking hosts

    def tick_env(
        self, extra: dict[str, str] | None = None, db: str | None = None
    ) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("DUEQUEUE_")}
        env.update(
            PYTHONPATH=str(ROOT),
            PYTHONUNBUFFERED="1",
            DUEQUEUE_DB=db or self.db_url(),
            DUEQUEUE_WEBHOOK_SECRET=SECRET,
            DUEQUEUE_SMTP_URL=self.smtp,
            DUEQUEUE_EMAIL_FROM="dq@example.com",
            **FAST,
        )
        env.update(extra or {})
        return env

    def tick(
        self,
        host: Host,
        *args: str,
        env: dict[str, str] | None = None,
        faketime: str | None = None,
        db: str | None = None,
    ) -> "subprocess.Popen[str]":
        """Start `duequeue tick --json ARGS` inside `host` (under `faketime` when given)."""
        skew = ["faketime", "-f", faketime] if faketime else []
        proc = subprocess.Popen(
            [*host.exec_prefix(), *skew, sys.executable, "-m", "duequeue", "tick", "--json", *args],
            env={**self.tick_env(env, db), "FAKETIME_DONT_FAKE_MONOTONIC": "1"},
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        self.procs.append(proc)
        return proc

    def run_tick(
        self, host: Host, *args: str, timeout: float = 120, **kw: Any
    ) -> tuple[int, dict[str, Any] | None, str]:
        """Run one tick in `host` to its end: (exit code, its JSON summary or None, stderr)."""
        proc = self.tick(host, *args, **kw)
        out, err = proc.communicate(timeout=timeout)
        summary = json.loads(out) if out.strip().startswith("{") else None
        return proc.returncode, summary, err

    def drain(self, host: Host, *, rounds: int = 20, **kw: Any) -> list[dict[str, Any]]:
        """Tick `host` until nothing is left to claim; return the summaries."""
        summaries = []
        for _ in range(rounds):
            code, summary, err = self.run_tick(host, **kw)
            assert code == 0, err
            assert summary is not None
            summaries.append(summary)
            if summary["claimed"] == 0 and self.undone() == 0:
                break
        return summaries

    @staticmethod
    def wait(what: str, done: Callable[[], bool], timeout: float = 60.0) -> None:
        """Wait for an observable state, failing after `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while not done():
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}")
            time.sleep(0.05)

    # ---------------------------------------------------------------- end

    def close(self) -> None:
        self.open_gate()  # nothing held forever
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
            with contextlib.suppress(subprocess.TimeoutExpired, ValueError):
                proc.communicate(timeout=10)
        for cluster in (self.standby, self.cluster):
            if cluster is not None:
                cluster.close()
        self.net.close()

    def __enter__(self) -> "Site":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
