"""Which IANA tz release duequeue reads, found without loading zoneinfo or any zone.

Cron's tick compares this release with the one that computed each pending fire (store), every
minute, so finding it must cost a file's first line and a tiny import: zoneinfo, dateutil and
the zones themselves load only when a fire has to be computed. `zones.py` applies the same
choice when it loads a zone, so the two always name the same release.
"""

import os
from importlib import import_module


def tzpath() -> tuple[str, ...]:
    """Return the system search path zoneinfo would use: PYTHONTZPATH, else the build's."""
    env = os.environ.get("PYTHONTZPATH")
    if env is not None:
        # zoneinfo ignores relative entries of PYTHONTZPATH; so does this.
        return tuple(p for p in env.split(os.pathsep) if p and os.path.isabs(p))
    # sysconfig only here: it is what zoneinfo reads its default from, and a tick with
    # PYTHONTZPATH set does not need it.
    import sysconfig

    built = sysconfig.get_config_var("TZPATH") or ""
    return tuple(p for p in built.split(os.pathsep) if p and os.path.isabs(p))


def system(path: tuple[str, ...]) -> tuple[str | None, str | None]:
    """Return the first existing zone dir of the search path and its release, if it says."""
    for folder in path:
        if not os.path.isdir(folder):
            continue
        try:
            # tzdata.zi, shipped with the compiled zones, starts with "# version 2025b".
            with open(os.path.join(folder, "tzdata.zi"), encoding="ascii") as f:
                words = f.readline().split()
        except (OSError, UnicodeDecodeError):
            return folder, None
        if len(words) == 3 and words[:2] == ["#", "version"]:
            return folder, words[2]
        return folder, None
    return None, None


def package() -> str | None:
    """Return the release of the `tzdata` package, or None when it is not installed."""
    try:
        # By name: tzdata ships no type information. Its __init__ is two constants.
        return str(import_module("tzdata").IANA_VERSION)
    except (ImportError, AttributeError):
        return None


def key(version: str) -> tuple[int, int, str]:
    """Order IANA releases: 2025b < 2026a < 2026f (after z would come za)."""
    year, letters = version[:4], version[4:]
    return (int(year) if year.isdigit() else 0, len(letters), letters)


def newer(a: str, b: str) -> bool:
    """Return whether release a is newer than release b ('' is older than any)."""
    if not b:
        return bool(a)
    return bool(a) and key(a) > key(b)


def pick(path: tuple[str, ...], pkg: str | None) -> tuple[str | None, str | None, bool]:
    """Return (release, system dir, from the package) for the newer of the two databases."""
    folder, found = system(path)
    if pkg is not None and (found is None or key(pkg) > key(found)):
        return pkg, None, True
    return found, folder, False


_current: str | None = None
_known = False


def in_use() -> str | None:
    """Return the release duequeue reads in this process (None: unknown), found once."""
    global _current, _known
    if not _known:
        _current, _known = pick(tzpath(), package())[0], True
    return _current


def chosen(version: str | None) -> None:
    """Note the release zones.py chose for this process (the two always agree)."""
    global _current, _known
    _current, _known = version, True


def on_disk() -> str | None:
    """Return the release a new process would read now: the system folder's tzdata.zi first
    line and the `tzdata` package's version as its file says it (an upgrade of the package
    under a running process is seen too; the imported module keeps the old constant)."""
    return pick(tzpath(), _package_on_disk())[0]


def changed() -> str | None:
    """Return the release on disk when it is no longer the one this process reads ('' when it
    is unknown there); None when it is the same, or when nothing was read yet (the first use
    reads the disk anyway). A long-running process (`worker`) asks this between ticks."""
    if not _known:
        return None
    found = on_disk()
    return None if found == _current else (found or "")


def _package_on_disk() -> str | None:
    # Only a long-running process (`worker`) asks, between ticks: cron's tick never imports these.
    import re
    from importlib import util

    try:
        spec = util.find_spec("tzdata")
    except (ImportError, ValueError):
        return None
    if spec is None or spec.origin is None:
        return None
    try:
        with open(spec.origin, encoding="utf-8") as f:
            found = re.search(r"""^IANA_VERSION\s*=\s*["']([^"']+)["']""", f.read(4096), re.M)
    except (OSError, UnicodeDecodeError):
        return package()
    return found.group(1) if found else package()


def forget() -> None:
    """Find the release again on next use (tests that swap zone folders in one process)."""
    global _known
    _known = False
