"""README's Quick start, run as written: its receiver gets a signed POST from a real tick.

The commands come out of README.md. Two stand-ins keep the run fast and race-free: the venv line
is checked, not run (this checkout is on PYTHONPATH, as in tests/procs.py), and `duequeue` is
`python -m duequeue`. The receiver takes a free port (0) instead of 8000, and the test waits for
its "listening" line, the event a person typing the next command waits for without noticing.
"""

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

from tests.procs import LIMIT_S, ROOT, cli_env, readme_block, run_beside_receiver

README = (ROOT / "README.md").read_text(encoding="utf-8")
VENV = "python3 -m venv .venv && . .venv/bin/activate && pip install ."
RECEIVER = "python examples/receiver.py 8000 &"


def _commands() -> list[str]:
    """Return the Quick start's command lines, comments dropped."""
    lines = [line.strip() for line in readme_block("Quick start").splitlines()]
    return [re.sub(r"\s+# .*$", "", line) for line in lines]


def test_the_quick_start_is_the_route_this_test_runs() -> None:
    commands = _commands()
    assert commands[0] == VENV
    assert RECEIVER in commands
    assert commands[-1] == "kill %1"
    assert len(README.split("## Quick start\n", 1)[1].split("\n## ", 1)[0].splitlines()) < 40


def test_the_quick_start_delivers_a_signed_webhook(tmp_path: Path) -> None:
    commands = _commands()
    before, after = commands[1 : commands.index(RECEIVER)], commands[commands.index(RECEIVER) + 1 :]
    assert after[-1] == "kill %1"
    python = shlex.quote(sys.executable)

    # The exports run in bash, as typed; the environment they leave is the session's.
    env = cli_env(tmp_path / "unused.db")
    del env["DUEQUEUE_DB"]
    dump = subprocess.run(
        [
            "bash",
            "-c",
            "set -e\n" + "\n".join(before) + f"\n{python} -c "
            "'import json,os;print(json.dumps(dict(os.environ)))'",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=LIMIT_S,
        check=True,
    )
    session = json.loads(dump.stdout)
    assert session["DUEQUEUE_DB"] == str(tmp_path / "quickstart.db")
    assert session["DUEQUEUE_WEBHOOK_SECRET"].startswith("whsec_")

    run, received = run_beside_receiver(after[:-1], tmp_path, session)

    assert run.returncode == 0, run.stderr
    out = run.stdout.splitlines()
    assert out[0] == f"database {tmp_path / 'quickstart.db'}: created"  # init
    assert out[1] == "1"  # add's id
    assert out[2].startswith("tick: claimed 1: sent 1, ")
    assert "deliveries 1 sent, 0 failed" in out[2]
    assert "note: created a new database" not in run.stderr  # init made it
    assert out[-1] == "all checks passed"  # doctor
    assert "POST /\n" in received
    assert re.search(r"^webhook-id: dq_1_\d+_1$", received, re.M)
    assert '"subject":"hello"' in received
    assert received.count("signature: valid\n") == 1
    assert "INVALID" not in received


def test_the_two_commands_install_into_a_venv_and_ci_runs_the_test_command() -> None:
    section = README.split("## Two commands\n", 1)[1].split("\n## ", 1)[0]
    blocks = [line.strip() for line in section.splitlines() if line.startswith("    ")]
    install, test = blocks
    # Debian's system Python refuses a bare `pip install .` (externally-managed-environment).
    assert install == f"{VENV} && duequeue init && duequeue tick"
    assert test == "pip install -e '.[test]' && python -m pytest"
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert ci[-2:] == [
        "python3 -m pip install --quiet --disable-pip-version-check -e '.[test]'",
        "python3 -m pytest",
    ]
