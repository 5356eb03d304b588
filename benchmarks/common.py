"""What every benchmark shares: results with a verdict, child processes, and a seeded database."""

import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
T_DUE = 1_700_000_000_000  # every seeded due row fires at this instant (ms): long past


@dataclass(frozen=True)
class Result:
    """One benchmark figure: duequeue against a baseline measured in the same run."""

    name: str
    baseline: str  # what the baseline is, with its figure
    measured: str  # what duequeue did, with its figure
    ratio: float | None  # the figure the target is about; None when skipped
    target: str  # e.g. ">= 0.5"
    ok: bool | None  # None when skipped
    note: str = ""

    @property
    def verdict(self) -> str:
        """Return PASS, FAIL or SKIPPED."""
        return "SKIPPED" if self.ok is None else ("PASS" if self.ok else "FAIL")

    def line(self) -> str:
        """Return the one-line text form printed while the benchmarks run."""
        ratio = "-" if self.ratio is None else f"{self.ratio:.2f}"
        note = f" ({self.note})" if self.note else ""
        return (
            f"{self.name}: ratio {ratio} (target {self.target}) {self.verdict}; "
            f"baseline {self.baseline}; duequeue {self.measured}{note}"
        )


def python_env() -> dict[str, str]:
    """Return an environment whose `python -m X` finds this checkout, with bytecode caching on.

    Without cached bytecode every duequeue process would compile its modules first, which an
    installed package never does (pip compiles on install); `compile_all` warms the cache.
    """
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = str(ROOT)
    return env


def compile_all() -> None:
    """Write the bytecode of this checkout (into its git-ignored __pycache__ folders)."""
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", "duequeue", "benchmarks"],
        env=python_env(),
        cwd=ROOT,
        check=True,
        stdout=subprocess.DEVNULL,
    )


def duequeue_env(db: Path, **settings: str) -> dict[str, str]:
    """Return an environment that runs this checkout's duequeue on `db`, nothing else set."""
    env = {k: v for k, v in python_env().items() if not k.startswith("DUEQUEUE_")}
    env["DUEQUEUE_DB"] = str(db)
    # No config file, as on a plain cron line: the default path, in an empty directory.
    env["XDG_CONFIG_HOME"] = str(db.parent / "no-config-here")
    env.update({f"DUEQUEUE_{k.upper()}": v for k, v in settings.items()})
    return env


@dataclass(frozen=True)
class Run:
    """One child process, timed from spawn to exit, with its peak resident memory."""

    seconds: float
    cpu_seconds: float
    peak_rss_mb: float
    code: int
    out: str
    err: str


def measure(args: Sequence[str], env: Mapping[str, str], timeout: float = 600) -> Run:
    """Run `args` under benchmarks.peak_rss, so its peak RSS is its own and no one else's."""
    wrapper = [sys.executable, "-m", "benchmarks.peak_rss", *args]
    done = subprocess.run(
        wrapper,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
    )
    if done.returncode != 0:
        raise RuntimeError(f"peak_rss wrapper failed: {done.stderr}")
    report: dict[str, Any] = json.loads(done.stdout)
    return Run(
        report["seconds"],
        report["cpu_seconds"],
        report["peak_rss_kb"] / 1024,
        report["code"],
        report["out"],
        report["err"],
    )


def delivery_result(
    name: str, baseline: str, n: int, target: float, pairs: Sequence[tuple[Run, Run]]
) -> Result:
    """Fold rounds of (baseline, tick) runs delivering `n` into one Result: the median of the
    rounds' ratios (baseline seconds / tick seconds), each round's ratio and the median CPU."""
    ratios = [bare.seconds / tick.seconds for bare, tick in pairs]
    ratio = statistics.median(ratios)
    bare_s = statistics.median(bare.seconds for bare, _ in pairs)
    tick_s = statistics.median(tick.seconds for _, tick in pairs)
    bare_cpu = statistics.median(bare.cpu_seconds for bare, _ in pairs)
    tick_cpu = statistics.median(tick.cpu_seconds for _, tick in pairs)
    return Result(
        name=name,
        baseline=f"{baseline} {bare_s:.2f}s ({n / bare_s:,.0f}/s)",
        measured=f"tick {tick_s:.2f}s ({n / tick_s:,.0f}/s)",
        ratio=ratio,
        target=f">= {target}",
        ok=ratio >= target,
        note=(
            f"median of {len(pairs)} rounds, ratios "
            + ", ".join(f"{r:.2f}" for r in ratios)
            + f"; CPU s: bare {bare_cpu:.1f}, tick {tick_cpu:.1f}"
        ),
    )


def wall(args: Sequence[str], env: Mapping[str, str]) -> float:
    """Return the wall seconds of one run of `args` (spawn to exit), which must succeed."""
    started = time.perf_counter()
    subprocess.run(args, env=env, check=True, stdout=subprocess.DEVNULL, cwd=ROOT)
    return time.perf_counter() - started


def seed(
    db: Path,
    due: int,
    *,
    pending: int = 0,
    webhook: str | Sequence[str] | None = None,
    email: str | None = None,
    first_id: int = 1,
) -> None:
    """Create `db` with duequeue's schema and `due` one-shot rows due now, one target each,
    plus `pending` rows due far in the future; bulk-inserted in one transaction. Ids start at
    `first_id`, so that several databases sending to one sink never share a webhook-id.
    Several webhook URLs are given to the rows in turn."""
    import apsw

    from duequeue.schedule import release
    from duequeue.store.sqlite import connect as open_sqlite

    open_sqlite(db).close()  # the schema, exactly as duequeue creates it
    conn = apsw.Connection(str(db))
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = OFF")
    channel, address = ("webhook", webhook) if webhook else ("email", email)
    assert address is not None
    addresses = [address] if isinstance(address, str) else list(address)
    far = T_DUE + 10 * 365 * 86_400_000
    with conn:
        rows = [
            (i, f"Reminder {i}", "Due today", T_DUE + (i % 1000), T_DUE, T_DUE)
            for i in range(first_id, first_id + due)
        ] + [
            (i, f"Later {i}", "Not yet", far + i, T_DUE, T_DUE)
            for i in range(first_id + due, first_id + due + pending)
        ]
        conn.executemany(
            """INSERT INTO reminders (id, subject, body, tz, dtstart, fire_at, next_fire_at,
                   created_at, updated_at, fire_release)
               VALUES (?1, ?2, ?3, 'UTC', ?4, ?4, ?4, ?5, ?6, ?7)""",
            # Computed by the tz release in use, as `add` and `import` record: else the first
            # tick would first compute every row again (issue 23's catch-up), which a real
            # queue only does once after a tz data update.
            [(*row, release.in_use() or "") for row in rows],
        )
        conn.executemany(
            "INSERT INTO targets (id, reminder_id, channel, address) VALUES (?1, ?1, ?2, ?3)",
            (
                (i, channel, addresses[i % len(addresses)])
                for i in range(first_id, first_id + due + pending)
            ),
        )
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
