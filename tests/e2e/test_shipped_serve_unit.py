"""duequeue-serve.service works as shipped, beside duequeue.service, on README's install: it
passes `systemd-analyze verify`, agrees with the install, and its ExecStart, under its
Environment= lines, serves the dashboard and stops on SIGTERM with exit 0. Where systemd-analyze
is missing the verify test skips (CI's machine has it), as in test_shipped_files.py."""

import re
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

from tests.e2e.test_shipped_files import (  # noqa: F401
    CONFIG,
    DATA,
    VENV,
    Install,
    init_database,
    install,
)
from tests.procs import LIMIT_S, ROOT
from tests.webserver import fetch

UNIT = ROOT / "duequeue-serve.service"
WORKER_UNIT = ROOT / "duequeue.service"


def _values(key: str, unit: Path = UNIT) -> list[str]:
    return [line.split("=", 1)[1] for line in unit.read_text().splitlines()
            if line.startswith(f"{key}=")]  # fmt: skip


def test_the_unit_agrees_with_the_install_and_the_worker_unit() -> None:
    [exec_start] = _values("ExecStart")
    assert exec_start.split()[:2] == [f"{VENV}/bin/duequeue", "serve"]
    assert "--host 127.0.0.1" in exec_start  # no token in the unit: loopback
    for key in ("Environment", "User", "Group", "StateDirectory", "ProtectSystem"):
        assert _values(key) == _values(key, WORKER_UNIT), key
    assert f"DUEQUEUE_CONFIG={CONFIG}" in _values("Environment")


@pytest.mark.skipif(
    shutil.which("systemd-analyze") is None or not Path("/usr/lib/systemd/system").is_dir(),
    reason="systemd-analyze is not installed here (CI's machine has it)",
)
def test_the_unit_passes_systemd_analyze_verify(tmp_path: Path) -> None:
    root = tmp_path / "root"
    shutil.copytree("/usr/lib/systemd/system", root / "usr/lib/systemd/system", symlinks=True)
    unit = root / "etc/systemd/system/duequeue-serve.service"
    unit.parent.mkdir(parents=True)
    unit.write_text(UNIT.read_text())
    program = root / VENV.strip("/") / "bin/duequeue"
    program.parent.mkdir(parents=True)
    program.write_text("#!/bin/sh\n")
    program.chmod(0o755)
    out = subprocess.run(
        ["systemd-analyze", "verify", "--man=no", "--generators=no", f"--root={root}", str(unit)],
        capture_output=True, text=True, timeout=LIMIT_S, check=False,
    )  # fmt: skip
    assert (out.returncode, out.stdout, out.stderr) == (0, "", "")


def test_the_units_serve_answers_and_stops_on_sigterm(install: Install) -> None:  # noqa: F811
    install.config.write_text("")  # README's step 3 makes it; no setting serve needs
    init_database(install)  # step 4: serve, like the ticks, refuses a missing database
    [exec_start] = _values("ExecStart")
    env = {k: install.localize(v) for k, v in (e.split("=", 1) for e in _values("Environment"))}
    env["PATH"] = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
    command = install.localize(exec_start).replace("--port 8325", "--port 0").split()
    proc = subprocess.Popen(command, env=env, cwd=install.root, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert proc.stderr
        line = proc.stderr.readline()
        found = re.search(r"listening on (http://127\.0\.0\.1:\d+)/", line)
        assert found, line
        stats = fetch("GET", found.group(1) + "/api/v1/stats")
        assert stats.status == 200 and stats.json()["reminders"]["pending"] == 0
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(LIMIT_S) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate(timeout=LIMIT_S)
    assert (install.places[DATA] / "duequeue.db").exists()
