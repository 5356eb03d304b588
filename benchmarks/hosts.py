"""Deliveries per second across 1, 2 and 4 ticking hosts (network namespaces) on one PostgreSQL.

    python -m benchmarks.hosts [--rows 200000] [--hosts 1,2,4] [--limit 500] [--concurrency 64]

Root only (it makes namespaces with tests/hosts' harness: a database host running its own cluster,
a receivers' host running a fast aiohttp sink, H ticking hosts). For each H: the queue is emptied,
`--rows` one-shot webhooks due a minute ago are added (Store.add_many, the bulk path `duequeue
import` takes, in chunks), pg_stat_statements is reset, then every host runs `duequeue tick` in a
loop (as cron would, back to back) until a tick claims nothing. Measured per run:

- deliveries/s: rows / wall time from the first tick's start to the last tick's end;
- DB CPU us per delivery: the cluster's processes' user+system time (/proc/PID/stat: the live
  processes' own, plus the postmaster's reaped children's, so backends that ended count too);
- host CPU us per delivery: the tick processes' user+system time (their rusage when reaped);
- statements per delivery on the tick's path (pg_stat_statements, the harness's own excluded) and
  packets each host sent the database per delivery (its veth counters: requests, each a round
  trip or part of one, plus bare ACKs: an upper bound on round trips).

On a 2-core machine the hosts, the sink and the server share the cores: the CPU figures are the
ones to project from (docs/postgresql.md), not the wall time alone.
"""

import argparse
import asyncio
import os
import resource
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
TICKS = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Run:
    hosts: int
    rows: int
    seconds: float
    db_cpu_s: float
    host_cpu_s: float
    statements: int
    packets: int
    ticks: int

    @property
    def rate(self) -> float:
        return self.rows / self.seconds

    def per(self, value: float) -> float:
        return value / self.rows


def sink(addr: str, port: int) -> None:
    """The receivers' host: answer every POST 204, count them; print the counts at SIGTERM."""
    from aiohttp import web

    seen: set[str] = set()
    count = 0

    async def hook(request: web.Request) -> web.Response:
        nonlocal count
        await request.read()
        count += 1
        seen.add(request.headers.get("webhook-id", ""))
        return web.Response(status=204)

    async def serve() -> None:
        app = web.Application()
        app.router.add_post("/{tail:.*}", hook)
        runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await runner.setup()
        await web.TCPSite(runner, addr, port, backlog=4096).start()
        print("listening", flush=True)
        stop = asyncio.Event()
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
        await stop.wait()
        print(count, len(seen), flush=True)
        await runner.cleanup()

    asyncio.run(serve())


def _cpu_of(pids: list[int], reaped_of: int | None) -> float:
    """Seconds of user+system CPU of `pids`, plus the reaped children of `reaped_of`."""
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except FileNotFoundError:
            continue
        total += int(fields[11]) + int(fields[12])  # utime, stime
        if pid == reaped_of:
            total += int(fields[13]) + int(fields[14])  # cutime, cstime
    return total / TICKS


def _db_cpu(site: Any) -> float:
    pids = site.cluster.server_pids()
    return _cpu_of(pids, pids[0])


def _tx_packets(site: Any, host: Any) -> int:
    stats = Path("/sys/class/net/db0/statistics/tx_packets")
    done = subprocess.run(
        [*host.exec_prefix(), "cat", str(stats)], capture_output=True, text=True, check=True
    )
    return int(done.stdout)


def _seed(site: Any, rows: int, url: str) -> None:
    from datetime import UTC, datetime

    from duequeue.schedule import release
    from duequeue.shared.timefmt import to_ms
    from duequeue.store import open_store
    from duequeue.store.records import NewReminder, NewTarget

    now = to_ms(datetime.now(UTC))
    due = now - 60_000
    mine = release.in_use() or ""
    store = open_store(site.local_url)
    try:
        for start in range(0, rows, 10_000):
            store.add_many(
                [
                    NewReminder(
                        f"r{i}",
                        "b",
                        None,
                        "UTC",
                        due,
                        due,
                        (NewTarget("webhook", f"{url}/r{i}"),),
                        release=mine,  # as add records it: no catch-up pass on the first tick
                    )
                    for i in range(start, min(rows, start + 10_000))
                ],
                now,
            )
    finally:
        store.close()
    with site.cluster.connect("duequeue") as conn:
        conn.execute("VACUUM ANALYZE")


def _host_loop(site: Any, host: Any, env: dict[str, str], limit: int) -> "subprocess.Popen[str]":
    """One host's cron, back to back: tick until a tick claims nothing."""
    script = (
        "import json, subprocess, sys\n"
        "ticks = 0\n"
        "while True:\n"
        "    out = subprocess.run([sys.executable, '-m', 'duequeue', 'tick', '--json', '--limit',"
        f" '{limit}'], capture_output=True, text=True)\n"
        "    ticks += 1\n"
        "    if out.returncode != 0: print('error', out.stderr.strip(), file=sys.stderr)\n"
        "    if out.returncode != 0 or json.loads(out.stdout)['claimed'] == 0: break\n"
        "print(ticks)\n"
    )
    return subprocess.Popen(
        [*host.exec_prefix(), sys.executable, "-c", script],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def measure(site: Any, hosts: int, rows: int, limit: int, concurrency: int, url: str) -> Run:
    from duequeue.store import open_store

    open_store(site.local_url).close()  # the schema, on first use
    with site.cluster.connect("duequeue") as conn:
        conn.execute(
            "TRUNCATE reminders, targets, deliveries, dead_letters, target_retries CASCADE"
        )
    _seed(site, rows, url)
    with site.cluster.connect("duequeue") as conn:
        conn.execute("SELECT pg_stat_statements_reset()")
    env = site.tick_env(
        {
            "DUEQUEUE_CONCURRENCY": str(concurrency),
            "DUEQUEUE_WEBHOOK_PER_HOST": str(concurrency),
            "DUEQUEUE_CHANNEL_TIMEOUT": "10",
            "DUEQUEUE_TICK_BUDGET": "50",
            "DUEQUEUE_BUSY_TIMEOUT": "5",
        }
    )
    chosen = site.h[:hosts]
    packets0 = sum(_tx_packets(site, h) for h in chosen)
    cpu0 = _db_cpu(site)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    loops = [_host_loop(site, h, env, limit) for h in chosen]
    ticks = 0
    for loop in loops:
        out, err = loop.communicate(timeout=3600)
        if loop.returncode != 0 or "error" in err:
            raise RuntimeError(f"a host's ticks failed: {err.strip()}")
        ticks += int(out.strip() or 0)
    seconds = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    db_cpu = _db_cpu(site) - cpu0
    packets = sum(_tx_packets(site, h) for h in chosen) - packets0
    left = int(site.one("SELECT count(*) FROM reminders WHERE done_at IS NULL"))
    if left:
        raise RuntimeError(f"{left} rows left undelivered")
    statements = int(
        site.one(
            """SELECT coalesce(sum(calls), 0) FROM pg_stat_statements
               WHERE query NOT LIKE '%pg_stat_statements%' AND query NOT LIKE '%done_at IS NULL%'"""
        )
    )
    host_cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return Run(hosts, rows, seconds, db_cpu, host_cpu, statements, packets, ticks)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--hosts", default="1,2,4")
    parser.add_argument("--limit", type=int, default=500)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--sink", nargs=2, metavar=("ADDR", "PORT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.sink:
        sink(args.sink[0], int(args.sink[1]))
        return
    sys.path.insert(0, str(ROOT))
    from tests.hosts.netns import namespaces_available
    from tests.hosts.site import Site

    reason = namespaces_available()
    if reason:
        sys.exit(f"benchmarks.hosts: {reason}")
    counts = [int(h) for h in args.hosts.split(",")]
    site = Site(hosts=max(counts))
    sink_proc = None
    try:
        addr = site.rxhost.addr["rx"]
        sink_proc = subprocess.Popen(
            [*site.rxhost.exec_prefix(), sys.executable, "-m", "benchmarks.hosts",
             "--sink", addr, "9090"],
            env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        assert sink_proc.stdout is not None
        assert sink_proc.stdout.readline().strip() == "listening"
        url = f"http://{addr}:9090"
        runs = []
        for hosts in counts:
            run = measure(site, hosts, args.rows, args.limit, args.concurrency, url)
            runs.append(run)
            print(
                f"{hosts} host(s): {run.rows:,} in {run.seconds:.1f} s = {run.rate:,.0f}/s; "
                f"DB CPU {run.per(run.db_cpu_s) * 1e6:.0f} us, hosts' CPU "
                f"{run.per(run.host_cpu_s) * 1e6:.0f} us, "
                f"statements {run.per(run.statements):.3f}, "
                f"packets to the DB {run.per(run.packets):.3f} per delivery; {run.ticks} ticks",
                flush=True,
            )
        base = runs[0]
        print("\nratios against 1 host:")
        for run in runs:
            print(
                f"  {run.hosts} host(s): rate x{run.rate / base.rate:.2f}, DB CPU/delivery "
                f"x{run.per(run.db_cpu_s) / base.per(base.db_cpu_s):.2f}"
            )
    finally:
        if sink_proc is not None:
            sink_proc.send_signal(signal.SIGTERM)
            out, _ = sink_proc.communicate(timeout=30)
            print(f"sink: requests, distinct webhook-ids: {out.strip()}")
        site.close()


if __name__ == "__main__":
    main()
