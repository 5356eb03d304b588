"""A helper process that commits a large tick's outcomes, and claims its next batches, while the
tick goes on sending.

At thousands of rows a tick, committing outcomes and write-backs on the delivery loop's own
thread cost about a seventh of a 20,000-row tick: no send moves while SQLite writes its pages
(BENCHMARKS.md has the figures). A thread cannot take that work over (it contends for the GIL:
tried, slower); a second process can. It opens the same store and commits the batches that
groupcommit.py hands it, one after the other, in the order they were queued. The claims of a
draining tick go the same way once the helper runs: a claim of 100 rows cost the loop's thread
about 2.5 ms (the UPDATE, its reads of targets and ledger, and building the rows), a tenth of a
20,000-row tick; decoding the rows the helper sends back costs a fifth of that. A claim is
queued behind the batches handed over before it, so it also finds their rows written back.

The helper keeps groupcommit's rules (a batch's outcomes commit before its write-backs and
releases; batches commit in order) and adds these:

- If the tick dies, even by SIGKILL, the helper reads its pipe to the end, commits every batch it
  got, and exits. That can only mean fewer targets sent again later, never more.
- The helper runs in its own session and ignores SIGINT and SIGTERM, so a Ctrl-C or a stop
  signal sent to the tick's process group cannot cut a commit short. It ends when the tick
  closes the pipe.
- If the helper fails or dies, the tick takes back every batch the helper has not confirmed and
  commits it itself, exactly as it would have without one, and makes its claims itself again. A
  claim the helper made but could not report stays leased to the tick's owner, which no longer
  knows it: a later tick takes those rows once the lease has run out (late, never lost, never
  sent twice). A claim reported after the tick stopped waiting for it (a stop signal came) is
  released with the tick's unfinished rows. A batch that was committed but not
  confirmed is then committed a second time; that is harmless: a second `sent` of a target and
  fire is a no-op (the unique ledger index), a repeated write-back or release finds the lease
  already gone and changes nothing, and at most a failed attempt is listed twice.

The pipes carry pickles, each framed by its length: from the tick, first how to open the store
(open_store's arguments) and then one tuple per batch or claim; back from the helper, one reply
per batch saying how far the batch got and, if it stopped, why, and one per claim with its rows
or why there are none. Only the tick that started the helper writes to its stdin.

The tick never waits on a write to the helper. The helper writes its replies with plain blocking
writes and reads the next batch only after replying, so a tick that blocked writing a batch while
not reading replies (a long synchronous stretch, say: tens of thousands of rows handed over before
the event loop runs again) would wait on a helper that waits on it: both pipes full, forever, and
deaf to SIGTERM. So the tick's end of stdin is non-blocking: what the pipe does not take stays in
a buffer here, drained from the event loop when the pipe is writable (groupcommit.py), or, when
the tick waits for replies, by a selector that writes and reads at once. That buffer holds the
batches the helper has not read: at most the tick's own claim, which groupcommit keeps in memory
until confirmed anyway. (multiprocessing.connection would replace the framing, but its send()
blocks just the same, and it has no way to send part of a message, so it cannot do this.)
"""

import os
import pickle
import selectors
import signal
import struct
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, fields
from operator import attrgetter
from typing import Any, BinaryIO

from duequeue.store.base import NO_ATTEMPTS, Claimed, DeliveryRecord, Target, WriteBack

# How far the helper got with a batch (the reply's `done`).
NOTHING, RECORDED, WRITTEN, COMPLETE = 0, 1, 2, 3
# What a message or reply is about: its first element.
_COMMIT, _CLAIM = 0, 1

_HEADER = struct.Struct("<I")
# The helper imports duequeue from the tick's own sys.path, passed as arguments: it then runs the
# very code the tick runs, whatever the current directory or PYTHONPATH hold (-I ignores both).
_BOOT = (
    "import sys; sys.path[:0] = sys.argv[1:]; "
    "from duequeue.engine.commithelper import serve; serve()"
)
_CLOSE_WAIT_S = 10.0
# A record or write-back as the plain tuple its constructor takes back: pickling tuples costs a
# fraction of pickling frozen dataclasses (and dataclasses.astuple deep-copies).
_RECORD_FIELDS = attrgetter(*(f.name for f in fields(DeliveryRecord)))
_WRITE_FIELDS = attrgetter(*(f.name for f in fields(WriteBack)))
_CLAIMED_FIELDS = attrgetter(*(f.name for f in fields(Claimed)))
_TARGET_FIELDS = attrgetter(*(f.name for f in fields(Target)))
_TARGETS_AT = [f.name for f in fields(Claimed)].index("targets")
_ATTEMPTS_AT = [f.name for f in fields(Claimed)].index("attempts")


@dataclass(frozen=True, slots=True)
class Batch:
    """What one group-commit flush handed the helper."""

    seq: int
    records: Sequence[DeliveryRecord]
    writes: Sequence[WriteBack]
    releases: Sequence[int]


@dataclass(frozen=True, slots=True)
class Reply:
    """The helper's answer for one batch: how far it got and, short of COMPLETE, why not."""

    seq: int
    done: int
    applied: int  # write-backs that applied (the rest had lost their lease)
    error: str | None


@dataclass(frozen=True, slots=True)
class ClaimReply:
    """The helper's answer for one claim: the rows it leased, or why it leased none."""

    rows: list[Claimed]
    error: str | None


def encode_claimed(row: Claimed) -> tuple[Any, ...]:
    """Return a claimed row as plain tuples (pickled in a fifth of the time of the dataclasses;
    the shared empty attempts map, a read-only view, does not pickle at all)."""
    values = list(_CLAIMED_FIELDS(row))
    values[_TARGETS_AT] = [_TARGET_FIELDS(t) for t in row.targets]
    values[_ATTEMPTS_AT] = dict(row.attempts) if row.attempts else None
    return tuple(values)


def decode_claimed(values: Sequence[Any]) -> Claimed:
    """Return the claimed row encode_claimed encoded."""
    values = list(values)
    values[_TARGETS_AT] = tuple([Target(*t) for t in values[_TARGETS_AT]])
    if values[_ATTEMPTS_AT] is None:
        values[_ATTEMPTS_AT] = NO_ATTEMPTS
    return Claimed(*values)


def spare_core() -> bool:
    """Return whether this process may run on more than one CPU core.

    On one core the helper only competes with the tick it should relieve: a 1,000-row tick took
    0.48 s with it against 0.38 s without (both pinned to one core), and 20,000 rows were even.
    """
    try:
        return len(os.sched_getaffinity(0)) > 1
    except AttributeError:  # no affinity API off Linux
        return (os.cpu_count() or 1) > 1


class HelperGone(Exception):
    """The helper failed, exited or broke the protocol; the tick commits without it."""


class CommitHelper:
    """The tick's end of one helper process."""

    def __init__(self, proc: "subprocess.Popen[bytes]") -> None:
        assert proc.stdin is not None and proc.stdout is not None
        self._proc = proc
        self._to = proc.stdin.fileno()
        self._from = proc.stdout.fileno()
        os.set_blocking(self._to, False)  # see the module docstring: the tick never waits here
        self._buffer = b""
        self._out = bytearray()  # framed batches the pipe has not taken yet

    @classmethod
    def start(cls, db: str, busy_timeout_s: float) -> "CommitHelper | None":
        """Start a helper on the store open_store(db, busy_timeout_s) opens; None if none can
        start (the tick then commits itself)."""
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
        helper = cls(proc)
        try:
            helper._send((db, busy_timeout_s))
        except HelperGone:
            helper.close()
            return None
        return helper

    @property
    def pid(self) -> int:
        """Return the helper's process id."""
        return self._proc.pid

    def fileno(self) -> int:
        """Return the descriptor replies arrive on (for the event loop to watch)."""
        return self._from

    def out_fileno(self) -> int:
        """Return the descriptor batches leave on (for the event loop to drain `unsent` into)."""
        return self._to

    @property
    def unsent(self) -> int:
        """Return how many bytes of handed-over batches the pipe has not taken yet."""
        return len(self._out)

    def push(self) -> None:
        """Write as much of the unsent bytes as the pipe takes now, without waiting.

        Raise HelperGone if the helper is no longer there.
        """
        while self._out:
            try:
                written = os.write(self._to, self._out)
            except BlockingIOError:
                return  # the pipe is full: the rest waits for the helper to read
            except OSError as exc:  # BrokenPipeError: it died
                raise HelperGone(f"commit helper gone: {exc}") from exc
            del self._out[:written]

    def submit(self, batch: Batch, owner: str, now: int) -> None:
        """Hand one batch over; raise HelperGone if the helper is no longer there."""
        self._send(
            (
                _COMMIT,
                batch.seq,
                [_RECORD_FIELDS(r) for r in batch.records],
                [_WRITE_FIELDS(w) for w in batch.writes],
                list(batch.releases),
                owner,
                now,
            )
        )

    def claim(self, now: int, limit: int, max_errors: int, lease_ms: int, owner: str) -> None:
        """Ask for a claim (Store.claim_due's arguments), made after every batch handed over
        before it; its ClaimReply comes among the replies. Raise HelperGone if the helper is no
        longer there."""
        self._send((_CLAIM, now, limit, max_errors, lease_ms, owner))

    def replies(self, *, block: bool) -> list[Reply | ClaimReply]:
        """Return the replies that have arrived, in order; with `block`, wait for at least one.

        Without `block`, call it only when fileno() is readable. With `block`, the unsent bytes
        are written while waiting: the reply awaited may be for a batch still unsent. Raise
        HelperGone at the end of the stream or on a malformed reply.
        """
        found = self._parse()
        if not block:
            self._fill()
            return found + self._parse()
        if found:
            return found
        with selectors.DefaultSelector() as selector:
            selector.register(self._from, selectors.EVENT_READ)
            writing = False
            while not found:
                if bool(self._out) != writing:  # watch the pipe in only while bytes wait for it
                    if writing:
                        selector.unregister(self._to)
                    else:
                        selector.register(self._to, selectors.EVENT_WRITE)
                    writing = not writing
                for key, _ in selector.select():
                    if key.fd == self._to:
                        self.push()
                    else:
                        self._fill()
                        found = self._parse()
        return found

    def close(self, *, kill: bool = False) -> None:
        """Close the pipe (the helper finishes what it has and exits) and wait for it; with
        `kill`, stop it first."""
        proc = self._proc
        if kill:
            proc.kill()
        for stream in (proc.stdin, proc.stdout):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass
        try:
            proc.wait(timeout=_CLOSE_WAIT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    def _send(self, message: Any) -> None:
        data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
        self._out += _HEADER.pack(len(data))
        self._out += data
        self.push()

    def _fill(self) -> None:
        try:
            chunk = os.read(self._from, 1 << 16)
        except OSError as exc:
            raise HelperGone(f"commit helper gone: {exc}") from exc
        if not chunk:
            code = self._proc.poll()
            raise HelperGone(f"commit helper exited (code {code})")
        self._buffer += chunk

    def _parse(self) -> list[Reply | ClaimReply]:
        found: list[Reply | ClaimReply] = []
        while len(self._buffer) >= _HEADER.size:
            (size,) = _HEADER.unpack_from(self._buffer)
            end = _HEADER.size + size
            if len(self._buffer) < end:
                break
            try:
                kind, *rest = pickle.loads(self._buffer[_HEADER.size : end])
                if kind == _CLAIM:
                    rows, error = rest
                    found.append(ClaimReply([decode_claimed(r) for r in rows or ()], error))
                else:
                    found.append(Reply(*rest))
            except Exception as exc:
                raise HelperGone(f"commit helper sent a malformed reply: {exc}") from exc
            self._buffer = self._buffer[end:]
        return found


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


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


def serve() -> None:
    """Run the helper: open the store, commit each batch in order, reply, exit at end of input."""
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
    from duequeue.store import open_store
    from duequeue.store.sqlite_errors import one_line

    store = None
    error: str | None = None
    try:
        store = open_store(*opened)
    except Exception as exc:
        error = one_line(exc)
    try:
        while (message := _read_frame(requests)) is not None:
            if message[0] == _CLAIM:
                reply = pickle.dumps(_claim(store, error, message[1:]))
                _write_all(replies, _HEADER.pack(len(reply)) + reply)
                continue
            _, seq, records, writes, releases, owner, now = message
            done, applied = NOTHING, 0
            # After a failure nothing more is committed: a later batch's write-back must never
            # land while an earlier batch's outcomes are not in the ledger. The tick takes
            # every batch from the failed one on back, and commits them itself.
            if store is not None and error is None:
                try:
                    if records:
                        store.record([DeliveryRecord(*r) for r in records])
                    done = RECORDED
                    if writes:
                        applied = store.write_back(owner, now, [WriteBack(*w) for w in writes])
                    done = WRITTEN
                    if releases:
                        store.release(owner, releases, now)
                    done = COMPLETE
                except Exception as exc:
                    error = one_line(exc)
            reply = pickle.dumps((_COMMIT, seq, done, applied, None if done == COMPLETE else error))
            _write_all(replies, _HEADER.pack(len(reply)) + reply)
    except BrokenPipeError:
        pass  # the tick is gone; what was committed stays committed
    finally:
        if store is not None:
            store.close()


def _claim(store: Any, error: str | None, args: Sequence[Any]) -> tuple[Any, ...]:
    """Make one claim for the tick; return its reply. After a failed commit nothing more is
    claimed: the tick is about to stop, and rows leased now would only wait for their lease."""
    from duequeue.store.sqlite_errors import one_line

    if store is None or error is not None:
        return (_CLAIM, None, error or "commit helper has no store")
    try:
        return (_CLAIM, [encode_claimed(row) for row in store.claim_due(*args)], None)
    except Exception as exc:
        return (_CLAIM, None, one_line(exc))
