"""duequeue's version, read from its installed package metadata (pyproject.toml writes it once).

Reading metadata costs tens of milliseconds, so only what shows the version imports this module:
`duequeue.__version__` loads it on first use, and the webhook channel for its User-Agent.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("duequeue")
except PackageNotFoundError:  # a source tree on sys.path that was never installed
    __version__ = "0+unknown"
