"""Hostile or broken `add` input: exit 2, one line naming the flag, and the database unchanged.

The matrix runs in-process (fast); what only a real process can carry (argv bytes that are not
UTF-8, a body near the kernel's argument limit) runs as one.
"""

import hashlib
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.clirunner import SECRET, Cli
from tests.integration.test_cli import rows
from tests.procs import run_cli
from tests.servers import HttpSink

T0 = datetime(2027, 1, 5, 8, 0, tzinfo=UTC)
HOOK = "https://hooks.example.com/r"
AT = ["--at", "+1h"]

BAD = [
    # targets
    ([*AT, "--webhook", "https://user:pw@hooks.example.com/r"], "--webhook: credentials"),
    ([*AT, "--webhook", "https://hooks.example.com:0/r"], "--webhook"),
    ([*AT, "--webhook", "https://hooks.example.com:99999/r"], "--webhook"),
    ([*AT, "--webhook", "https://exa mple.com/r"], "--webhook"),
    ([*AT, "--webhook", "https://bad_host!.example.com/r"], "--webhook"),
    ([*AT, "--webhook", "https://-lead.example.com/r"], "--webhook"),
    ([*AT, "--webhook", "https://" + "a" * 64 + ".example.com/r"], "--webhook"),
    ([*AT, "--webhook", "https://xn--a.example/r"], "--webhook"),
    ([*AT, "--webhook", "https://exa\u200bmple.com\u0000/r"], "--webhook"),
    ([*AT, "--webhook", "javascript:alert(1)"], "--webhook"),
    ([*AT, "--webhook", "https://[::1/r"], "--webhook"),
    ([*AT, "--webhook", "https://x.example/" + "p" * 2100], "--webhook"),
    ([*AT, "--email", "ann@example.com\r\nBcc: eve@example.com"], "--email"),
    ([*AT, "--email", "ann@example.com\x00"], "--email"),
    ([*AT, "--email", "<ann@example.com>"], "--email"),
    ([*AT, "--email", "a" * 250 + "@example.com"], "--email"),
    ([*AT, *[a for i in range(21) for a in ("--webhook", f"{HOOK}/{i}")]], "--email/--webhook"),
    # text
    ([*AT, "--webhook", HOOK, "--subject", "Hi\r\nBcc: eve@example.com"], "--subject"),
    ([*AT, "--webhook", HOOK, "--subject", "nul\x00byte"], "--subject"),
    ([*AT, "--webhook", HOOK, "--body", "nul\x00byte"], "--body"),
    ([*AT, "--webhook", HOOK, "--body", "bell\x07"], "--body"),
    ([*AT, "--webhook", HOOK, "--body", "x" * 65537], "--body"),
    ([*AT, "--webhook", HOOK, "--body", "é" * 32769], "--body"),  # 65538 bytes in UTF-8
    ([*AT, "--webhook", HOOK, "--subject", "\udcff"], "--subject: not valid UTF-8"),
    ([*AT, "--webhook", HOOK, "--key", ""], "--key"),
    ([*AT, "--webhook", HOOK, "--key", "k" * 201], "--key"),
    ([*AT, "--webhook", HOOK, "--key", "line\nbreak"], "--key"),
    # data
    ([*AT, "--webhook", HOOK, "--data", "NaN"], "--data"),
    ([*AT, "--webhook", HOOK, "--data", '{"x": Infinity}'], "--data"),
    ([*AT, "--webhook", HOOK, "--data", "[" * 5000 + "]" * 5000], "--data: nested too deeply"),
    ([*AT, "--webhook", HOOK, "--data", "1" * 5000], "--data"),
    ([*AT, "--webhook", HOOK, "--data", " " * 70000 + "1"], "--data: larger than"),
    ([*AT, "--webhook", HOOK, "--data", '"\x00"'], "--data"),
    # ... what Python's json reads but no receiver could: every send would fail on it
    ([*AT, "--webhook", HOOK, "--data", "1e400"], "--data: a number is too large"),
    ([*AT, "--webhook", HOOK, "--data", "-1e999"], "--data: a number is too large"),
    ([*AT, "--webhook", HOOK, "--data", '{"a": [1, 2e308]}'], "--data: a number is too large"),
    ([*AT, "--webhook", HOOK, "--data", "-Infinity"], "--data: not valid JSON"),
    ([*AT, "--webhook", HOOK, "--data", '{"x":"\\ud800"}'], "--data: a string holds a lone"),
    ([*AT, "--webhook", HOOK, "--data", '{"\\udcff": 1}'], "--data: a string holds a lone"),
    ([*AT, "--webhook", HOOK, "--data", "[" * 65 + "]" * 65], "--data: nested too deeply"),
    # time and rules
    (["--at", "+99999999999d", "--webhook", HOOK], "--at"),
    (["--at", "9999-12-31T23:59", "--tz", "Pacific/Pago_Pago", "--webhook", HOOK], "--at"),
    (["--at", "\x00", "--webhook", HOOK], "--at"),
    ([*AT, "--tz", "../../etc/passwd", "--webhook", HOOK], "--tz"),
    ([*AT, "--tz", "Europe/Berlin\x00", "--webhook", HOOK], "--tz"),
    ([*AT, "--tz", "localtime", "--webhook", HOOK], "--tz"),
    ([*AT, "--rrule", "FREQ=DAILY;COUNT=0", "--webhook", HOOK], "--rrule"),
    ([*AT, "--rrule", "FREQ=DAILY\nRDATE:20270101", "--webhook", HOOK], "--rrule"),
    ([*AT, "--cron", "* * * * * *", "--webhook", HOOK], "--cron"),
    ([*AT, "--cron", "0 0 31 2 *", "--webhook", HOOK], "--cron"),
    ([*AT, "--webhook", HOOK, "--misfire-grace", "99999999999999w"], "--misfire-grace"),
    ([*AT, "--webhook", HOOK, "--misfire-grace", "0m"], "--misfire-grace"),
]


def digest(db: Path) -> str:
    return "".join(
        hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(db.parent.iterdir())
        if p.name.startswith(db.name)
    )


@pytest.fixture
def cli(db_path: Path) -> Cli:
    c = Cli(db_path, T0)
    c.add("--at", "+1d", "--webhook", HOOK, "--subject", "already here")
    return c


@pytest.mark.parametrize(("args", "message"), BAD)
def test_hostile_add_input_exits_2_with_one_line_and_leaves_the_database_unchanged(
    cli: Cli, db_path: Path, args: list[str], message: str
) -> None:
    before = digest(db_path)
    r = cli("add", *args)
    assert (r.code, r.out) == (2, "")
    assert r.err.count("\n") == 1, r.err
    assert r.err.startswith(f"duequeue: error: {message}")
    assert len(r.err) < 400  # one readable line, even when the input was huge
    assert digest(db_path) == before


GOOD = [
    ([*AT, "--webhook", "https://bücher.example/r"], "https://bücher.example/r"),
    ([*AT, "--webhook", "https://xn--bcher-kva.example/r"], "https://xn--bcher-kva.example/r"),
    ([*AT, "--webhook", "http://[2001:db8::1]:8080/r?x=1#f"], "http://[2001:db8::1]:8080/r?x=1#f"),
    ([*AT, "--webhook", "http://10.0.0.7/r"], "http://10.0.0.7/r"),
    ([*AT, "--webhook", "https://under_score.example/r"], "https://under_score.example/r"),
]


@pytest.mark.parametrize(("args", "address"), GOOD)
def test_unusual_but_valid_targets_are_taken_as_given(
    cli: Cli, args: list[str], address: str
) -> None:
    rid = cli.add(*args)
    (target,) = cli.row(rid)["targets"]
    assert (target["channel"], target["address"], target["disabled_at"]) == (
        "webhook",
        address,
        None,
    )


def test_data_at_the_limits_is_taken_and_delivered_unchanged(db_path: Path) -> None:
    edge = [1.7976931348623157e308, -5e-324, 10**30, "\U0001f600"]
    deep = "[" * 63 + json.dumps(edge) + "]" * 63  # 64 levels: the most allowed
    with HttpSink() as http:
        cli = Cli(db_path, T0, {"DUEQUEUE_WEBHOOK_SECRET": SECRET})
        cli.add("--at", "now", "--webhook", http.url("/r"), "--data", deep)
        assert cli.tick()["sent"] == 1
        (req,) = http.requests_for("/r")
    value = cli.verify(req.body, req.headers)["data"]["data"]
    for _ in range(63):
        (value,) = value
    assert value == edge


def test_a_body_at_the_limit_with_tabs_and_line_breaks_is_taken(cli: Cli) -> None:
    body = ("line\tone\r\n" * 6554)[:65536]
    rid = cli.add(*AT, "--webhook", HOOK, "--body", body)
    assert cli.row(rid)["id"] == rid


def test_argv_that_is_not_utf8_is_refused_by_a_real_process(db_path: Path) -> None:
    r = run_cli(db_path, "add", *AT, "--webhook", HOOK, "--subject", b"caf\xe9")
    assert (r.returncode, r.stdout) == (2, "")
    assert r.stderr == "duequeue: error: --subject: not valid UTF-8 text\n"
    assert not db_path.exists()


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ("1e400", "--data: a number is too large (beyond about 1.8e308)"),
        (
            '{"x":"\\ud800"}',
            "--data: a string holds a lone surrogate (such as \\ud800), which is not text",
        ),
        (
            "[" * 100 + "]" * 100,
            "--data: nested too deeply (at most 64 levels of arrays and objects)",
        ),
    ],
)
def test_data_no_receiver_could_take_is_refused_by_a_real_process_and_nothing_written(
    db_path: Path, data: str, message: str
) -> None:
    assert run_cli(db_path, "add", *AT, "--webhook", HOOK).returncode == 0
    r = run_cli(db_path, "add", *AT, "--webhook", HOOK, "--data", data)
    assert (r.returncode, r.stdout, r.stderr) == (2, "", f"duequeue: error: {message}\n")
    assert rows(db_path) == 1


def test_a_huge_body_through_a_real_process_is_refused_in_one_line(db_path: Path) -> None:
    r = run_cli(db_path, "add", *AT, "--webhook", HOOK, "--body", "x" * 120_000)
    assert (r.returncode, r.stderr) == (2, "duequeue: error: --body: larger than 65536 bytes\n")
    assert not db_path.exists()


@pytest.mark.parametrize("flag", ["--subject-like", "--target-like"])
def test_an_inspect_filter_that_is_not_utf8_is_refused_by_a_real_process(
    db_path: Path, flag: str
) -> None:
    assert run_cli(db_path, "add", *AT, "--webhook", HOOK).returncode == 0
    r = run_cli(db_path, "inspect", "--all", flag, b"%caf\xe9%")
    assert (r.returncode, r.stdout) == (2, "")
    assert r.stderr == f"duequeue: error: {flag}: not valid UTF-8 text\n"


@pytest.mark.parametrize("name", ["DUEQUEUE_DB", "DUEQUEUE_EMAIL_FROM", "DUEQUEUE_TZ"])
def test_a_setting_that_is_not_utf8_stops_add_in_one_line_and_writes_nothing(
    tmp_path: Path, name: str
) -> None:
    db = tmp_path / "q.db"
    value = str(tmp_path / "caf\udce9.db") if name == "DUEQUEUE_DB" else "caf\udce9"
    r = run_cli(db, "add", *AT, "--webhook", HOOK, env={name: value})  # sent as the byte \xe9
    assert (r.returncode, r.stdout) == (1, "")
    assert r.stderr == f"duequeue: error: {name}: not valid UTF-8 text\n"
    assert list(tmp_path.iterdir()) == []
