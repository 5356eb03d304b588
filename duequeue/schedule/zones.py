"""Which IANA tz database duequeue reads: the newer of the system's and the `tzdata` package's.

Python's zoneinfo reads the system's files (zoneinfo.TZPATH: /usr/share/zoneinfo, or
PYTHONTZPATH) first and only falls back to the `tzdata` package. Zone rules change several times
a year and a host's OS package often lags the one on PyPI, so before the first zone is loaded the
search path is pointed at whichever of the two is the newer release. Every zone duequeue loads
goes through `zone()`, so this happens once per process, when a zone is first needed: a tick
with nothing due never pays for it.
"""

import hashlib
import os
from dataclasses import dataclass
from functools import lru_cache
from importlib.resources import files
from zoneinfo import ZoneInfo, reset_tzpath

from duequeue.schedule import release

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
_system_dir: str | None = None


def in_use() -> TzData:
    """Choose the tz database once per process (before any zone is loaded) and return it."""
    global _in_use, _system_dir
    if _in_use is None:
        choice = choose(release.tzpath(), release.package())
        _in_use, _system_dir = _apply(choice), choice.system_dir
        release.chosen(_in_use.version)
    return _in_use


@lru_cache(maxsize=1024)  # `import` asks once a line; reset() forgets them
def digest(name: str) -> str | None:
    """Return a digest of the compiled rules zone `name` is loaded from, None if unreadable.

    Two releases whose files of a zone are the same give it the same fires, so fires computed
    by one need not be computed again for the other (engine/recompute.py).
    """
    in_use()
    data = None
    if _system_dir is not None:
        try:
            with open(os.path.join(_system_dir, *name.split("/")), "rb") as f:
                data = f.read()
        except OSError:
            data = None  # zoneinfo then reads the tzdata package's file: so does this
    if data is None:
        try:
            data = files("tzdata.zoneinfo").joinpath(*name.split("/")).read_bytes()
        except (ImportError, OSError, ValueError):
            return None
    return hashlib.sha256(data).hexdigest()[:32]


def reset() -> None:
    """Choose the tz database again and drop every zone loaded (tests that swap zone folders)."""
    global _in_use, _system_dir
    _in_use, _system_dir = None, None
    release.forget()
    reset_tzpath()
    ZoneInfo.clear_cache()
    digest.cache_clear()


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
    version, system_dir, from_package = release.pick(tzpath, package)
    if from_package:
        return Choice(TzData(version, "the tzdata package"), None)
    if system_dir is None:
        return Choice(TzData(None, "nowhere: install the tzdata package"), None)
    return Choice(TzData(version, f"the system's {system_dir}"), system_dir)


def _apply(choice: Choice) -> TzData:
    # The one folder chosen (an empty search path makes zoneinfo read the tzdata package), so
    # the zones loaded are those of the release `release.in_use()` names.
    reset_tzpath(to=[] if choice.system_dir is None else [choice.system_dir])
    return choice.tzdata
