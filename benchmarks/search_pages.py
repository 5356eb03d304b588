"""serve's search at 10^6 reminders, with `/api/v1/stats` and the overview beside it: this
checkout against a baseline checkout (by default the commit before search's index) in the same
run, on the same machine, each on a database it built itself from the same lines.

    python -m benchmarks.search_pages                      # 10^6 reminders, base 6a883ae
    python -m benchmarks.search_pages --n 100000           # smaller
    python -m benchmarks.search_pages --base-rev main      # another baseline (a git revision)

Each side imports the same JSON lines with `duequeue import` (timed: the write path's cost of
the search text), then gets serve_pages.py's ledger, done, cancelled and dead-lettered rows by
SQL, then runs `duequeue serve`. Page times are the server's own (its Server-Timing header),
median of `--repeat` requests after a warm-up. `Queue.add` is timed on a fresh database per
side. The ratio is this checkout's figure over the baseline's: under 1 is faster.
"""

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from io import BytesIO
from pathlib import Path

import aiohttp

from benchmarks.common import ROOT
from benchmarks.serve_pages import DAY_MS, Server, fill

BASE_REV = "6a883ae"  # main before search's index (schema version 10)

# name -> path. Rare terms walk most of the list in the baseline; a common term in a state
# with no row, and a term too short for trigrams that is in no row, are the window's worst case.
PAGES = {
    "search 'invoice 4242' (1,111 matches)": "/reminders?search=invoice+4242",
    "search 'inv-987654' (1 match), API": "/api/v1/reminders?search=inv-987654",
    "search 'zzqx' (no match)": "/reminders?search=zzqx",
    "search 'example', state retrying (none)": "/reminders?state=retrying&search=example",
    "search 'q!' (2 chars, no match)": "/reminders?search=q!",
    "search 'example' (all match)": "/reminders?search=example",
    "/api/v1/stats": "/api/v1/stats",
    "overview /": "/",
    "list, first page (no search)": "/reminders",
}


def _env(tree: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DUEQUEUE_")}
    env["PYTHONPATH"] = str(tree)
    return env


def _lines(path: Path, n: int) -> None:
    with path.open("w", encoding="utf-8") as out:
        for i in range(n):
            at = 60 + (i * 7919) % (DAY_MS // 1000)  # spread over the next day
            line = {"at": f"+{at}s", "webhooks": [f"https://hooks.example.com/r/{i % 1000}"],
                    "subject": f"Invoice {i} is due", "key": f"inv-{i}"}  # fmt: skip
            out.write(json.dumps(line) + "\n")


def _import(tree: Path, db: Path, lines: Path) -> float:
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "duequeue", "--db", str(db), "import", str(lines)],
        env=_env(tree), cwd=tree, check=True, capture_output=True,
    )  # fmt: skip
    return time.perf_counter() - started


def _adds(tree: Path, db: Path, n: int) -> float:
    """Return Queue.add's microseconds per add on a fresh database, in `tree`'s code."""
    code = f"""
import time
from duequeue import Queue
with Queue({str(db)!r}) as q:
    q.stats()
    started = time.perf_counter()
    for i in range({n}):
        q.add(at="+1d", webhooks=[f"https://hooks.example.com/{{i % 100}}"],
              subject=f"Invoice {{i}} is due", key=f"k-{{i}}")
    print((time.perf_counter() - started) / {n} * 1e6)
"""
    done = subprocess.run([sys.executable, "-c", code], env=_env(tree), cwd=tree, check=True,
                          capture_output=True, text=True)  # fmt: skip
    return float(done.stdout.strip())


async def _times(url: str, repeat: int) -> dict[str, float]:
    found: dict[str, float] = {}
    async with aiohttp.ClientSession() as s:
        for name, path in PAGES.items():
            server = []
            for i in range(repeat + 1):
                async with s.get(url + path) as r:
                    await r.read()
                    assert r.status == 200, (path, r.status)
                    if i:  # the first is a warm-up
                        server.append(float(r.headers["Server-Timing"].split("dur=")[1]))
            found[name] = statistics.median(server)
    return found


def _serve(tree: Path, db: Path, repeat: int) -> dict[str, float]:
    server = Server(db, tree)
    try:
        return asyncio.run(_times(server.url, repeat))
    finally:
        server.stop()


def _checkout(rev: str, into: Path) -> Path:
    """Unpack `rev` of this repository into `into` (git archive: no worktree metadata)."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev], check=True,
                             capture_output=True).stdout  # fmt: skip
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into


def side(tree: Path, work: Path, lines: Path, n: int, adds: int, repeat: int) -> dict[str, float]:
    """Measure one checkout: import, Queue.add, the database's size, and the pages."""
    db = work / "big.db"
    figures = {"import, s": _import(tree, db, lines)}
    figures["import, us a line"] = figures["import, s"] / n * 1e6
    fill(db, int(time.time() * 1000))
    figures["database size, MB"] = (
        sum(p.stat().st_size for p in work.iterdir() if p.name.startswith("big.db")) / 1e6
    )
    figures["Queue.add, us an add"] = _adds(tree, work / "adds.db", adds)
    figures.update({f"{k}, ms": v for k, v in _serve(tree, db, repeat).items()})
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.search_pages", description=__doc__)
    parser.add_argument("--n", type=int, default=1_000_000, help="reminders")
    parser.add_argument("--repeat", type=int, default=10, help="requests per page")
    parser.add_argument("--adds", type=int, default=2_000, help="Queue.add calls per side")
    parser.add_argument("--base-rev", default=BASE_REV, help="the baseline's git revision")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        lines = root / "lines.jsonl"
        _lines(lines, args.n)
        base = _checkout(args.base_rev, root / "base")
        results = {}
        for name, tree in (("base", base), ("this", ROOT)):
            work = root / f"work-{name}"
            work.mkdir()
            results[name] = side(tree, work, lines, args.n, args.adds, args.repeat)
            (work / "big.db").unlink()  # room for the other side
    print(f"\n{args.n:,} reminders; this checkout against {args.base_rev} (the baseline), "
          f"same run; page times are the server's, median of {args.repeat}:")  # fmt: skip
    print(f"  {'measure':44} {'baseline':>10} {'this':>10} {'ratio':>7}")
    for name, before in results["base"].items():
        after = results["this"][name]
        print(f"  {name:44} {before:10.1f} {after:10.1f} {after / before:7.2f}")


if __name__ == "__main__":
    main()
