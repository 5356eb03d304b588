"""Checkpoints of an SQLite write-ahead log on a thread of their own, for a connection that
commits without pause (a tick's commit helper draining a backlog).

By default the connection that commits past 1,000 WAL pages copies them into the database file
itself, with its fsyncs, before its COMMIT returns: at 10^6 rows, where a batch's pages are
spread over the file, about a third of the helper's time went to that, and the tick's senders
waited for claims queued behind it (BENCHMARKS.md, "Issue 34: draining a million"). Here the
commit only wakes a second connection, which checkpoints PASSIVE (it never blocks a writer or a
reader) while the writer goes on. Durability does not change: with synchronous=NORMAL the WAL
is fsynced at checkpoints either way, and a checkpoint cut short by a crash is run again.

Should the checkpoints fall behind (a reader holding an old snapshot, a slow disk), the writer
checkpoints itself once the log is FALLBACK times the usual size, as SQLite would have: the
log stays bounded.
"""

from __future__ import annotations

import contextlib
import threading

import apsw

PAGES = 1000  # SQLite's own wal_autocheckpoint default
FALLBACK = 16  # the log the writer lets grow before it checkpoints itself


class Checkpointer:
    """Checkpoint `path`'s WAL on a thread, woken by commits of `conn`; close() stops it."""

    def __init__(self, conn: apsw.Connection, path: str, busy_timeout_ms: int) -> None:
        self._conn = conn
        self._wake = threading.Event()
        self._stopping = False
        # Opened here, so that a file it cannot open fails the caller, not the thread.
        self._own = apsw.Connection(path, flags=apsw.SQLITE_OPEN_READWRITE)
        self._own.setbusytimeout(busy_timeout_ms)
        self.runs = 0  # checkpoints the thread has run (tests read it)
        self._thread = threading.Thread(target=self._run, name="duequeue-checkpoint", daemon=True)
        self._thread.start()
        conn.set_wal_hook(self._committed)

    def _committed(self, conn: apsw.Connection, name: str, pages: int) -> int:
        # Called by SQLite on the writer's thread after each commit, with the log's size.
        if pages >= PAGES:
            self._wake.set()
        if pages >= PAGES * FALLBACK:
            # Busy (the thread is checkpointing now) or failed: either way the commit has
            # happened, and an error returned from here would make its COMMIT report a failure.
            # SQLite's own hook ignores the checkpoint's result the same way.
            with contextlib.suppress(apsw.Error):
                conn.wal_checkpoint(name)
        return apsw.SQLITE_OK

    def _run(self) -> None:
        while True:
            self._wake.wait()
            self._wake.clear()
            if self._stopping:
                return
            # Busy (another process checkpointing), or anything else: the next commit wakes
            # this again, and the writer's fallback bounds the log meanwhile.
            with contextlib.suppress(apsw.Error):
                self._own.wal_checkpoint(mode=apsw.SQLITE_CHECKPOINT_PASSIVE)
                self.runs += 1

    def close(self) -> None:
        """Stop the thread (after the checkpoint it is running, if any) and give the writer
        back SQLite's own checkpoints."""
        self._stopping = True
        self._wake.set()
        self._thread.join()
        with contextlib.suppress(apsw.Error):
            self._conn.wal_autocheckpoint(PAGES)  # replaces the hook, as SQLite documents
        self._own.close()
