"""README's "Use from Python" example, run as written against a real loopback receiver."""

import re
import subprocess
import sys
from pathlib import Path

from tests.procs import LIMIT_S, ROOT, cli_env
from tests.servers import HttpSink

README = (ROOT / "README.md").read_text(encoding="utf-8")
SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"


def _example() -> str:
    section = re.search(r"^## Use from Python\n(.*?)(?=^## )", README, re.S | re.M)
    assert section, "README has no '## Use from Python' section"
    block = re.search(r"((?:^    .*\n)(?:^    .*\n|^\n)*)", section.group(1), re.M)
    assert block, "the section has no code block"
    return "\n".join(line[4:] for line in block.group(1).splitlines())


def test_the_python_example_delivers_a_signed_webhook(tmp_path: Path) -> None:
    code = _example()
    assert "from duequeue import Queue" in code
    with HttpSink() as http:
        # The two stand-ins: the receiver's real port, and the database in this test's folder.
        code = code.replace("http://127.0.0.1:8000/", http.url("/")).replace(
            '"quickstart.db"', repr(str(tmp_path / "quickstart.db"))
        )
        env = cli_env(tmp_path / "unused.db", {"DUEQUEUE_WEBHOOK_SECRET": SECRET})
        run = subprocess.run(
            [sys.executable, "-c", code],
            env=env,
            capture_output=True,
            text=True,
            timeout=LIMIT_S,
            cwd=tmp_path,
        )
        assert run.returncode == 0, run.stderr
        first, second = run.stdout.splitlines()
        assert first == "1"  # the reminder due now went out; the one in an hour waits
        assert second == "['sent']"
        (request,) = http.requests
    assert request.headers["webhook-signature"].startswith("v1,")
