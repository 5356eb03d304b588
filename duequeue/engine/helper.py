"""A Runner in a second process: a large tick's commits and claims, off the tick's core.

At thousands of rows a tick, the database's work (writing the ledger and the rows, claiming the
next batches) competes with the sends for the one thread that runs Python in the tick's
process: a database thread holds the GIL for each row it steps through. A second process opens
the same store and runs the very same calls (Store.commit, Store.claim), in the order they were
handed over; the tick only encodes the requests and decodes the replies (BENCHMARKS.md has the
figures that keep it).

What holds whatever happens:

- The helper runs in its own session and ignores SIGINT and SIGTERM: a Ctrl-C or a stop signal
  to the tick's process group cannot cut a commit short. It ends when the tick closes the pipe,
  after committing everything it got; if the tick dies, even by SIGKILL, it reads its pipe to
  the end the same way. That can only mean fewer targets sent again later, never more.
- If the helper fails or dies, every request it has not answered goes, in order, to the
  fallback Runner (a database thread of the tick's), and so does everything after. A commit it
  did but did not confirm is then done a second time, which changes nothing (Store.commit is
  idempotent). A claim it made but did not report stays leased to the tick's owner, which no
  longer knows it: a later tick takes those rows once the lease has run out (late, never lost,
  never sent twice).
- The tick never waits on the pipe: what the pipe does not take stays in a buffer, written from
  the event loop as the pipe drains, while replies are read as they come. (A tick blocked
  writing while not reading replies would wait on a helper blocked writing its replies:
  both pipes full, forever.)

The pipes carry pickles of plain tuples (a fifth of the cost of pickling the dataclasses), each
framed by its length: first how to open the store, then one request per commit or claim; back,
one reply per request, in order.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import pickle
import signal
import struct
import subprocess
import sys
from collections import deque
from collections.abc import Sequence
from dataclasses import fields
from operator import attrgetter
from typing import Any, BinaryIO

from duequeue.engine.commit import Batch, ClaimArgs, Runner, retrying
from duequeue.errors import StoreBusyError, StoreError
from duequeue.store.tick_records import (
    NO_LEDGER,
    SENT_DONE,
    Claim,
    Committed,
    DeadFire,
    DeliveryRecord,
    Fire,
    Resolution,
    RowClaim,
    RowState,
    Target,
    TargetClaim,
    TargetLedger,
    Waiting,
)

_HEADER = struct.Struct("<I")
_COMMIT, _CLAIM = 0, 1
_OK, _BUSY, _FAILED = 0, 1, 2
# The helper imports duequeue from the tick's own sys.path, passed as arguments: it then runs the
# very code the tick runs, whatever the current directory or PYTHONPATH hold (-I ignores both).
_BOOT = "import sys; sys.path[:0] = sys.argv[1:]; from duequeue.engine.helper import serve; serve()"
_CLOSE_WAIT_S = 10.0


def spare_core() -> bool:
    """Return whether this process may run on more than one CPU core.

    On one core the helper only competes with the tick it should relieve: a 1,000-row tick took
    0.48 s with it against 0.38 s without (both pinned to one core), and 20,000 rows were even.
    """
    try:
        return len(os.sched_getaffinity(0)) > 1
    except AttributeError:  # no affinity API off Linux
        return (os.cpu_count() or 1) > 1


class HelperRunner:
    """The tick's end of one helper process, with the Runner to fall back on."""

    def __init__(self, proc: subprocess.Popen[bytes], fallback: Runner) -> None:
        assert proc.stdin is not None and proc.stdout is not None
        self._proc, self._fallback = proc, fallback
        self._to, self._from = proc.stdin.fileno(), proc.stdout.fileno()
        os.set_blocking(self._to, False)
        self._out = bytearray()  # framed requests the pipe has not taken yet
        self._in = b""
        # Requests not answered yet, in order: how to hand each to the fallback, and its future.
        self._waiting: deque[tuple[Any, asyncio.Future[Any]]] = deque()
        self._loop = asyncio.get_running_loop()
        self._writing = False
        self._gone = False
        self._loop.add_reader(self._from, self._on_replies)

    @classmethod
    def start(
        cls, db: str, busy_timeout_s: float, fallback: Runner, *, until: float | None = None
    ) -> HelperRunner | None:
        """Start a helper on the store open_store(db, busy_timeout_s) opens, its waits bounded
        by `until` (Store.bound; time.monotonic() is the machine's, shared by both processes);
        None if none can start (the tick goes on with its fallback)."""
        try:
            proc = subprocess.Popen(
                [sys.executable, "-I", "-c", _BOOT, *sys.path],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                # Its own session: a terminal's Ctrl-C or a signal to the tick's process group
                # never reaches it (it also ignores SIGINT and SIGTERM, see serve()).
                start_new_session=True,
            )
        except (OSError, ValueError):
            return None
        runner = cls(proc, fallback)
        runner._send((db, busy_timeout_s, until))
        return runner

    @property
    def pid(self) -> int:
        """Return the helper's process id."""
        return self._proc.pid

    def commit(self, owner: str, now: int, batch: Batch, until: float) -> asyncio.Future[Committed]:
        request = (
            _COMMIT,
            owner,
            now,
            [_RECORD(r) for r in batch.records],
            [encode_resolution(r) for r in batch.resolutions],
            [_claim(c) for c in batch.releases],
            until,
        )
        return self._ask(request, ("commit", owner, now, batch, until))

    def claim(self, args: ClaimArgs) -> asyncio.Future[list[Fire]]:
        a = args
        request = (_CLAIM, a.now, a.limit, a.max_errors, a.lease_ms, a.owner)
        return self._ask(request, ("claim", args))

    def interrupt(self) -> None:
        """Stop the helper at once: what it has not answered goes to the fallback, whose store
        is interrupted too, so every call fails at once."""
        self._fallback.interrupt()
        with contextlib.suppress(OSError):
            self._proc.kill()
        self._fail()

    def close(self) -> None:
        """Let the helper answer everything, then close its pipe and wait for it to exit; the
        fallback is closed too."""
        with contextlib.suppress(Exception):
            self._loop.remove_reader(self._from)
            if self._writing:
                self._loop.remove_writer(self._to)
        if not self._gone:
            self._finish_blocking()
        self._stop()
        self._fallback.close()

    # -- requests -------------------------------------------------------------------------------

    def _ask(self, request: tuple[Any, ...], again: Any) -> asyncio.Future[Any]:
        if self._gone:
            return self._to_fallback(again)
        future: asyncio.Future[Any] = self._loop.create_future()
        self._waiting.append((again, future))
        self._send(request)
        return future

    def _to_fallback(self, again: Any) -> asyncio.Future[Any]:
        if again[0] == "commit":
            _, owner, now, batch, until = again
            return self._fallback.commit(owner, now, batch, until)
        return self._fallback.claim(again[1])

    def _send(self, message: Any) -> None:
        data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
        self._out += _HEADER.pack(len(data)) + data
        self._push()

    def _push(self) -> None:
        while self._out and not self._gone:
            try:
                written = os.write(self._to, self._out)
            except BlockingIOError:
                break  # the pipe is full: the rest goes as the helper reads
            except OSError:  # BrokenPipeError: it died
                self._fail()
                return
            del self._out[:written]
        wanted = bool(self._out) and not self._gone
        if wanted != self._writing:
            if wanted:
                self._loop.add_writer(self._to, self._push)
            else:
                self._loop.remove_writer(self._to)
            self._writing = wanted

    def _on_replies(self) -> None:
        try:
            chunk = os.read(self._from, 1 << 16)
        except OSError:
            chunk = b""
        if not chunk:
            self._fail()
            return
        self._in += chunk
        try:
            for reply in self._replies():
                self._answer(reply)
        except Exception:
            self._fail(kill=True)  # a reply it should not have sent: trust none of it

    def _replies(self) -> list[tuple[Any, ...]]:
        found = []
        while len(self._in) >= _HEADER.size:
            (size,) = _HEADER.unpack_from(self._in)
            end = _HEADER.size + size
            if len(self._in) < end:
                break
            found.append(pickle.loads(self._in[_HEADER.size : end]))
            self._in = self._in[end:]
        return found

    def _answer(self, reply: tuple[Any, ...]) -> None:
        again, future = self._waiting.popleft()
        status, payload = reply
        if future.done():
            return
        if status == _OK and again[0] == "commit":
            future.set_result(_committed(again[3], payload))
        elif status == _OK:
            future.set_result([decode_fire(f) for f in payload])
        else:
            error = StoreBusyError if status == _BUSY else StoreError
            future.set_exception(error(payload))

    def _fail(self, *, kill: bool = False) -> None:
        """The helper is gone: hand what it did not answer, in order, to the fallback."""
        if self._gone:
            return
        self._gone = True
        with contextlib.suppress(Exception):
            self._loop.remove_reader(self._from)
            if self._writing:
                self._loop.remove_writer(self._to)
        self._writing = False
        if kill:
            self._proc.kill()
        waiting, self._waiting = list(self._waiting), deque()
        for again, future in waiting:
            if not future.done():
                _chain(self._to_fallback(again), future)

    def _finish_blocking(self) -> None:
        """At the end of the tick, with nothing else to do: write what is unsent, read the
        replies still owed (resolving their futures), all without the event loop."""
        try:
            os.set_blocking(self._to, True)
            if self._out:
                os.write(self._to, self._out)
                self._out.clear()
            while self._waiting:
                chunk = os.read(self._from, 1 << 16)
                if not chunk:
                    raise OSError("helper gone")
                self._in += chunk
                for reply in self._replies():
                    self._answer(reply)
        except Exception:
            self._fail()

    def _stop(self) -> None:
        proc = self._proc
        for stream in (proc.stdin, proc.stdout):
            with contextlib.suppress(OSError):
                if stream is not None:
                    stream.close()
        try:
            proc.wait(timeout=_CLOSE_WAIT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _chain(source: asyncio.Future[Any], target: asyncio.Future[Any]) -> None:
    def copy(done: asyncio.Future[Any]) -> None:
        if target.done():
            return
        if done.cancelled():
            target.cancel()
        elif done.exception() is not None:
            target.set_exception(done.exception())  # type: ignore[arg-type]
        else:
            target.set_result(done.result())

    source.add_done_callback(copy)


def _committed(batch: Batch, payload: tuple[list[int], int]) -> Committed:
    applied, released = payload
    kept = set(applied)
    resolutions = batch.resolutions
    return Committed(
        tuple(r for i, r in enumerate(resolutions) if i in kept),
        tuple(r for i, r in enumerate(resolutions) if i not in kept),
        released,
    )


# -- the helper process ---------------------------------------------------------------------------


def serve() -> None:
    """Run the helper: open the store, run each request in order, reply, exit at end of input."""
    # Stopping is the tick's decision, told by closing the pipe; see the module docstring.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    # Replies go to the original stdout; anything else that writes to stdout (a warning, say)
    # lands on stderr instead of corrupting them.
    replies = os.dup(1)
    os.dup2(2, 1)
    requests = sys.stdin.buffer
    opened = _read_frame(requests)
    if opened is None:
        return
    # Imported here, in the helper process, once its pipes are set up: the tick's process that
    # loads this module never runs serve().
    from duequeue.store import open_store

    db, busy_timeout_s, until = opened
    store = None
    problem = None
    try:
        store = open_store(db, busy_timeout_s, create=False)
        store.bound(until)
    except StoreError as exc:
        problem = str(exc)  # every request then fails with it: the tick falls back
    if store is not None:
        # Started only for a tick with a backlog (DUEQUEUE_COMMIT_HELPER_ROWS): this process
        # will commit and claim without pause until the tick ends. Without the tuning it
        # still commits, only slower.
        with contextlib.suppress(StoreError):
            store.drain()
    try:
        while (message := _read_frame(requests)) is not None:
            reply = _run(store, problem, message)
            data = pickle.dumps(reply, protocol=pickle.HIGHEST_PROTOCOL)
            _write_all(replies, _HEADER.pack(len(data)) + data)
    except BrokenPipeError:
        pass  # the tick is gone; what was committed stays committed
    finally:
        if store is not None:
            store.close()


def _run(store: Any, problem: str | None, message: tuple[Any, ...]) -> tuple[int, Any]:
    """Run one request on the store; return its reply."""
    if store is None:
        return _FAILED, problem
    try:
        if message[0] == _COMMIT:
            _, owner, now, records, resolutions, releases, until = message
            resolved = [decode_resolution(r) for r in resolutions]
            done = retrying(
                lambda: store.commit(
                    owner,
                    now,
                    [DeliveryRecord(*r) for r in records],
                    resolved,
                    [_unclaim(c) for c in releases],
                ),
                until,
            )
            applied = {id(r) for r in done.applied}
            return _OK, ([i for i, r in enumerate(resolved) if id(r) in applied], done.released)
        _, now, limit, max_errors, lease_ms, owner = message
        return _OK, [encode_fire(f) for f in store.claim(now, limit, max_errors, lease_ms, owner)]
    except StoreBusyError as exc:
        return _BUSY, str(exc)
    except Exception as exc:
        return _FAILED, " ".join(str(exc).split()) or type(exc).__name__


def _read_frame(stream: BinaryIO) -> Any:
    """Return the next message, or None at the end of the stream (a cut-off frame included)."""
    header = stream.read(_HEADER.size)
    if len(header) < _HEADER.size:
        return None
    (size,) = _HEADER.unpack(header)
    data = stream.read(size)
    if len(data) < size:
        return None
    return pickle.loads(data)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


# -- records as plain tuples ----------------------------------------------------------------------

_RECORD = attrgetter(*(f.name for f in fields(DeliveryRecord)))
_TARGET = attrgetter(*(f.name for f in fields(Target)))
_LEDGER = attrgetter(*(f.name for f in fields(TargetLedger)))
_ROW = attrgetter(*(f.name for f in fields(RowState)))
_WAITING = attrgetter(*(f.name for f in fields(Waiting)))
_DEAD = attrgetter(*(f.name for f in fields(DeadFire)))
_PAYLOAD = attrgetter(
    "reminder_id", "subject", "body", "data", "rule_kind", "rule", "tz", "dtstart",
    "misfire_grace_ms", "fire_at", "error_count", "rearmed",
)  # fmt: skip


def _claim(c: Claim) -> tuple[int, ...]:
    return (c.reminder_id,) if isinstance(c, RowClaim) else (c.target_id, c.fire_at)


def _unclaim(values: Sequence[int]) -> Claim:
    return RowClaim(values[0]) if len(values) == 1 else TargetClaim(values[0], values[1])


def encode_fire(f: Fire) -> tuple[Any, ...]:
    """Return a claimed fire as plain tuples."""
    ledger = {tid: _LEDGER(s) for tid, s in f.ledger.items()} if f.ledger else None
    return (_claim(f.claim), _PAYLOAD(f), [_TARGET(t) for t in f.targets], ledger)


def decode_fire(values: Sequence[Any]) -> Fire:
    """Return the fire encode_fire encoded."""
    claim, payload, targets, ledger = values
    rid, subject, body, data, kind, rule, tz, dtstart, grace, fire_at, errors, rearmed = payload
    return Fire(
        _unclaim(claim),
        rid,
        subject,
        body,
        data,
        kind,
        rule,
        tz,
        dtstart,
        grace,
        fire_at,
        errors,
        tuple([Target(*t) for t in targets]),
        NO_LEDGER if ledger is None else {t: TargetLedger(*s) for t, s in ledger.items()},
        rearmed,
    )


# SENT_DONE crosses the pipe as this, and is SENT_DONE again on the other side (the store
# writes that one instance with a statement of its own: resolve_done, statements/commit.sql).
_SENT_DONE = 0


def _encode_row(row: RowState | None) -> tuple[Any, ...] | int | None:
    if row is SENT_DONE:
        return _SENT_DONE
    return None if row is None else _ROW(row)


def _decode_row(row: Sequence[Any] | int | None) -> RowState | None:
    if row == _SENT_DONE:
        return SENT_DONE
    return None if row is None or isinstance(row, int) else RowState(*row)


def encode_resolution(r: Resolution) -> tuple[Any, ...]:
    """Return a resolution as plain tuples."""
    return (
        _claim(r.claim),
        r.reminder_id,
        r.fire_at,
        r.verdict,
        _encode_row(r.row),
        [_WAITING(w) for w in r.waiting],
        None if r.dead is None else _DEAD(r.dead),
        r.disable,
    )


def decode_resolution(values: Sequence[Any]) -> Resolution:
    """Return the resolution encode_resolution encoded."""
    claim, rid, fire_at, verdict, row, waiting, dead, disable = values
    return Resolution(
        _unclaim(claim),
        rid,
        fire_at,
        verdict,
        _decode_row(row),
        tuple([Waiting(*w) for w in waiting]),
        None if dead is None else DeadFire(*dead),
        tuple(disable),
    )
