"""Benchmark 5: `duequeue import FILE` of N reminders (JSON Lines), in reminders per second.

The baseline is the time to read and parse the same file in Python (json.loads per line), so
the figure says how much of the budget duequeue's own work takes; the target is absolute.

`python -m benchmarks.bulk_import FILE DB` is issue 34's bare script, run as a process of its
own beside `duequeue import` (timed with benchmarks.peak_rss): it json-parses each line and
`executemany`-inserts the reminders and their targets into two plain SQLite tables in one
transaction, in batches of BARE_BATCH, checking nothing and computing nothing.
"""

import json
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common import Result, duequeue_env, measure

BARE_BATCH = 5_000


def _write(path: Path, n: int) -> None:
    with path.open("w", encoding="utf-8") as f:
        for i in range(n):
            line = {
                "at": "2030-01-05T09:00",
                "tz": "Europe/Berlin",
                "webhooks": [f"https://hooks.example.com/r/{i % 100}"],
                "subject": f"Reminder {i}",
                "key": f"bench-{i}",
            }
            f.write(json.dumps(line) + "\n")


def run(n: int, target: float = 20_000) -> Result:
    """Import `n` reminders into a fresh database; return the result."""
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "reminders.jsonl"
        _write(source, n)
        started = time.perf_counter()
        with source.open(encoding="utf-8") as f:
            for line in f:
                json.loads(line)
        parse_s = time.perf_counter() - started
        done = measure(
            [sys.executable, "-m", "duequeue", "import", str(source)],
            duequeue_env(Path(tmp) / "import.db"),
        )
    baseline = f"json.loads of the file {parse_s:.2f}s ({n / parse_s:,.0f}/s)"
    if done.code != 0 and "No such command" in done.err:
        return Result(
            name=f"5. bulk import, N={n:,}",
            baseline=baseline,
            measured="-",
            ratio=None,
            target=f">= {target:,.0f}/s",
            ok=None,
            note="skipped: import command not available",
        )
    if done.code != 0:
        raise RuntimeError(f"duequeue import failed: {done.err}")
    rate = n / done.seconds
    return Result(
        name=f"5. bulk import, N={n:,}",
        baseline=baseline,
        measured=f"import {done.seconds:.2f}s ({rate:,.0f}/s)",
        ratio=rate,
        target=f">= {target:,.0f}/s",
        ok=rate >= target,
        note="ratio is reminders per second",
    )


def bare(source: Path, db: Path) -> int:
    """Json-parse every line of `source` and insert it into `db`; return the count."""
    import apsw  # the driver duequeue uses

    conn = apsw.Connection(str(db))
    conn.execute(
        "CREATE TABLE reminders (id INTEGER PRIMARY KEY, key TEXT UNIQUE, subject TEXT, "
        "at TEXT, tz TEXT);"
        "CREATE TABLE targets (reminder_id INTEGER, channel TEXT, address TEXT)"
    )
    count = 0
    with conn, source.open("rb") as f:
        while True:
            batch = [json.loads(line) for _, line in zip(range(BARE_BATCH), f, strict=False)]
            if not batch:
                break
            first = count + 1
            conn.executemany(
                "INSERT INTO reminders (id, key, subject, at, tz) VALUES (?, ?, ?, ?, ?)",
                [
                    (first + i, o.get("key"), o.get("subject"), o.get("at"), o.get("tz"))
                    for i, o in enumerate(batch)
                ],
            )
            conn.executemany(
                "INSERT INTO targets VALUES (?, 'webhook', ?)",
                [(first + i, w) for i, o in enumerate(batch) for w in o.get("webhooks", ())],
            )
            count += len(batch)
    conn.close()
    return count


if __name__ == "__main__":
    print(bare(Path(sys.argv[1]), Path(sys.argv[2])))
