"""Zone folders built by `zic` for zone rules changes: two releases of the same zones (the tests,
benchmarks/tz_rules_change.py and benchmarks/tz_recompute.py).

`Test/Zone` is the issue's zone: US daylight time under release A (2099a), none from
2026-11-01 under release B (2099b). `Test/Vancouver` is 2026f's change: US daylight time under
A, daylight time for good from 2026-03-08 under B. `Test/Gap` gets daylight time (a gap at
02:00 on 2027-03-14) only under B. `Test/Same` is the same in both. Releases of year 2099
sort after any real one, so the folders win over the `tzdata` package, as a newer system
folder would (docs/time.md).
"""

import shutil
import subprocess
from pathlib import Path

US = """Rule US 2007 max - Mar Sun>=8 2:00 1:00 D
Rule US 2007 max - Nov Sun>=1 2:00 0 S
"""

ZONES = {
    "2099a": US
    + """Zone Test/Zone -8:00 US P%sT
Zone Test/Vancouver -8:00 US P%sT
Zone Test/Gap -8:00 - PST
Zone Test/Same 5:30 - IST
Zone Etc/UTC 0 - UTC
Link Etc/UTC UTC
""",
    "2099b": US
    + """Zone Test/Zone -8:00 US P%sT 2026 Nov 1 2:00
        -8:00 - PST
Zone Test/Vancouver -8:00 US P%sT 2026 Mar 8 2:00
        -7:00 - MST
Zone Test/Gap -8:00 - PST 2027 Mar 14 2:00
        -7:00 - PDT
Zone Test/Same 5:30 - IST
Zone Etc/UTC 0 - UTC
Link Etc/UTC UTC
""",
}


def zic() -> str:
    """Return the path of zic (libc-bin), or fail saying how to get it."""
    found = shutil.which("zic") or next(
        (p for p in ("/usr/sbin/zic", "/usr/bin/zic", "/sbin/zic") if Path(p).exists()), None
    )
    if found is None:
        raise RuntimeError("zic not found: install libc-bin (Debian) or tzcode")
    return found


def build(root: Path, release: str) -> Path:
    """Compile release's zones into root/release and return that folder."""
    folder = root / release
    folder.mkdir(parents=True)
    source = root / f"{release}.zi"
    source.write_text(f"# version {release}\n" + ZONES[release])
    subprocess.run([zic(), "-d", str(folder), str(source)], check=True, capture_output=True)
    # zic writes no tzdata.zi; duequeue reads the release from its first line.
    shutil.copy(source, folder / "tzdata.zi")
    return folder
