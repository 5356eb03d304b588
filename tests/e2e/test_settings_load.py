"""Settings are checked once, at load, for every command; and what `add`, `doctor` and
`config` say about them."""

import base64
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.clirunner import Cli
from tests.procs import run_cli
from tests.servers import SmtpSink

T0 = datetime(2027, 1, 5, 8, 0, tzinfo=UTC)
HOOK = "https://hooks.example.com/r"


def secret(n: int) -> str:
    return "whsec_" + base64.b64encode(bytes(range(n))).decode()


@pytest.fixture
def cli(db_path: Path) -> Cli:
    return Cli(db_path, T0)


def made(cli: Cli) -> None:
    """Make the database first, so that the notes asserted are about the reminder alone."""
    assert cli("init").code == 0


BAD_SETTINGS = [
    ({"DUEQUEUE_TZ": "Mars/Base"}, "DUEQUEUE_TZ: unknown time zone 'Mars/Base'"),
    ({"DUEQUEUE_TZ": "localtime"}, "DUEQUEUE_TZ: unknown time zone 'localtime'"),
    ({"DUEQUEUE_WEBHOOK_SECRET": secret(23)}, "DUEQUEUE_WEBHOOK_SECRET: the key is only 23"),
    ({"DUEQUEUE_EMAIL_FROM": "notanemail"}, "DUEQUEUE_EMAIL_FROM: 'notanemail' is not an"),
    ({"DUEQUEUE_EMAIL_FROM": "r@example.com\r\nBcc: x@example.com"}, "DUEQUEUE_EMAIL_FROM: "),
    ({"DUEQUEUE_EMAIL_FROM": "Reminders <r@example.com"}, "DUEQUEUE_EMAIL_FROM: "),
]
COMMANDS = [
    ["add", "--at", "+1h", "--webhook", HOOK],
    ["add", "--at", "+1h", "--tz", "Europe/Berlin", "--webhook", HOOK],
    ["tick"],
    ["stats"],
    ["inspect"],
    ["import", "-"],
    ["config"],
]


@pytest.mark.parametrize(("env", "message"), BAD_SETTINGS)
@pytest.mark.parametrize("args", COMMANDS, ids=lambda a: " ".join(a[:3]))
def test_a_bad_setting_stops_every_command_with_one_line_and_writes_nothing(
    cli: Cli, db_path: Path, env: dict[str, str], message: str, args: list[str]
) -> None:
    r = cli(*args, env=env)
    assert (r.code, r.out) == (1, "")
    assert r.err.startswith(f"duequeue: error: {message}")
    assert len(r.err.splitlines()) == 1
    assert "--tz" not in r.err  # add blames the setting, not a flag that was not given
    assert not db_path.exists()


@pytest.mark.parametrize(("env", "message"), BAD_SETTINGS[:4])
def test_crons_plain_tick_line_checks_the_settings_too(
    db_path: Path, env: dict[str, str], message: str
) -> None:
    r = run_cli(db_path, "tick", env=env)  # the fast path, without typer (fastargs.py)
    assert (r.returncode, r.stdout) == (1, "")
    assert r.stderr.startswith(f"duequeue: error: {message}")
    assert not db_path.exists()


def test_the_checks_accept_what_is_right(cli: Cli) -> None:
    assert cli("init").code == 0
    env = {
        "DUEQUEUE_TZ": "Europe/Berlin",
        "DUEQUEUE_WEBHOOK_SECRET": secret(24),
        "DUEQUEUE_EMAIL_FROM": "Reminders <r@example.com>",
    }
    r = cli("tick", "--json", env=env)
    assert r.code == 0, r.err


def test_a_zone_the_setting_names_is_told_apart_from_the_flag(cli: Cli) -> None:
    r = cli("add", "--at", "+1h", "--tz", "Mars/Base", "--webhook", HOOK)
    assert (r.code, r.err) == (2, "duequeue: error: --tz: unknown time zone 'Mars/Base'\n")


# -- add: what the user should know --------------------------------------------------------


def test_add_at_a_past_time_says_it_goes_out_at_the_next_tick(cli: Cli) -> None:
    made(cli)
    r = cli("add", "--at", "2027-01-05T07:00Z", "--webhook", HOOK)
    assert (r.code, r.out) == (0, "1\n")
    assert r.err == (
        "duequeue: note: the first fire, 2027-01-05T07:00:00.000Z, is in the past: "
        "it goes out at the next tick\n"
    )
    assert cli.row(1)["next_fire_at"] == "2027-01-05T07:00:00.000Z"
    dry = cli("add", "--at", "2027-01-05T07:00Z", "--webhook", HOOK, "--dry-run")
    assert "is in the past" in dry.err


def test_add_at_a_wall_time_a_dst_gap_skips_says_when_it_fires(cli: Cli) -> None:
    made(cli)
    args = ["--tz", "America/New_York", "--webhook", HOOK]
    r = cli("add", "--at", "2027-03-14T02:30", *args)
    assert (r.code, r.out) == (0, "1\n")
    assert r.err == (
        "duequeue: note: 2027-03-14T02:30 does not exist in America/New_York (a DST change "
        "skips it): the first fire is 2027-03-14T03:00:00-04:00, the end of the gap\n"
    )
    assert cli.row(1)["next_fire_at"] == "2027-03-14T07:00:00.000Z"
    dry = cli("add", "--at", "2027-03-14T02:30", "--rrule", "FREQ=DAILY", *args, "--dry-run")
    assert "does not exist in America/New_York" in dry.err
    fine = cli("add", "--at", "2027-03-14T03:30", *args)
    assert (fine.code, fine.err) == (0, "")


@pytest.mark.parametrize("at", ["now", "+0m", "+0s"])
def test_add_at_now_or_plus_zero_is_due_now_without_a_note(cli: Cli, at: str) -> None:
    made(cli)
    r = cli("add", "--at", at, "--webhook", HOOK)
    assert (r.code, r.err) == (0, "")
    assert cli.row(int(r.out))["next_fire_at"] == "2027-01-05T08:00:00.000Z"


@pytest.mark.parametrize("rule", [("--rrule", "FREQ=MINUTELY"), ("--cron", "* * * * *")])
def test_a_rule_starting_now_within_the_second_gets_no_note(
    cli: Cli, rule: tuple[str, str]
) -> None:
    # Rules keep whole seconds: a start "now" at 08:00:00.500 fires at 08:00:00, which is not
    # a time the user gave in the past.
    made(cli)
    cli.now = datetime(2027, 1, 5, 8, 0, 0, 500_000, tzinfo=UTC)
    r = cli("add", "--at", "now", *rule, "--webhook", HOOK)
    assert (r.code, r.err) == (0, "")


def test_add_email_without_smtp_warns_and_still_adds(cli: Cli) -> None:
    made(cli)
    r = cli("add", "--at", "+1h", "--email", "ann@example.com")
    assert (r.code, r.out) == (0, "1\n")
    assert r.err.startswith(
        "duequeue: warning: DUEQUEUE_SMTP_URL and DUEQUEUE_EMAIL_FROM not set: email targets fail"
    )
    r = cli(
        "add",
        "--at",
        "+1h",
        "--email",
        "ann@example.com",
        env={"DUEQUEUE_SMTP_URL": "smtp://127.0.0.1:25"},
    )
    assert r.err.startswith("duequeue: warning: DUEQUEUE_EMAIL_FROM not set")
    configured = {
        "DUEQUEUE_SMTP_URL": "smtp://127.0.0.1:25",
        "DUEQUEUE_EMAIL_FROM": "r@example.com",
    }
    assert cli("add", "--at", "+1h", "--email", "ann@example.com", env=configured).err == ""
    assert cli("add", "--at", "+1h", "--webhook", HOOK).err == ""  # no email, no warning


# -- doctor: email targets but no SMTP -----------------------------------------------------


def _checks(cli: Cli, env: dict[str, str] | None = None) -> tuple[int, dict[str, dict[str, str]]]:
    r = cli("doctor", "--json", env=env)
    return r.code, {c["name"]: c for c in r.json()["checks"]}


def test_doctor_fails_when_pending_email_targets_have_no_smtp(cli: Cli) -> None:
    cli.add("--at", "+1h", "--webhook", HOOK)
    code, checks = _checks(cli)
    assert "email targets" not in checks
    assert code == 0, checks

    cli.add("--at", "+1h", "--email", "ann@example.com")
    code, checks = _checks(cli)
    assert code == 1
    assert checks["email targets"]["ok"] is False
    assert "DUEQUEUE_SMTP_URL is not set" in checks["email targets"]["detail"]
    assert "DUEQUEUE_SMTP_URL" in checks["email targets"]["fix"]


def test_doctor_ignores_email_targets_that_will_never_be_sent(cli: Cli) -> None:
    rid = cli.add("--at", "+1h", "--email", "ann@example.com")
    assert cli("cancel", str(rid)).code == 0
    code, checks = _checks(cli)
    assert (code, "email targets" in checks) == (0, False)


def test_doctor_is_content_once_smtp_is_configured(cli: Cli) -> None:
    cli.add("--at", "+1h", "--email", "ann@example.com")
    with SmtpSink() as smtp:
        code, checks = _checks(
            cli, {"DUEQUEUE_SMTP_URL": smtp.url, "DUEQUEUE_EMAIL_FROM": "r@example.com"}
        )
    assert (code, "email targets" in checks) == (0, False), checks


def test_doctor_names_the_bad_zone_setting_and_the_tz_data(cli: Cli) -> None:
    code, checks = _checks(cli, {"DUEQUEUE_TZ": "Mars/Base"})
    zone = checks["zone data"]
    assert (code, zone["ok"]) == (1, False)
    assert "tz data 20" in zone["detail"]
    assert "tzdata" in zone["fix"]


# -- config: which file, and where each value came from -------------------------------------


def test_config_says_which_file_it_read_and_where_each_value_came_from(
    cli: Cli, tmp_path: Path
) -> None:
    conf = tmp_path / "dq.toml"
    conf.write_text('tick_limit = 7\ntz = "Asia/Tokyo"\n')
    env = {"DUEQUEUE_CONFIG": str(conf), "DUEQUEUE_TZ": "Europe/Berlin"}
    r = cli("--db", str(tmp_path / "flag.db"), "config", env=env)
    assert r.code == 0, r.err
    lines = r.out.splitlines()
    assert lines[0] == f"# config file: {conf} (read)"
    assert lines[1].startswith("# tz data: 20")
    assert f'db = "{tmp_path / "flag.db"}"  # --db' in lines
    assert "tick_limit = 7  # config file" in lines
    assert 'tz = "Europe/Berlin"  # DUEQUEUE_TZ' in lines  # the environment beats the file
    assert "max_retries = 3  # default" in lines


def test_config_says_when_the_default_file_does_not_exist(cli: Cli, tmp_path: Path) -> None:
    r = cli("config")
    default = tmp_path / "xdg-config" / "duequeue" / "config.toml"
    assert r.out.splitlines()[0] == f"# config file: {default} (not found, none read)"
    assert f'db = "{cli.env["DUEQUEUE_DB"]}"  # DUEQUEUE_DB' in r.out.splitlines()
