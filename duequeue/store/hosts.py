"""The hosts that tick a shared database (PostgreSQL, MySQL), as their backends note them in
duequeue_meta: one row per host, written by its own ticks only, so hosts never wait on each
other for it.
"""

import contextlib

from duequeue.store.records import HostTick

# "host:<name>" -> "<last tick, server ms> <offset ms>".
HOST_PREFIX = "host:"
# Beside it, "host_tz:<name>" -> the tz release the host's last tick read: a row of its own, so
# that versions reading "host:" rows as before still can; rewritten only when it changes.
TZ_PREFIX = "host_tz:"
# And "host_schema:<name>" -> the schema version of the duequeue its last tick ran (no row: a
# version from before expand/contract), which `migrate --contract` checks (docs/upgrading.md).
SCHEMA_PREFIX = "host_schema:"
DAY_MS = 86_400_000
# The rows hosts() reads.
READ = """SELECT name, value FROM duequeue_meta
    WHERE name LIKE 'host:%' OR name LIKE 'host\\_tz:%' OR name LIKE 'host\\_schema:%'"""


def hosts(rows: list[tuple[object, ...]], now: int) -> tuple[HostTick, ...]:
    """Return the hosts of duequeue_meta's `rows` (name, value) that ticked in the last day
    before `now`, the latest first."""
    found = []
    releases = {
        str(n).removeprefix(TZ_PREFIX): str(v) for n, v in rows if str(n).startswith(TZ_PREFIX)
    }
    schemas = {
        str(n).removeprefix(SCHEMA_PREFIX): str(v)
        for n, v in rows
        if str(n).startswith(SCHEMA_PREFIX)
    }
    for name, value in rows:
        if not str(name).startswith(HOST_PREFIX):
            continue
        at, _, offset = str(value).partition(" ")
        host = str(name).removeprefix(HOST_PREFIX)
        with contextlib.suppress(ValueError):
            code = schemas.get(host)
            tick = HostTick(
                host, int(at), int(offset), releases.get(host), int(code) if code else None
            )
            if tick.at > now - DAY_MS:
                found.append(tick)
    return tuple(sorted(found, key=lambda h: (-h.at, h.host)))
