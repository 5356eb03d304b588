"""Issue 23's table, end to end: reminders added under one tz release, ticked under the next.

python -m benchmarks.tz_rules_change [--checkout PATH]

Two releases of a test zone are built with `zic` (benchmarks/tzzones.py): release A (2099a) with
US daylight time, release B (2099b) without it from 2026-11-01. Each row of the issue's table is
added under A on 2027-03-13 (Test/Zone), ticked under A until 2027-03-14 04:00Z, then the zone
folder (PYTHONTZPATH) is B's and ticks go on to 2027-03-16 20:00Z, every 10 minutes of a faked
clock (freezegun), each phase in its own process, against a loopback receiver. Printed: each
row's deliveries as the local time the receiving host's zone data showed, and whether that is
09:00 once a day.

`--checkout` runs the phases with another checkout's duequeue (e.g. `git archive 48b2b1b` of
main, unpacked), so the same table is printed before and after a change.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
from collections import defaultdict
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar
from zoneinfo import ZoneInfo

from benchmarks.common import ROOT
from benchmarks.tzzones import build

ROWS = [
    ("cron '0 9 * * *'", {"cron": "0 9 * * *"}),
    ("FREQ=DAILY --at 2027-03-10T09:00", {"rrule": "FREQ=DAILY", "at": "2027-03-10T09:00"}),
    (
        "FREQ=DAILY;BYHOUR=9;BYMINUTE=0",
        {"rrule": "FREQ=DAILY;BYHOUR=9;BYMINUTE=0", "at": "2027-03-13T00:00"},
    ),
    ("FREQ=DAILY --at 2027-03-14T09:00", {"rrule": "FREQ=DAILY", "at": "2027-03-14T09:00"}),
    ("one-shot --at 2027-03-14T09:00", {"at": "2027-03-14T09:00"}),
    ("one-shot --at 2027-03-14T16:00Z (UTC)", {"at": "2027-03-14T16:00Z"}),
]
ADDED = "2027-03-13T12:00:00+00:00"
SWAP = "2027-03-14T04:00:00+00:00"
END = "2027-03-16T20:00:00+00:00"

# One phase, run in its own process so it reads its own zone folder from the start.
PHASE = """
import json, sys
from datetime import datetime, timedelta
from freezegun import freeze_time
from duequeue import Queue

db, rows, start, end, base = sys.argv[1], json.loads(sys.argv[2]), *sys.argv[3:6]
import duequeue
print("duequeue from", duequeue.__file__, file=sys.stderr)
now, end = datetime.fromisoformat(start), datetime.fromisoformat(end)
with Queue(db) as q:
    if rows:
        with freeze_time(now):
            for i, args in enumerate(rows):
                q.add(tz="Test/Zone", webhooks=[f"{base}/{i}"], **args)
    while now < end:
        with freeze_time(now, real_asyncio=True):
            q.tick()
        now += timedelta(minutes=10)
"""


class _Sink(BaseHTTPRequestHandler):
    received: ClassVar[list[tuple[int, str, str]]] = []  # (row, fire_at, phase)
    phase: ClassVar[str] = "A"

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.received.append((int(self.path.strip("/")), body["data"]["fire_at"], self.phase))
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


def run(checkout: Path) -> dict[str, list[str]]:
    """Run the table with `checkout`'s duequeue; return each row's delivered local times."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        folders = {"A": build(root, "2099a"), "B": build(root, "2099b")}
        server = ThreadingHTTPServer(("127.0.0.1", 0), _Sink)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        base = f"http://127.0.0.1:{server.server_address[1]}"
        db = str(root / "dq.db")
        try:
            for phase, rows, start, end in (
                ("A", [args for _, args in ROWS], ADDED, SWAP),
                ("B", [], SWAP, END),
            ):
                _Sink.phase = phase
                env = {k: v for k, v in os.environ.items() if not k.startswith("DUEQUEUE_")}
                env.update(PYTHONPATH=str(checkout), PYTHONTZPATH=str(folders[phase]))
                subprocess.run(
                    [sys.executable, "-c", PHASE, db, json.dumps(rows), start, end, base],
                    env=env,
                    cwd=checkout,  # `python -c` puts the working directory first on sys.path
                    check=True,
                    timeout=600,
                )
        finally:
            server.shutdown()
        zones = {
            p: ZoneInfo.from_file((f / "Test" / "Zone").open("rb"), key="Test/Zone")
            for p, f in folders.items()
        }
        shown: dict[str, list[str]] = defaultdict(list)
        for row, fire_at, phase in sorted(_Sink.received, key=lambda r: (r[0], r[1])):
            local = datetime.fromisoformat(fire_at.replace("Z", "+00:00")).astimezone(zones[phase])
            shown[ROWS[row][0]].append(f"{local:%m-%d %H:%M}")
        return shown


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.tz_rules_change", description=__doc__
    )
    parser.add_argument("--checkout", type=Path, default=ROOT, help="the duequeue to run")
    args = parser.parse_args()
    shown = run(args.checkout.resolve())
    width = max(len(name) for name, _ in ROWS)
    print(f"{'reminder (Test/Zone)':<{width}}  local times delivered (zone data of the tick)")
    for name, _ in ROWS:
        times = shown.get(name, [])
        days = [t[:5] for t in times]
        once = len(days) == len(set(days))
        if name.endswith("(UTC)"):
            verdict = "an instant: stays 16:00Z" if times == ["03-14 08:00"] else "MOVED"
        else:
            ok = once and all(t.endswith("09:00") for t in times)
            verdict = "09:00 once a day" if ok else "WRONG"
        print(f"{name:<{width}}  {', '.join(times)}  [{verdict}]")


if __name__ == "__main__":
    main()
