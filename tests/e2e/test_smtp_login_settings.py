"""The SMTP user and password can live in the config file (smtp_user, smtp_password), as the
reference says of every setting, and `config` lists them with the password masked."""

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.clirunner import Cli
from tests.servers import SmtpSink

T0 = datetime(2027, 1, 5, 8, 0, tzinfo=UTC)
PASSWORD = "p%w/d?#-in-a-file"  # everything a URL would need escaped


@pytest.fixture
def smtp() -> Iterator[SmtpSink]:
    with SmtpSink(credentials=("alice", PASSWORD)) as sink:
        yield sink


def test_a_login_in_the_config_file_reaches_the_server(
    db_path: Path, tmp_path: Path, smtp: SmtpSink
) -> None:
    config = tmp_path / "config.toml"
    config.write_text(
        f'smtp_url = "{smtp.url}"\nsmtp_user = "alice"\nsmtp_password = "{PASSWORD}"\n'
        'email_from = "reminders@example.com"\n'
    )
    cli = Cli(db_path, T0, {"DUEQUEUE_CONFIG": str(config)})
    cli.add("--at", "now", "--email", "bob@example.com", "--subject", "from the file")
    assert cli.tick()["sent"] == 1
    assert smtp.logins == ["alice"]
    assert [m["Subject"] for m in smtp.messages] == ["from the file"]
    shown = cli("config")
    assert shown.code == 0
    assert 'smtp_user = "alice"  # config file' in shown.out
    assert 'smtp_password = "****"  # config file' in shown.out
    assert PASSWORD not in shown.out + shown.err
    assert cli("doctor").out.count("logged in as alice") == 1


def test_a_user_without_any_password_stops_every_command(db_path: Path, tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('smtp_url = "smtp://127.0.0.1:2525"\nsmtp_user = "alice"\n')
    r = Cli(db_path, T0, {"DUEQUEUE_CONFIG": str(config)})("inspect")
    assert r.code == 1
    assert r.err.startswith("duequeue: error: DUEQUEUE_SMTP_URL: a user is set but no password")
