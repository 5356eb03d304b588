"""Run one command as our only child; print its wall time, peak RSS and output as JSON.

A fresh parent per measurement, because RUSAGE_CHILDREN reports the largest child a process
ever waited for, not the last one.
"""

import json
import resource
import subprocess
import sys
import time


def main() -> None:
    started = time.perf_counter()
    done = subprocess.run(sys.argv[1:], capture_output=True, text=True)
    seconds = time.perf_counter() - started
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    peak_kb = usage.ru_maxrss  # KiB on Linux
    report = {
        "seconds": seconds,
        "cpu_seconds": usage.ru_utime + usage.ru_stime,
        "peak_rss_kb": peak_kb,
        "code": done.returncode,
        "out": done.stdout,
        "err": done.stderr,
    }
    print(json.dumps(report))


if __name__ == "__main__":
    main()
