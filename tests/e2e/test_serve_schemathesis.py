"""The API keeps to its OpenAPI document: schemathesis (its CLI, run as a process) generates
requests from /api/v1/openapi.json against a real `duequeue serve` with a token, and checks
that no answer is a 5xx and every answer (status, content type, headers, body) is documented.

Not `positive_data_acceptance`: the schema cannot say every rule of add (a time that parses,
not both rrule and cron), and such a request gets the documented 400 naming the field."""

import subprocess
import sys
from pathlib import Path

import pytest

from tests.procs import ROOT, cli_env, reap, run_cli
from tests.servers import HttpSink, Reply
from tests.webserver import Served

TOKEN = "schemathesis-token-0123456789"
CHECKS = ("not_a_server_error,response_schema_conformance,status_code_conformance,"
          "content_type_conformance,response_headers_conformance")  # fmt: skip


@pytest.mark.timeout(600)
def test_the_api_keeps_to_its_openapi_document(tmp_path: Path, http: HttpSink) -> None:
    pytest.importorskip("schemathesis")
    db = tmp_path / "dq.db"
    http.respond("/gone", Reply(400))
    run_cli(db, "add", "--at", "now", "--webhook", http.url("/gone"), "--subject", "dead")
    run_cli(db, "add", "--at", "+1h", "--cron", "0 9 * * *", "--email", "a@example.com")
    run_cli(db, "tick")
    try:
        with Served(db, env={"DUEQUEUE_WEB_TOKEN": TOKEN}) as s:
            run = subprocess.run(
                [sys.executable, "-c", "from schemathesis.cli import schemathesis; schemathesis()",
                 "run", f"{s.url}/api/v1/openapi.json", "-H", f"Authorization: Bearer {TOKEN}",
                 "--checks", CHECKS, "--workers", "1", "--max-examples", "40",
                 "--seed", "25", "--suppress-health-check", "all"],
                cwd=tmp_path, env=cli_env(db, {"PYTHONPATH": str(ROOT)}), capture_output=True,
                text=True, timeout=540, check=False,
            )  # fmt: skip
            assert s.stop() == 0
    finally:
        reap()
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-2000:]
    assert " passed" in run.stdout
