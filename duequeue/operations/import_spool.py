"""Validated reminders parked in an anonymous temporary file between `import`'s two passes.

`import` is all or nothing and checks every line before it opens the database, yet a file of a
million lines held as NewReminder objects took 635 MB. So the checking pass writes each chunk of
validated reminders here, and the writing pass reads them back a chunk at a time: memory stays
at about one chunk whatever the file's size, each line is parsed once (parsing is most of the
cost), and stdin, which cannot be read twice, needs nothing special.
"""

import contextlib
import pickle
import tempfile
from collections.abc import Iterator
from typing import IO, Any

from duequeue.errors import DuequeueError
from duequeue.store.records import NewReminder, NewTarget

# The fields of a spooled reminder, in NewReminder's order, targets as (channel, address) pairs
# (and the secret, for a webhook that has its own, and the address as shown, for a channel that
# masks it: NewTarget's order); every field, what the user meant and the tz release that
# computed it included: an import records what `add` records.
# Plain tuples, because pickle rebuilds a frozen slotted dataclass field by field: at a million
# rows that cost about 10 s more than the tuples and their rebuilding.
_Flat = tuple[
    str, str, str | None, str, int, int | None, tuple[tuple[Any, ...], ...],
    Any, Any, Any, Any, Any, Any, Any, Any,
]  # fmt: skip

CHUNK = 2_000  # reminders per pickled chunk; about a MB in memory at a time


class Spool:
    """A file of validated reminders, written once, then read back as often as asked."""

    def __init__(self) -> None:
        # Unlinked at once (TemporaryFile): nothing is left behind, whatever ends the process,
        # and no other process can reach the file, so unpickling it trusts only ourselves.
        prefix = "duequeue-import-"
        try:
            self._file: IO[bytes] = tempfile.TemporaryFile(prefix=prefix)  # noqa: SIM115
        except OSError as exc:
            raise _failed(exc) from exc
        self._broken = False  # a write failed: closing must not flush the rest again
        self._chunk: list[_Flat] = []
        self.count = 0

    def add(self, reminder: NewReminder) -> None:
        """Append one reminder."""
        r = reminder
        targets = tuple(
            (t.channel, t.address)
            if t.secret is None and t.shown is None
            else (t.channel, t.address, t.secret, t.shown)
            for t in r.targets
        )
        flat = (r.subject, r.body, r.data, r.tz, r.dtstart, r.fire_at, targets)
        rest = (r.rule_kind, r.rule, r.misfire_grace_ms, r.key, r.start_wall, r.release)
        self._chunk.append((*flat, *rest, r.zone_digest, r.relative))
        self.count += 1
        if len(self._chunk) >= CHUNK:
            self._dump()

    def _dump(self) -> None:
        try:
            pickle.dump(self._chunk, self._file, protocol=pickle.HIGHEST_PROTOCOL)
        except OSError as exc:
            self._broken = True
            raise _failed(exc) from exc
        self._chunk = []

    def __iter__(self) -> Iterator[NewReminder]:
        """Read every reminder back, in the order added (each call starts again)."""
        if self._chunk:
            self._dump()
        try:
            self._file.flush()
            self._file.seek(0)
        except OSError as exc:
            self._broken = True
            raise _failed(exc) from exc
        while True:
            try:
                chunk: list[_Flat] = pickle.load(self._file)
            except EOFError:
                return
            except OSError as exc:
                raise _failed(exc) from exc
            # Many lines share their targets (a few endpoints for a million reminders): each
            # distinct set is made once a chunk.
            made: dict[tuple[tuple[Any, ...], ...], tuple[NewTarget, ...]] = {}
            for subject, body, data, tz, dtstart, fire_at, targets, *rest in chunk:
                ts = made.get(targets)
                if ts is None:
                    ts = made[targets] = tuple(NewTarget(*t) for t in targets)
                yield NewReminder(subject, body, data, tz, dtstart, fire_at, ts, *rest)

    def close(self) -> None:
        """Drop the file."""
        if self._broken:
            # The buffer that did not fit is still there: closing would write it and fail
            # again. The file is unlinked already, so dropping it loses nothing.
            with contextlib.suppress(OSError):
                self._file.close()
            return
        try:
            self._file.close()
        except OSError as exc:
            raise _failed(exc) from exc

    def __enter__(self) -> "Spool":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _failed(exc: OSError) -> DuequeueError:
    """Return the one error a spool that cannot be written or read back raises (exit 1)."""
    where = tempfile.gettempdir()
    return DuequeueError(
        f"cannot spool the checked lines in the temporary folder {where} ({exc.strerror or exc}); "
        "nothing was written: free space there or point TMPDIR at a folder with about the "
        "input's size free"
    )
