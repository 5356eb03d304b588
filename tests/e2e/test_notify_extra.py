"""The notify extra as an install without it meets it, through real processes: Apprise is shadowed
by a module that fails to import, exactly as `import apprise` fails when it is not installed."""

from pathlib import Path

import pytest

from tests.paths import ROOT
from tests.procs import run_cli
from tests.servers import HttpSink

HINT = "pip install 'duequeue[notify]'"


@pytest.fixture
def without_apprise(tmp_path: Path) -> dict[str, str]:
    shadow = tmp_path / "shadow"
    shadow.mkdir()
    (shadow / "apprise.py").write_text("raise ImportError(\"No module named 'apprise'\")\n")
    return {"PYTHONPATH": f"{shadow}:{ROOT}"}


def test_add_notify_without_the_extra_says_how_to_install_it_and_writes_nothing(
    db_path: Path, without_apprise: dict[str, str]
) -> None:
    result = run_cli(
        db_path, "add", "--at", "now", "--notify", "ntfys://ntfy.sh/x", env=without_apprise
    )

    assert result.returncode == 2
    assert result.stderr == f"duequeue: error: --notify: notify targets need Apprise: {HINT}\n"
    assert not db_path.exists()


def test_a_due_notify_target_without_the_extra_is_a_recorded_failure_not_a_crash(
    db_path: Path, http: HttpSink, without_apprise: dict[str, str]
) -> None:
    url = f"ntfy://127.0.0.1:{http.port}/topic"
    assert run_cli(db_path, "add", "--at", "now", "--notify", url).returncode == 0

    tick = run_cli(db_path, "tick", "--json", env=without_apprise)
    doctor = run_cli(db_path, "doctor", env=without_apprise)

    assert tick.returncode == 0, tick.stderr
    assert '"retried": 1' in tick.stdout
    history = run_cli(db_path, "history", "1").stdout
    assert HINT in history
    assert http.requests == []
    assert doctor.returncode == 1
    assert "notify targets" in doctor.stdout
    assert HINT in doctor.stdout


def test_ticks_without_notify_targets_never_import_apprise(db_path: Path, http: HttpSink) -> None:
    assert run_cli(db_path, "add", "--at", "now", "--webhook", http.url("/h")).returncode == 0

    for _ in range(2):  # a tick with a webhook due, then the empty tick
        result = run_cli(db_path, "tick", env={"PYTHONPROFILEIMPORTTIME": "1"})
        assert result.returncode == 0, result.stderr
        assert "| duequeue" in result.stderr  # the import log is there
        assert "apprise" not in result.stderr
    assert len(http.requests) == 1
