"""A stop signal in a tick's last moments is honoured gracefully (issue 30, item 8).

The window: every send has its answer, the deliveries are over, and the tick is writing the
outcomes back. The receiver here answers 200 while it holds the database's write lock (so that
write has to wait), and tells the test when the tick has closed its connection, which the tick
does only once its deliveries are over. The test sends SIGTERM then, and only after the tick has
said it heard it (or died) lets the write go through. The tick must commit the answered send,
print its summary and then die by the signal; the next tick must not send it again.
"""

import contextlib
import json
import queue
import signal
import socket
import subprocess
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_faults import tick_later
from tests.procs import LIMIT_S, reap, run_cli, spawn_cli
from tests.stores import Db, is_sqlite


@pytest.fixture(autouse=True)
def no_leftover_processes() -> Iterator[None]:
    yield
    reap()


class LockingReceiver:
    """A webhook receiver on loopback: on its first request it runs `lock` (the database's
    write lock taken), answers 200 and sets `closed` once the client hangs up; later requests
    are answered 200 at once. `paths` lists every request received."""

    def __init__(self, lock: Callable[[], None]) -> None:
        self.lock = lock
        self.paths: list[str] = []
        self.closed = threading.Event()
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def _serve(self) -> None:
        with contextlib.suppress(OSError):
            while True:
                conn, _ = self.server.accept()
                with conn:
                    self._one(conn)

    def _one(self, conn: socket.socket) -> None:
        data = b""
        while True:  # every request on this connection (aiohttp keeps it alive)
            while b"\r\n\r\n" not in data:
                chunk = conn.recv(65536)
                if not chunk:
                    if self.paths:
                        self.closed.set()
                    return
                data += chunk
            head, _, data = data.partition(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            length = next(
                (
                    int(v)
                    for k, _, v in (h.partition(":") for h in lines[1:])
                    if k.lower() == "content-length"
                ),
                0,
            )
            while len(data) < length:
                data += conn.recv(65536)
            data = data[length:]
            self.paths.append(lines[0].split()[1])
            if len(self.paths) == 1:
                self.lock()  # the outcome of this send must now wait for the database
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")

    def close(self) -> None:
        self.server.close()


class DatabaseLock:
    """The database's write lock (SQLite) or the reminders' row locks (PostgreSQL), taken and
    released from outside duequeue."""

    def __init__(self, db: Db) -> None:
        self.db = db
        self.conn: Any = None

    def take(self) -> None:
        if is_sqlite(self.db):
            import apsw

            self.conn = apsw.Connection(str(self.db))
            self.conn.execute("BEGIN IMMEDIATE")
        else:
            from tests.pg import admin_connect

            self.conn = admin_connect(str(self.db))
            self.conn.execute("BEGIN")
            # The row's lock: the write-back waits on it; a claim skips it (SKIP LOCKED).
            self.conn.execute("SELECT id FROM reminders FOR UPDATE")

    def release(self) -> None:
        if self.conn is None:
            return
        self.conn.execute("ROLLBACK")
        self.conn.close()
        self.conn = None


class Stderr:
    """A process's stderr read on a thread, to the end."""

    def __init__(self, proc: "subprocess.Popen[str]") -> None:
        self.lines: queue.Queue[str | None] = queue.Queue()
        stream = proc.stderr
        assert stream is not None

        def read() -> None:
            for line in stream:
                self.lines.put(line)
            self.lines.put(None)  # the end: the process closed it, or died

        threading.Thread(target=read, daemon=True).start()

    def wait_for_line_or_end(self, fragment: str) -> bool:
        """Return True once a line holds `fragment`, False at the end of the stream."""
        while (line := self.lines.get(timeout=LIMIT_S)) is not None:
            if fragment in line:
                return True
        return False


def ledger(db: Db) -> list[tuple[int, str]]:
    sql = "SELECT reminder_id, outcome FROM deliveries ORDER BY id"
    if is_sqlite(db):
        import apsw

        conn = apsw.Connection(str(db))
        try:
            return [(int(r), str(o)) for r, o in conn.execute(sql).fetchall()]
        finally:
            conn.close()
    from tests.pg import admin_connect

    with admin_connect(str(db)) as pg:
        return [(int(r), str(o)) for r, o in pg.execute(sql).fetchall()]


def test_a_stop_signal_while_the_answered_sends_are_written_back_loses_none_of_them(
    db: Db, tmp_path: Path
) -> None:
    where: Any = db  # run_cli passes it on as DUEQUEUE_DB: a path, or a PostgreSQL URL
    lock = DatabaseLock(db)
    receiver = LockingReceiver(lock.take)
    try:
        added = run_cli(where, "add", "--at", "now", "--webhook", receiver.url("/one"))
        assert added.returncode == 0, added.stderr
        rid = int(added.stdout)
        # A long busy timeout: the write waits for the lock rather than give up before we let go.
        env = {"DUEQUEUE_BUSY_TIMEOUT": "20"}
        proc = spawn_cli(where, "tick", "--json", env=env)
        stderr = Stderr(proc)
        assert receiver.closed.wait(LIMIT_S), "the tick never closed its connection"
        # The deliveries are over, the 200 is in, the outcome waits on the lock: stop now.
        proc.send_signal(signal.SIGTERM)
        # Heard (it says so), or died of it without a word: the ledger below tells which.
        stderr.wait_for_line_or_end("duequeue: SIGTERM: stopping")
        lock.release()
        out, _ = proc.communicate(timeout=LIMIT_S)

        assert ledger(db) == [(rid, "sent")], "the answered send is not in the ledger"
        summary = json.loads(out)  # printed before the process ended
        assert (summary["stopped_by"], summary["sent"], summary["released"]) == ("SIGTERM", 1, 0)
        assert proc.returncode == -signal.SIGTERM  # and then it died by the signal, as asked

        # Nothing is sent again: not by the next tick, not after the lease would have ended.
        again = run_cli(where, "tick", "--json")
        assert (again.returncode, json.loads(again.stdout)["claimed"]) == (0, 0)
        if is_sqlite(db):
            assert tick_later(Path(db), 400).claimed == 0
        assert receiver.paths == ["/one"]
    finally:
        lock.release()
        receiver.close()
