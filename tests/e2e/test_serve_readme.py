"""README's Quick start adds a reminder over HTTP: its `curl` line, run as written against a real
`duequeue serve` (on a free port instead of 8325, so parallel runs do not collide)."""

import re
import subprocess
from pathlib import Path

from tests.procs import LIMIT_S, ROOT, reap, run_cli
from tests.webserver import Served

README = (ROOT / "README.md").read_text(encoding="utf-8")


def _block() -> list[str]:
    section = README.split("## Quick start\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"((?:^    .*\n)+)", section, re.M)
    return [line.strip() for line in blocks[1].splitlines()]


def test_the_readme_curl_line_adds_a_reminder(tmp_path: Path) -> None:
    serve, curl = _block()
    assert serve == "duequeue serve &"
    assert curl.startswith("curl -s 127.0.0.1:8325/api/v1/reminders ")
    db = tmp_path / "quickstart.db"
    run_cli(db, "add", "--at", "+1h", "--webhook", "http://127.0.0.1:8000/")  # the quick start's 1
    try:
        with Served(db) as s:
            port = s.url.rsplit(":", 1)[1]
            out = subprocess.run(
                ["bash", "-c", curl.replace("127.0.0.1:8325", f"127.0.0.1:{port}")],
                capture_output=True, text=True, timeout=LIMIT_S, check=True,
            )  # fmt: skip
    finally:
        reap()
    assert out.stdout == '{"id": 2, "created": true, "notes": []}'
    listed = run_cli(db, "inspect", "--pending", "--json")
    assert '"subject": "over HTTP"' in listed.stdout
