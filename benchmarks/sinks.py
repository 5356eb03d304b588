"""Start a sink as a separate process and talk to it."""

import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager

from benchmarks.common import ROOT, python_env


@contextmanager
def sink_process(module: str) -> Iterator[int]:
    """Run `python -m benchmarks.<module>` and yield the port it prints; stop it afterwards."""
    proc = subprocess.Popen(
        [sys.executable, "-m", f"benchmarks.{module}"],
        stdout=subprocess.PIPE,
        text=True,
        env=python_env(),
        cwd=ROOT,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if not line.strip().isdigit():
            raise RuntimeError(f"{module} did not start: {line!r}")
        yield int(line)
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def http_stats(port: int) -> tuple[int, int]:
    """Return (requests, distinct webhook-ids) the HTTP sink has seen so far."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/stats", timeout=10) as response:
        count, ids = response.read().decode().split()
    return int(count), int(ids)
