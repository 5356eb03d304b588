"""`duequeue import` in a real process: a progress bar on a terminal, nothing on a pipe."""

import json
from pathlib import Path

from tests.paths import ROOT

HOOK = "https://hooks.example.com/r"


def _run_import(db: Path, f: Path, stderr_on_a_terminal: bool) -> tuple[int, str, bytes]:
    """Run the real CLI in a subprocess, its stderr a pseudo-terminal or a pipe."""
    import os
    import select
    import subprocess
    import sys

    env = {**os.environ, "PYTHONPATH": str(ROOT), "TERM": "xterm", "COLUMNS": "80"}
    args = [sys.executable, "-m", "duequeue", "--db", str(db), "import", str(f)]
    if not stderr_on_a_terminal:
        run = subprocess.run(args, capture_output=True, env=env, timeout=60)
        return run.returncode, run.stdout.decode(), run.stderr
    master, slave = os.openpty()
    try:
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=slave, env=env)
        os.close(slave)
        out, _ = proc.communicate(timeout=60)
        seen = b""
        while select.select([master], [], [], 0)[0]:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # the terminal's other end is closed: everything was read
                break
            if not chunk:
                break
            seen += chunk
    finally:
        os.close(master)
    return proc.returncode, out.decode(), seen


def test_a_progress_bar_is_drawn_only_when_stderr_is_a_terminal(tmp_path: Path) -> None:
    f = tmp_path / "r.jsonl"
    f.write_text((json.dumps({"at": "+1h", "webhooks": [HOOK]}) + "\n") * 50)
    code, out, err = _run_import(tmp_path / "tty.db", f, stderr_on_a_terminal=True)
    assert (code, out) == (0, "imported 50, skipped 0 existing keys\n")
    assert b"checking" in err
    assert b"writing" in err
    code, out, err = _run_import(tmp_path / "pipe.db", f, stderr_on_a_terminal=False)
    assert (code, out) == (0, "imported 50, skipped 0 existing keys\n")
    # No bar in a pipe: stderr holds only the note that the import made the database.
    assert err.decode().startswith("duequeue: note: created a new database ")
    assert err.count(b"\n") == 1
