"""The overview (`/`) and `GET /api/v1/stats` at 10^6 reminders, the server's own time, for
two checkouts in the same run (before and after a change), alternating, two rounds each.

    python -m benchmarks.serve_counts --before /path/to/other/checkout
    python -m benchmarks.serve_counts --db postgresql://... --before ...   # an existing database

Without --db the database is serve_pages.py's (10^6 reminders and ledger rows, built in a temp
dir); a PostgreSQL one is built the same way: serve_pages' lines through `import`, then its fill.
"""

import argparse
import asyncio
import tempfile
from pathlib import Path

from benchmarks.common import ROOT
from benchmarks.serve_pages import Server, _page_times, build

PATHS = {"overview /": "/", "API stats": "/api/v1/stats"}


def measure(db: str, trees: list[Path], repeat: int) -> None:
    for rnd in range(2):
        for tree in trees:
            server = Server(db, tree)  # type: ignore[arg-type]  # a URL is a --db too
            try:
                times = asyncio.run(_page_times(server.url, PATHS, repeat))
            finally:
                server.stop()
            for name, (median, worst, _client) in times.items():
                print(f"round {rnd}  {tree!s:28} {name:12} median {median:7.1f} ms  "
                      f"worst {worst:7.1f} ms", flush=True)  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.serve_counts", description=__doc__)
    parser.add_argument("--db", help="an existing database (path or URL); default: build one")
    parser.add_argument("--before", type=Path, help="the other checkout, measured first")
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    trees = ([args.before] if args.before else []) + [ROOT]
    if args.db:
        measure(args.db, trees, args.repeat)
        return
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "big.db"
        build(db, args.n)
        measure(str(db), trees, args.repeat)


if __name__ == "__main__":
    main()
