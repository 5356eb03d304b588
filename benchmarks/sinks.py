"""Start a sink as a separate process and talk to it."""

import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager

from benchmarks.common import ROOT, python_env


@contextmanager
def sink_process(module: str, *args: str) -> Iterator[list[int]]:
    """Run `python -m benchmarks.<module> ARGS` and yield the ports it prints on its first
    line; stop it afterwards."""
    proc = subprocess.Popen(
        [sys.executable, "-m", f"benchmarks.{module}", *args],
        stdout=subprocess.PIPE,
        text=True,
        env=python_env(),
        cwd=ROOT,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if not line.split() or not all(word.isdigit() for word in line.split()):
            raise RuntimeError(f"{module} did not start: {line!r}")
        yield [int(word) for word in line.split()]
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def http_stats(port: int) -> tuple[int, int]:
    """Return (requests, distinct webhook-ids) the HTTP sink has seen so far."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/stats", timeout=10) as response:
        count, ids = response.read().decode().split()
    return int(count), int(ids)
