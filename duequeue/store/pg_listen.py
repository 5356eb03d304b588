"""A `worker` on PostgreSQL wakes when a fire is made due, not only on its poll: LISTEN on a
connection of its own for the NOTIFY that the writes which make a fire due send at commit
(sql.POSTGRES.notify_due: add, import, retry, reschedule), as pgqueuer does. Polling stays the
fallback: a lost notification, or this connection lost, costs at most one poll interval."""

from typing import Any

import psycopg

CHANNEL = "duequeue_due"


class PgListener:
    """LISTEN duequeue_due on its own autocommit connection (the store's is busy with ticks)."""

    def __init__(self, url: str, settings: dict[str, Any]) -> None:
        self._url, self._settings = url, settings
        self._conn: psycopg.Connection[Any] | None = None

    def wait(self, timeout_s: float) -> list[int | None] | None:
        """Wait up to `timeout_s` for fires made due; return their instants (unix ms; None: one
        or more not named), [] when none came, or None when it cannot listen now (the link or
        the server is down: the caller waits out its poll as it would without this)."""
        try:
            conn = self._listening(timeout_s)
            woke = [_fire(n.payload) for n in conn.notifies(timeout=timeout_s, stop_after=1)]
            # Whatever else already arrived comes along, without waiting again.
            woke += [_fire(n.payload) for n in conn.notifies(timeout=0)]
        except psycopg.Error:
            self.close()
            return None
        return woke

    def close(self) -> None:
        """Stop listening and close the connection."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def _listening(self, timeout_s: float) -> psycopg.Connection[Any]:
        if self._conn is None or self._conn.closed:
            # Connecting may not hold up the poll it stands in for by more than a moment (libpq
            # counts whole seconds, 2 at least).
            settings = {**self._settings, "connect_timeout": str(max(2, min(10, int(timeout_s))))}
            conn = psycopg.connect(self._url, autocommit=True, **settings)
            conn.execute(f"LISTEN {CHANNEL}")
            self._conn = conn
        return self._conn


def _fire(payload: str) -> int | None:
    try:
        return int(payload)
    except ValueError:
        return None
