"""The CLI contract: output shapes, exit codes, and that bad input writes nothing."""

from datetime import UTC, datetime
from pathlib import Path

import apsw
import pytest

from duequeue.schedule import release
from tests.clirunner import Cli

T0 = datetime(2027, 1, 5, 8, 0, tzinfo=UTC)
HOOK = "https://hooks.example.com/r"


@pytest.fixture
def cli(db_path: Path) -> Cli:
    return Cli(db_path, T0)


def rows(db_path: Path) -> int:
    if not db_path.exists():
        return 0
    conn = apsw.Connection(str(db_path))
    try:
        return int(conn.execute("SELECT count(*) FROM reminders").fetchall()[0][0])
    except apsw.SQLError:
        return 0
    finally:
        conn.close()


def test_add_prints_the_new_id_alone(cli: Cli) -> None:
    r = cli("add", "--at", "+15m", "--webhook", HOOK)
    assert (r.code, r.out) == (0, "1\n")
    assert r.err.startswith("duequeue: note: created a new database ")  # no init made it
    again = cli("add", "--at", "+15m", "--webhook", HOOK)
    assert (again.out, again.err) == ("2\n", "")


def test_add_with_an_existing_key_adds_nothing_and_prints_the_existing_id(
    cli: Cli, db_path: Path
) -> None:
    first = cli("add", "--at", "+1h", "--webhook", HOOK, "--key", "rent-2027-01")
    again = cli("add", "--at", "+2h", "--webhook", HOOK, "--key", "rent-2027-01")
    assert (again.code, again.out) == (0, first.out)
    assert "exists" in again.err
    assert rows(db_path) == 1


def test_add_reads_a_naive_time_in_the_zone_and_stores_utc(cli: Cli) -> None:
    rid = cli.add("--at", "2027-07-01T09:00", "--tz", "Europe/Berlin", "--webhook", HOOK)
    row = cli.row(rid)
    assert (row["next_fire_at"], row["tz"]) == ("2027-07-01T07:00:00.000Z", "Europe/Berlin")


def test_add_uses_the_default_zone_setting(cli: Cli) -> None:
    env = {"DUEQUEUE_TZ": "Asia/Tokyo"}
    rid = int(cli("add", "--at", "2027-07-01T09:00", "--webhook", HOOK, env=env).out)
    assert cli.row(rid)["next_fire_at"] == "2027-07-01T00:00:00.000Z"


BAD_ADDS = [
    (["--at", "+1h", "--webhook", HOOK, "--tz", "Mars/Olympus"], "--tz"),
    (["--at", "2027-02-30T09:00", "--webhook", HOOK], "--at"),
    (["--at", "next tuesday", "--webhook", HOOK], "--at"),
    (["--webhook", HOOK], "--at"),
    (["--at", "+1h"], "--email/--webhook"),
    (["--at", "+1h", "--email", "not-an-address"], "--email"),
    (["--at", "+1h", "--email", "a@b.example, c@d.example"], "--email"),
    (["--at", "+1h", "--webhook", "ftp://example.com/x"], "--webhook"),
    (["--at", "+1h", "--webhook", "http:///nohost"], "--webhook"),
    (["--at", "+1h", "--webhook", HOOK, "--data", "{not json"], "--data"),
    (["--at", "+1h", "--webhook", HOOK, "--data", '"' + "x" * 20000 + '"'], "--data"),
    (["--at", "+1h", "--webhook", HOOK, "--subject", "two\nlines"], "--subject"),
    (["--at", "+1h", "--webhook", HOOK, "--subject", "x" * 256], "--subject"),
    (["--at", "+1h", "--webhook", HOOK, "--rrule", "FREQ=SOMETIMES"], "--rrule"),
    (["--at", "+1h", "--webhook", HOOK, "--cron", "61 * * * *"], "--cron"),
    (
        ["--at", "+1h", "--webhook", HOOK, "--rrule", "FREQ=DAILY", "--cron", "0 9 * * *"],
        "--rrule/--cron",
    ),
    (["--at", "+1h", "--webhook", HOOK, "--misfire-grace", "soon"], "--misfire-grace"),
    (["--at", "+1h", "--target", "sms:+4930123"], "--target: unknown channel 'sms'"),
    (["--at", "+1h", "--target", "ann@example.com"], "--target: expected CHANNEL:ADDRESS"),
    (["--at", "+1h", "--target", "email:nope"], "--target: 'nope' is not a valid email"),
    # The second of several is named as such: the first is the flag alone.
    (["--at", "+1h", "--webhook", HOOK, "--webhook", "ftp://x/"], "--webhook (the 2nd): "),
    (["--at", "+1h", "--target", f"webhook:{HOOK}", "--target", "x:"], "--target (the 2nd): "),
    (["--at", "+1h", "--target", HOOK], "--target: expected CHANNEL:ADDRESS"),
]


@pytest.mark.parametrize(("args", "field"), BAD_ADDS)
def test_bad_add_input_exits_2_with_one_line_naming_the_field_and_writes_nothing(
    cli: Cli, db_path: Path, args: list[str], field: str
) -> None:
    r = cli("add", *args)
    assert r.code == 2
    assert r.out == ""
    assert r.err.count("\n") == 1
    assert r.err.startswith(f"duequeue: error: {field}")
    assert rows(db_path) == 0


def test_targets_of_any_channel_beside_the_shorthand_flags(cli: Cli) -> None:
    rid = cli.add(
        "--at", "+1h", "--email", "ann@example.com",
        "--target", f"webhook:{HOOK}", "--target", "email:bob@example.com",
    )  # fmt: skip
    assert [(t["channel"], t["address"]) for t in cli.row(rid)["targets"]] == [
        ("email", "ann@example.com"),
        ("webhook", HOOK),
        ("email", "bob@example.com"),
    ]
    r = cli(
        "add", "--at", "+1h", *[a for i in range(21) for a in ("--target", f"webhook:{HOOK}/{i}")]
    )
    assert (r.code, r.err) == (
        2,
        "duequeue: error: --email/--webhook/--notify/--target: at most 20 targets per reminder\n",
    )


def test_bad_input_leaves_an_existing_database_unchanged(cli: Cli, db_path: Path) -> None:
    cli.add("--at", "+1h", "--webhook", HOOK)
    before = cli.inspect("--all")
    assert cli("add", "--at", "+1h", "--email", "nope").code == 2
    assert cli.inspect("--all") == before


def test_an_invalid_setting_exits_1_with_a_clear_line(cli: Cli) -> None:
    r = cli("tick", env={"DUEQUEUE_WEBHOOK_SECRET": "hunter2"})
    assert r.code == 1
    assert (
        r.err == "duequeue: error: DUEQUEUE_WEBHOOK_SECRET: must start with 'whsec_' "
        "followed by base64\n"
    )
    r = cli("tick", env={"DUEQUEUE_BACKOFF": "1m,often"})
    assert (r.code, r.err.splitlines()[0][:34]) == (1, "duequeue: error: DUEQUEUE_BACKOFF:")
    r = cli("tick", env={"DUEQUEUE_SMTP_URL": "smtp://me:s3cret@mail.example.com/x"})
    assert r.code == 1
    assert "s3cret" not in r.err


def test_a_file_that_is_not_a_database_exits_1_and_is_left_alone(tmp_path: Path) -> None:
    junk = tmp_path / "notes.txt"
    junk.write_text("shopping list\n" * 200)
    r = Cli(junk, T0)("tick")
    assert r.code == 1
    assert r.err == f"duequeue: error: {junk} is not an SQLite database\n"
    assert junk.read_text() == "shopping list\n" * 200


def test_settings_come_from_a_toml_file_below_env_and_flags(cli: Cli, tmp_path: Path) -> None:
    conf = tmp_path / "dq.toml"
    conf.write_text('tick_limit = 1\nbackoff = "2m"\n')

    def tick_of_four(*args: str, env: dict[str, str] | None = None) -> int:
        """Add four due rows, tick them; return how many claims (batches) the tick took."""
        for _ in range(4):
            cli.add("--at", "now", "--webhook", "http://127.0.0.1:9/x")
        summary = cli(*args, "tick", "--json", env=env).json()
        assert summary["claimed"] == 4  # a tick drains: the limit bounds each claim
        return int(summary["batches"])

    assert tick_of_four("--config", str(conf)) == 4  # file: one row per claim
    assert cli.row(1)["next_fire_at"] == "2027-01-05T08:02:00.000Z"  # file's backoff
    env = {"DUEQUEUE_TICK_LIMIT": "2", "DUEQUEUE_CONFIG": str(conf)}
    for _ in range(4):
        cli.add("--at", "now", "--webhook", "http://127.0.0.1:9/x")
    summary = cli("tick", "--json", "--limit", "1", env=env).json()
    assert (summary["claimed"], summary["batches"]) == (4, 4)  # flag
    assert tick_of_four(env=env) == 2  # env beats the file
    missing = cli("--config", str(tmp_path / "nope.toml"), "tick")
    assert missing.code == 1
    assert "does not exist" in missing.err


def test_an_unknown_config_key_is_refused(cli: Cli, tmp_path: Path) -> None:
    conf = tmp_path / "dq.toml"
    conf.write_text("tick_limt = 5\n")
    r = cli("--config", str(conf), "tick")
    assert r.code == 1
    assert "unknown setting 'tick_limt'" in r.err


def test_tick_json_has_the_documented_keys(cli: Cli) -> None:
    assert cli("init").code == 0
    summary = cli.tick()
    assert set(summary) == {
        "claimed",
        "batches",
        "target_retries",
        "sent",
        "partial",
        "retried",
        "dead",
        "skipped",
        "released",
        "deliveries_sent",
        "deliveries_failed",
        "max_lateness_s",
        "unrecorded",
        "refused",
        "lost",
        "errors",
        "stopped_by",
        "alert_error",
        "paused_since",
    }
    assert summary["max_lateness_s"] is None
    assert summary["errors"] == []


def test_inspect_json_has_the_documented_keys(cli: Cli) -> None:
    rid = cli.add(
        "--at",
        "2027-01-06T09:00",
        "--tz",
        "Europe/Berlin",
        "--rrule",
        "FREQ=WEEKLY;BYDAY=WE",
        "--email",
        "a@example.com",
        "--webhook",
        HOOK,
        "--subject",
        "standup",
        "--key",
        "k1",
    )
    (row,) = cli.inspect("--pending")
    assert row == {
        "id": rid,
        "key": "k1",
        "subject": "standup",
        "body": "",
        "data": None,
        "targets": [
            {
                "id": 1,
                "channel": "email",
                "address": "a@example.com",
                "disabled_at": None,
                "has_secret": False,
            },
            {
                "id": 2,
                "channel": "webhook",
                "address": HOOK,
                "disabled_at": None,
                "has_secret": False,
            },
        ],
        "rrule": "FREQ=WEEKLY;BYDAY=WE",
        "cron": None,
        "tz": "Europe/Berlin",
        "state": "pending",
        "dead": False,
        "dead_letters": 0,
        "fire_at": "2027-01-06T08:00:00.000Z",
        "next_fire_at": "2027-01-06T08:00:00.000Z",
        "error_count": 0,
        "last_error": None,
        "last_fired_at": None,
        "last_sent_at": None,
        "last_lateness_s": None,
        "skipped_fires": 0,
        "dead_fire_at": None,
        "dead_at": None,
        "created_at": "2027-01-05T08:00:00.000Z",
        "local_fire_at": "2027-01-06T09:00:00+01:00",
        "start_wall": "2027-01-06T09:00:00",  # what the user meant, kept for new zone rules
        "fire_release": release.in_use(),
        "paused_at": None,
    }


def test_inspect_defaults_to_dead_and_says_when_empty(cli: Cli) -> None:
    cli.add("--at", "+1h", "--webhook", HOOK)
    r = cli("inspect")
    assert (r.code, r.out) == (0, "no dead reminders\n")
    assert cli("inspect", "--json").json() == []


def test_inspect_views_and_table(cli: Cli) -> None:
    due = cli.add("--at", "now", "--webhook", HOOK, "--subject", "due one")
    later = cli.add("--at", "+1d", "--webhook", HOOK, "--subject", "later one")
    assert [r["id"] for r in cli.inspect("--due")] == [due]
    assert [r["id"] for r in cli.inspect("--pending")] == [due, later]
    table = cli("inspect", "--pending").out
    assert "due one" in table
    assert "later one" in table
    assert HOOK in table
    assert cli("inspect", "--due", "--all").code == 2


def test_help_lists_every_command() -> None:
    r = Cli(Path("unused.db"), T0)("--help")
    for command in ("add", "tick", "inspect"):
        assert command in r.out
