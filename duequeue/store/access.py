"""Say which file or directory keeps this user from a database, and how to fix it, in one line.

SQLite reports only "unable to open database file" or "attempt to write a readonly database", and
the OS names whatever path failed (a temporary file, a parent directory). The operator needs the
path at fault, its owner and mode, and what to change.
"""

import os
import stat
from pathlib import Path


def problem(path: Path, write: bool) -> str | None:
    """Return why this user cannot open (and, with `write`, change) the database, or None."""
    path = Path(os.path.abspath(path))
    try:
        for parent in reversed(path.parents):
            if not parent.exists():
                return _cannot_create(path, parent.parent)
            if not parent.is_dir():
                return (
                    f"{parent} is a file, not a directory; point --db at a path under a directory"
                )
            if not os.access(parent, os.X_OK):
                return _denied(parent, "directory", "enter", "x")
        if not path.exists():
            return _cannot_create(path, path.parent)
        if path.is_dir():
            return f"{path} is a directory, not a database file"
        if not os.access(path, os.R_OK):
            return _denied(path, "database file", "read", "r")
        if write and not os.access(path, os.W_OK):
            return _denied(path, "database file", "write", "w")
        if write and not os.access(path.parent, os.W_OK) and not _journal_files_writable(path):
            # WAL mode keeps PATH-wal and PATH-shm beside the file; SQLite creates them there.
            return _denied(path.parent, "directory", f"create {path.name}-wal in", "w")
    except OSError:
        return None  # a path this user cannot even inspect: leave the OS's own words
    return None


def _journal_files_writable(path: Path) -> bool:
    journals = [path.with_name(path.name + suffix) for suffix in ("-wal", "-shm")]
    return all(j.exists() and os.access(j, os.W_OK) for j in journals)


def _cannot_create(path: Path, directory: Path) -> str | None:
    if os.access(directory, os.W_OK | os.X_OK):
        return None
    return _denied(directory, "directory", f"create {path.name} in", "w")


def _denied(path: Path, what: str, verb: str, bit: str) -> str:
    """Describe a denied access: the path, its owner and mode, and the change that fixes it."""
    info = path.stat()
    owner, me = _user(info.st_uid), _user(os.geteuid())
    mode = f"{stat.S_IMODE(info.st_mode):04o}"
    if info.st_uid == os.geteuid():
        fix = f"`chmod u+{bit} {path}`"
    elif what == "directory" and bit == "w":  # never suggest taking over a shared directory
        fix = f"run duequeue as {owner}, or choose a directory {me} can write (--db / DUEQUEUE_DB)"
    else:
        fix = f"run duequeue as {owner}, or `chown {me} {path}`"
    return f"{what} {path} is owned by {owner} with mode {mode}, so {me} cannot {verb} it: {fix}"


def _user(uid: int) -> str:
    import pwd  # lazy: only a database this user may not open needs the user database

    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)
