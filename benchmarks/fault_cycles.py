"""Randomized fault cycles (issue 12): no (target, fire) ends neither sent, dead nor retrying.

    python -m benchmarks.fault_cycles [--cycles 1480] [--seed 1234] [--pg URL]

Reminders (one-shot and recurring, 2-3 targets each: emails to a real aiosmtpd sink, signed
webhooks to a real HTTP sink, both on 127.0.0.1) go through the real CLI, in process, on a
frozen clock moved a minute per tick. Before every tick each target is scripted an answer at
random: success, a transient fault (HTTP 500, 503/429 with Retry-After, a connection reset, a
hang cut by DUEQUEUE_CHANNEL_TIMEOUT; SMTP 451, a dropped connection, a hang) or a permanent
one (HTTP 400/404/422/410, SMTP 554 or 550). Ticks go on until every retry is exhausted; then
`history --json` of every reminder and what the receivers saw are audited (fault_audit.py).
A cycle is one fire. `tests/integration/test_no_target_lost.py` runs the same at a small size.
"""

import argparse
import json
import random
import secrets
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, cast
from urllib.parse import urlsplit

from benchmarks.fault_audit import Pair, Received, Tally, audit, ms

T0 = datetime(2027, 3, 1, 9, 0, tzinfo=UTC)
TIMEOUT_S = 1.0  # DUEQUEUE_CHANNEL_TIMEOUT: what cuts a hang
HANG_S = 4.0  # a hanging receiver answers (a 503) only this long after the request
DRAIN_MINUTES = 20  # after the last fire: longer than backoff 1m + 5m and any Retry-After
FIRES_PER_MINUTE = 25

# Answers, with their weights. Success is the common case; faults are what is being tested.
HTTP_FAULTS: dict[str, float] = {
    "ok": 60,
    "500": 6,
    "503": 5,  # with Retry-After
    "429": 5,  # with Retry-After
    "reset": 6,
    "hang": 1,
    "4xx": 6,  # 400, 404 or 422: refused for good
    "410": 1,  # refused, and the target is switched off
}
SMTP_FAULTS: dict[str, float] = {"ok": 60, "451": 14, "hang_up": 8, "hold": 0.5, "554": 4, "550": 3}


@dataclass(frozen=True)
class Planned:
    """One reminder to add: when, how often, to whom."""

    offset: int  # minutes after T0 of its first fire
    rrule: str | None
    fires: int
    targets: tuple[tuple[str, str], ...]  # (channel, address-or-path)


def plan(rng: random.Random, cycles: int) -> list[Planned]:
    """Return reminders whose fires add up to `cycles`, spread over the first minutes."""
    window = max(1, cycles // FIRES_PER_MINUTE)
    out: list[Planned] = []
    left = cycles
    while left > 0:
        i = len(out)
        offset = rng.randrange(window)
        rrule, fires = None, 1
        if rng.random() < 0.4:
            # Every 3 minutes overlaps a target's retries of the last fire; 10 or 15 do not.
            interval = rng.choice((3, 10, 15))
            fires = min(left, rng.randint(2, 5))
            rrule = f"FREQ=MINUTELY;INTERVAL={interval};COUNT={fires}"
        targets = tuple(
            ("email", f"m{i}-{k}@example.com") if rng.random() < 0.4 else ("webhook", f"/h{i}-{k}")
            for k in range(rng.randint(2, 3))
        )
        out.append(Planned(offset, rrule, fires, targets))
        left -= fires
    return out


class Faults:
    """Script each target's answer for one tick, and remember what each request was answered."""

    def __init__(self, rng: random.Random, http: Any, smtp: Any) -> None:
        self.rng, self.http, self.smtp = rng, http, smtp
        self.answered: list[tuple[Any, bool]] = []  # (RecordedRequest, answered 2xx)
        self._seen = 0

    def script(self, reminders: list[Planned]) -> None:
        """Pick this tick's answer of every target (a target tried twice gets the same)."""
        from tests.servers import Reply

        smtp: dict[str, set[str]] = {k: set() for k in SMTP_FAULTS}
        self._kinds: dict[str, str] = {}
        for r in reminders:
            for channel, where in r.targets:
                if channel == "email":
                    smtp[self._pick(SMTP_FAULTS)].add(where)
                    continue
                kind = self._pick(HTTP_FAULTS)
                self._kinds[where] = kind
                after = {"Retry-After": str(self.rng.choice((30, 60, 120)))}
                self.http.respond(
                    where,
                    {
                        "ok": Reply(200, body=b"ok"),
                        "500": Reply(500, body=b"oops"),
                        "503": Reply(503, headers=after),
                        "429": Reply(429, headers=after),
                        "reset": Reply(reset=True),
                        "hang": Reply(503, delay=HANG_S),
                        "4xx": Reply(self.rng.choice((400, 404, 422))),
                        "410": Reply(410),
                    }[kind],
                )
        s = self.smtp
        s.defer, s.hang_up, s.hold = map(frozenset, (smtp["451"], smtp["hang_up"], smtp["hold"]))
        s.reject, s.refuse = frozenset(smtp["554"]), frozenset(smtp["550"])

    def collect(self) -> None:
        """Note what the requests of the tick just run were answered."""
        requests = self.http.requests
        for req in requests[self._seen :]:
            self.answered.append((req, self._kinds.get(req.path) == "ok"))
        self._seen = len(requests)

    def _pick(self, weights: dict[str, float]) -> str:
        return self.rng.choices(list(weights), list(weights.values()))[0]


@dataclass(frozen=True)
class Outcome:
    """A run's tally and how long it took."""

    tally: Tally
    planned_fires: int
    reminders: int
    ticks: int
    seconds: float


def run(db: str, cycles: int, seed: int) -> Outcome:
    """Run `cycles` fires through the CLI on `db` (a path or a postgresql:// URL); audit them."""
    from tests.clirunner import SECRET, Cli
    from tests.servers import HttpSink, SmtpSink

    started = time.perf_counter()
    rng = random.Random(seed)
    reminders = plan(rng, cycles)
    with SmtpSink() as smtp, HttpSink() as http:
        env = {
            "DUEQUEUE_SMTP_URL": smtp.url,
            "DUEQUEUE_EMAIL_FROM": "reminders@example.com",
            "DUEQUEUE_WEBHOOK_SECRET": SECRET,
            "DUEQUEUE_CHANNEL_TIMEOUT": str(TIMEOUT_S),
            # The cycles run on a frozen clock: on PostgreSQL the ticks must judge by it, not by
            # the server's (which knows nothing of the frozen 2027).
            "DUEQUEUE_CLOCK": "host",
        }
        # The CLI takes a postgresql:// URL wherever it takes a path (as tests/pg.py relies on).
        cli = Cli(cast(Path, db), T0, env)
        ids = [_add(cli, r, http) for r in reminders]
        faults = Faults(rng, http, smtp)
        last = max(r.offset + _span(r) for r in reminders)
        ticks = last + DRAIN_MINUTES
        for _ in range(ticks):
            faults.script(reminders)
            cli.tick()
            faults.collect()
            cli.advance(minutes=1)
        histories = []
        for rid in ids:
            r = cli("history", str(rid), "--json")
            assert r.code == 0, r.err
            histories.append(r.json())
        webhooks = [_webhook(req, ok, http) for req, ok in faults.answered]
        emails = [Received((m.rcpt_tos[0], str(m["Message-ID"])), True) for m in smtp.messages]
    tally = audit(histories, webhooks, emails)
    planned = sum(r.fires for r in reminders)
    return Outcome(tally, planned, len(reminders), ticks, time.perf_counter() - started)


def _span(r: Planned) -> int:
    if r.rrule is None:
        return 0
    interval = int(r.rrule.split("INTERVAL=")[1].split(";")[0])
    return interval * (r.fires - 1)


def _add(cli: Any, r: Planned, http: Any) -> int:
    at = (T0 + timedelta(minutes=r.offset)).isoformat()
    args = ["--at", at, "--subject", "fault cycle"]
    if r.rrule:
        args += ["--rrule", r.rrule]
    for channel, where in r.targets:
        args += ["--email", where] if channel == "email" else ["--webhook", http.url(where)]
    rid: int = cli.add(*args)
    return rid


def _webhook(req: Any, ok: bool, http: Any) -> Received:
    data = json.loads(req.body)["data"]
    pair: Pair = (int(data["reminder_id"]), ms(data["fire_at"]), "webhook", http.url(req.path))
    return Received(pair, ok)


def report(store: str, o: Outcome) -> str:
    """Return the figures of one run, one per line."""
    t = o.tally
    lines = [
        f"{store}: {o.seconds:.1f}s, {o.reminders} reminders, {o.ticks} ticks",
        f"  cycles (fires attempted): {t.fires:,} (planned {o.planned_fires:,}, "
        f"{t.skipped_fires:,} coalesced behind a retrying fire)",
        f"  (target, fire) pairs attempted: {t.pairs:,} ({t.attempts:,} attempts: "
        + ", ".join(f"{k} {v:,}" for k, v in sorted(t.outcomes.items()))
        + ")",
        f"  sent: {t.sent:,}",
        f"  dead-lettered: {t.dead:,}",
        f"  still retrying: {t.retrying:,}",
        f"  LOST: {len(t.lost):,}",
        f"  a transient failure beside a target that succeeded: {t.transient_beside_success:,}"
        f" (of which sent on a retry: {t.transient_beside_success_sent:,})",
        f"  sent twice: {len(t.sent_twice):,}; receiver problems: "
        f"{len(t.receiver_repeats) + len(t.unconfirmed) + len(t.unrecorded):,}",
    ]
    return "\n".join(lines + [f"  ! {p}" for p in t.problems[:20]])


@contextmanager
def _throwaway_mysql(server_url: str) -> Iterator[str]:
    """Create a database on the MySQL server for one run; yield its URL; drop it afterwards."""
    from tests.my import admin_connect

    name = f"duequeue_faults_{secrets.token_hex(4)}"
    with admin_connect(server_url) as admin, admin.cursor() as cur:
        cur.execute(f"CREATE DATABASE `{name}`")
        try:
            yield urlsplit(server_url)._replace(path="/" + name).geturl()
        finally:
            cur.execute(f"DROP DATABASE IF EXISTS `{name}`")


@contextmanager
def _throwaway_database(server_url: str) -> Iterator[str]:
    """Create a database on the server for one run; yield its URL; drop it afterwards."""
    import psycopg

    name = f"duequeue_faults_{secrets.token_hex(4)}"
    with psycopg.connect(server_url, autocommit=True, connect_timeout=5) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
        try:
            yield urlsplit(server_url)._replace(path="/" + name).geturl()
        finally:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.fault_cycles", description=__doc__)
    parser.add_argument("--cycles", type=int, default=1480, help="fires to run (default 1480)")
    parser.add_argument("--seed", type=int, default=1234, help="random seed (default 1234)")
    parser.add_argument("--pg", metavar="URL", help="also run on PostgreSQL (a server URL)")
    parser.add_argument("--mysql", metavar="URL", help="also run on MySQL / MariaDB (a server URL)")
    args = parser.parse_args()
    if args.cycles < 1:
        parser.error("--cycles must be at least 1")
    print(f"fault cycles: {args.cycles:,} fires, seed {args.seed}", flush=True)
    broken = False
    with tempfile.TemporaryDirectory() as tmp:
        o = run(str(Path(tmp) / "faults.db"), args.cycles, args.seed)
    print(report("SQLite", o), flush=True)
    broken |= bool(o.tally.problems)
    if args.pg:
        with _throwaway_database(args.pg) as url:
            o = run(url, args.cycles, args.seed)
        print(report("PostgreSQL", o), flush=True)
        broken |= bool(o.tally.problems)
    if args.mysql:
        sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests.my
        with _throwaway_mysql(args.mysql) as url:
            o = run(url, args.cycles, args.seed)
        print(report("MySQL", o), flush=True)
        broken |= bool(o.tally.problems)
    sys.exit(1 if broken else 0)


if __name__ == "__main__":
    main()
