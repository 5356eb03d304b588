"""Run the real `duequeue` CLI as a separate process, the way cron does.

`python -m duequeue` with this checkout first on PYTHONPATH, so the code under test is what runs
whatever else is installed. Every call is bounded by a timeout.
"""

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from tests.paths import ROOT

LIMIT_S = 30.0  # no test process may run longer than this


def cli_env(db: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """Return an environment with no inherited DUEQUEUE_* setting, this checkout and `db`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("DUEQUEUE_")}
    env.update(PYTHONPATH=str(ROOT), DUEQUEUE_DB=str(db), PYTHONUNBUFFERED="1")
    env.update(extra or {})
    return env


def cli_args(*args: str | bytes) -> list[str | bytes]:
    return [sys.executable, "-m", "duequeue", *args]


def run_cli(
    db: Path, *args: str | bytes, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run one command to its end and return its exit code and output."""
    return subprocess.run(
        cli_args(*args),
        env=cli_env(db, env),
        capture_output=True,
        text=True,
        timeout=LIMIT_S,
        check=False,
    )


_spawned: list["subprocess.Popen[str]"] = []


def spawn_cli(
    db: Path, *args: str, env: Mapping[str, str] | None = None
) -> "subprocess.Popen[str]":
    """Start one command in the background, with its output piped; `reap()` ends it."""
    proc = subprocess.Popen(
        cli_args(*args),
        env=cli_env(db, env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    _spawned.append(proc)
    return proc


def reap() -> None:
    """Kill what `spawn_cli` started and a failed test left running, so nothing outlives it."""
    while _spawned:
        proc = _spawned.pop()
        if proc.poll() is None:
            proc.kill()
        proc.communicate(timeout=LIMIT_S)


def run_cli_unprivileged(
    db: Path, *args: str, cwd: Path, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run one command as a user without root's power over file permissions.

    As root that is `nobody` (root reads and writes any file, so a permission test needs another
    user); as anyone else, that user, whom a mode already binds. When the interpreter lives under
    a directory `nobody` cannot enter (a pyenv under /root), a private mount namespace shows it
    there, in that process only.
    """
    if os.geteuid() != 0:
        return run_cli(db, *args, env=env)
    drop = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
    command: list[str | bytes] = [*drop, "env", "HOME=/nonexistent", *cli_args(*args)]
    prefix = Path(os.path.realpath(sys.base_prefix))
    closed = [p for p in reversed(prefix.parents) if not os.stat(p).st_mode & 0o001]
    if closed:
        stage = cwd / ".python-stage"
        stage.mkdir(exist_ok=True)
        script = (
            f'mount --bind "{prefix}" "{stage}" && '
            f'mount -t tmpfs -o mode=755 tmpfs "{closed[0]}" && mkdir -p "{prefix}" && '
            f'mount --bind "{stage}" "{prefix}" && exec "$@"'
        )
        command = ["unshare", "--mount", "sh", "-c", script, "sh", *command]
    return subprocess.run(
        command,
        env=cli_env(db, env),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=LIMIT_S,
        check=False,
    )


def run_beside_receiver(
    lines: list[str], cwd: Path, env: Mapping[str, str]
) -> tuple["subprocess.CompletedProcess[str]", str]:
    """Run README command lines in bash while examples/receiver.py listens, as a README's
    `python examples/receiver.py 8000 &` ... `kill %1` has it; return the run and what the
    receiver printed.

    `duequeue` is this checkout's `python -m duequeue`; the receiver takes a free port, which
    replaces 8000 in the lines, and the run starts once its "listening" line is out: the event a
    person typing the next command waits for without noticing.
    """
    import re
    import shlex

    (cwd / "examples").symlink_to(ROOT / "examples")
    receiver = subprocess.Popen(
        [sys.executable, "examples/receiver.py", "0"],
        cwd=cwd,
        env=dict(env),
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert receiver.stdout is not None
        listening = receiver.stdout.readline()
        port = re.fullmatch(r"listening on http://127\.0\.0\.1:(\d+)/\n", listening)
        assert port, listening
        python = shlex.quote(sys.executable)
        script = "\n".join(
            re.sub(r"^duequeue ", f"{python} -m duequeue ", line).replace(
                "127.0.0.1:8000", f"127.0.0.1:{port.group(1)}"
            )
            for line in lines
        )
        run = subprocess.run(
            ["bash", "-c", "set -e\n" + script],
            cwd=cwd,
            env=dict(env),
            capture_output=True,
            text=True,
            timeout=LIMIT_S,
        )
    finally:
        receiver.kill()  # the README's `kill %1`
        received, _ = receiver.communicate(timeout=LIMIT_S)
    return run, received


def readme_block(heading: str) -> str:
    """Return the first indented command block under README.md's `## heading`."""
    import re

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = re.search(rf"^## {re.escape(heading)}\n(.*?)(?=^## )", readme, re.S | re.M)
    assert section, f"README has no '## {heading}' section"
    block = re.search(r"((?:^    .*\n)+)", section.group(1), re.M)
    assert block, f"README's '{heading}' has no command block"
    return block.group(1)
