"""Which IANA tz database duequeue reads: the newer of the system's and the `tzdata` package's.

Python's zoneinfo reads the system's files (zoneinfo.TZPATH: /usr/share/zoneinfo, or
PYTHONTZPATH) first and only falls back to the `tzdata` package. Zone rules change several times
a year and a host's OS package often lags the one on PyPI, so before the first zone is loaded the
search path is pointed at whichever of the two is the newer release. Every zone duequeue loads
goes through `zone()`, so this happens once per process, when a zone is first needed: a tick
with nothing due never pays for it.
"""

import os
from dataclasses import dataclass
from importlib import import_module
from zoneinfo import TZPATH, ZoneInfo, reset_tzpath

# Zone files that name the host's setting rather than a place: a stored reminder would change
# meaning when the database moves to another host.
_HOST_ZONES = frozenset({"localtime", "posixrules"})


@dataclass(frozen=True, slots=True)
class TzData:
    """The tz database in use: its IANA release (None if unknown) and where it comes from."""

    version: str | None
    source: str

    def describe(self) -> str:
        """Return e.g. `2026f from the tzdata package`."""
        return f"{self.version or 'unknown version'} from {self.source}"


_in_use: TzData | None = None


def in_use() -> TzData:
    """Choose the tz database once per process (before any zone is loaded) and return it."""
    global _in_use
    if _in_use is None:
        _in_use = _apply(choose(TZPATH, _package_version()))
    return _in_use


def zone(name: str) -> ZoneInfo:
    """Return the IANA zone `name` from the tz database in use.

    Raise ValueError (or zoneinfo's ZoneInfoNotFoundError, a KeyError) for a name that is not a
    zone; OSError if its file cannot be read.
    """
    in_use()
    if name in _HOST_ZONES:
        raise ValueError(f"{name!r} names the host's zone setting, not a place")
    return ZoneInfo(name)


@dataclass(frozen=True, slots=True)
class Choice:
    """The tz database to use; `system_dir` None means the `tzdata` package."""

    tzdata: TzData
    system_dir: str | None


def choose(tzpath: tuple[str, ...], package: str | None) -> Choice:
    """Pick the newer of the system's tz database (first dir of `tzpath`) and the package's."""
    system_dir, system = _system(tzpath)
    if package is not None and (system is None or _release_key(package) > _release_key(system)):
        return Choice(TzData(package, "the tzdata package"), None)
    if system_dir is None:
        return Choice(TzData(None, "nowhere: install the tzdata package"), None)
    return Choice(TzData(system, f"the system's {system_dir}"), system_dir)


def _apply(choice: Choice) -> TzData:
    if choice.system_dir is None:
        # An empty search path makes zoneinfo read the tzdata package.
        reset_tzpath(to=[])
    return choice.tzdata


def _system(tzpath: tuple[str, ...]) -> tuple[str | None, str | None]:
    """Return the first existing zone dir of the search path and its release, if it says."""
    for path in tzpath:
        if not os.path.isdir(path):
            continue
        try:
            # tzdata.zi, shipped with the compiled zones, starts with "# version 2025b".
            with open(os.path.join(path, "tzdata.zi"), encoding="ascii") as f:
                words = f.readline().split()
        except (OSError, UnicodeDecodeError):
            return path, None
        if len(words) == 3 and words[:2] == ["#", "version"]:
            return path, words[2]
        return path, None
    return None, None


def _package_version() -> str | None:
    try:
        # By name: tzdata ships no type information.
        return str(import_module("tzdata").IANA_VERSION)
    except (ImportError, AttributeError):
        return None


def _release_key(version: str) -> tuple[int, int, str]:
    """Order IANA releases: 2025b < 2026a < 2026f (after z would come za)."""
    year, letters = version[:4], version[4:]
    return (int(year) if year.isdigit() else 0, len(letters), letters)
