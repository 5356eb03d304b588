"""`duequeue import`: JSON Lines in, all or nothing, existing keys skipped."""

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from duequeue.cli.app import app
from tests.clirunner import Cli
from tests.stores import Db, created, reminder_count

T0 = datetime(2027, 1, 5, 8, 0, tzinfo=UTC)
HOOK = "https://hooks.example.com/r"


@pytest.fixture
def cli(db: Db) -> Cli:
    return Cli(db, T0)


def jsonl(path: Path, *items: Any) -> Path:
    path.write_text("".join((i if isinstance(i, str) else json.dumps(i)) + "\n" for i in items))
    return path


def test_import_adds_every_line_with_the_fields_of_add(cli: Cli, tmp_path: Path) -> None:
    f = jsonl(
        tmp_path / "r.jsonl",
        {
            "at": "2027-01-06T09:00",
            "tz": "Europe/Berlin",
            "rrule": "FREQ=WEEKLY;BYDAY=WE",
            "emails": ["ann@example.com"],
            "webhooks": [HOOK],
            "targets": [["notify", "json://127.0.0.1:9/standup"]],
            "subject": "standup",
            "body": "10 minutes",
            "data": {"room": 3},
            "key": "standup",
            "misfire_grace": "1h",
        },
        "",  # blank lines are skipped, but counted for line numbers
        {"at": "+1h", "cron": "0 9 * * 1-5", "webhooks": HOOK, "key": "cron"},
        {"at": "+2h", "emails": "bob@example.com"},
    )
    assert cli("init").code == 0
    r = cli("import", str(f))
    assert (r.code, r.out, r.err) == (0, "imported 3, skipped 0 existing keys\n", "")
    standup, weekdays, once = cli.inspect("--all")
    assert standup["rrule"] == "FREQ=WEEKLY;BYDAY=WE"
    assert standup["fire_at"] == "2027-01-06T08:00:00.000Z"
    *standup_targets, notify = standup["targets"]
    shown = ("channel", "address", "disabled_at")
    assert [{k: t[k] for k in shown} for t in standup_targets] == [
        {"channel": "email", "address": "ann@example.com", "disabled_at": None},
        {"channel": "webhook", "address": HOOK, "disabled_at": None},
    ]
    assert notify["channel"] == "notify"
    assert (standup["subject"], standup["key"]) == ("standup", "standup")
    assert (weekdays["cron"], weekdays["fire_at"]) == ("0 9 * * 1-5", "2027-01-05T09:00:00.000Z")
    assert (once["subject"], once["next_fire_at"]) == ("Reminder", "2027-01-05T10:00:00.000Z")


def test_a_line_with_the_old_field_names_is_read_with_one_note(cli: Cli, tmp_path: Path) -> None:
    f = jsonl(
        tmp_path / "r.jsonl",
        {"at": "+1h", "email": "ann@example.com", "webhook": [HOOK]},
        {"at": "+2h", "webhook": HOOK},
    )
    assert cli("init").code == 0
    r = cli("import", str(f))
    assert (r.code, r.out) == (0, "imported 2, skipped 0 existing keys\n")
    assert r.err.splitlines() == [
        "duequeue: note: field 'email' is read as 'emails', its name in Queue.add; "
        "rename it, the old name may go",
        "duequeue: note: field 'webhook' is read as 'webhooks', its name in Queue.add; "
        "rename it, the old name may go",
    ]
    first, second = cli.inspect("--all")
    assert [t["channel"] for t in first["targets"]] == ["email", "webhook"]
    assert [t["address"] for t in second["targets"]] == [HOOK]
    both = jsonl(tmp_path / "both.jsonl", {"at": "+1h", "webhook": HOOK, "webhooks": [HOOK]})
    r = cli("import", str(both))
    assert r.code == 2
    assert r.err == "duequeue: error: line 1: give 'webhooks' or 'webhook', not both\n"


def test_reimporting_a_file_skips_every_existing_key(cli: Cli, tmp_path: Path) -> None:
    items = [{"at": "+1h", "webhooks": [HOOK], "key": f"k{i}"} for i in range(5)]
    f = jsonl(tmp_path / "r.jsonl", *items)
    first = cli("import", str(f), "--json")
    assert first.json() == {"lines": 5, "imported": 5, "skipped": 0}
    again = cli("import", str(f), "--json")
    assert again.json() == {"lines": 5, "imported": 0, "skipped": 5}
    more = jsonl(tmp_path / "more.jsonl", *items, {"at": "+1h", "webhooks": [HOOK], "key": "k5"})
    assert cli("import", str(more)).out == "imported 1, skipped 5 existing keys\n"
    assert len(cli.inspect("--all")) == 6


def test_a_key_already_added_by_add_is_skipped(cli: Cli, tmp_path: Path) -> None:
    rid = cli.add("--at", "+1h", "--webhook", HOOK, "--key", "rent")
    f = jsonl(tmp_path / "r.jsonl", {"at": "+2h", "webhooks": [HOOK], "key": "rent"})
    assert cli("import", str(f), "--json").json()["skipped"] == 1
    assert cli.row(rid)["next_fire_at"] == "2027-01-05T09:00:00.000Z"


H = json.dumps(HOOK)


def with_hook(fields: str) -> str:
    """A line with a due time and a webhook, plus `fields` written as raw JSON text."""
    return '{"at": "+1h", "webhooks": %s, %s}' % (H, fields)  # noqa: UP031


BAD_LINES = [
    ("{not json", "line 3: not valid JSON"),
    ("[1, 2]", "line 3: expected a JSON object"),
    ('{"at": "+1h", "webhooks": [%s], "colour": "red"}' % H, "line 3: unknown field 'colour'"),  # noqa: UP031
    ('{"at": "+1h", "emails": ["nope"]}', "line 3: emails[0]: 'nope' is not a valid email address"),
    # a field under its old name is named as the line wrote it
    ('{"at": "+1h", "email": ["a@b.c", "nope"]}', "line 3: email[1]: 'nope' is not a valid"),
    ('{"at": "+1h"}', "line 3: emails/webhooks/notify/targets: give at least one target"),
    ('{"at": "+1h", "targets": [["sms", "+4930"]]}', "line 3: targets[0]: unknown channel 'sms'"),
    ('{"at": "+1h", "targets": [["webhook"]]}', "line 3: targets[0]: expected a (channel, addr"),
    ('{"at": "+1h", "targets": "email:a@b.c"}', "line 3: targets: expected a list of [channel,"),
    ('{"webhooks": [%s]}' % H, "line 3: at: required"),  # noqa: UP031
    ('{"at": "+1h", "webhooks": [%s], "tz": "Mars/Base"}' % H, "line 3: tz: unknown"),  # noqa: UP031
    ('{"at": "+1h", "webhooks": [%s], "subject": 5}' % H, "line 3: subject: expected a string"),  # noqa: UP031
    ('{"at": "+1h", "webhooks": %s, "misfire_grace": "x"}' % H, "line 3: misfire_grace:"),  # noqa: UP031
    ('{"at": "+1h", "webhooks": [1]}', "line 3: webhooks: expected a string or a list"),
    # what Python's json reads but no receiver could take, or cannot be stored as text
    (with_hook('"data": 1e400'), "line 3: data: a number is too large"),
    (with_hook('"data": [-1e999]'), "line 3: data: a number is too large"),
    (with_hook('"data": [NaN]'), "line 3: not valid JSON (NaN is not a JSON value)"),
    ('{"at": Infinity}', "line 3: not valid JSON (Infinity is not a JSON value)"),
    (with_hook('"data": {"x": "\\ud800"}'), "line 3: data: a string holds a lone surrogate"),
    (with_hook('"subject": "\\ud800"'), "line 3: subject: not valid UTF-8"),
    (with_hook('"body": "a\\udfffb"'), "line 3: body: not valid UTF-8"),
    (with_hook('"key": "\\udcff"'), "line 3: key: not valid UTF-8"),
    (with_hook('"data": ' + "[" * 65 + "]" * 65), "line 3: data: nested too deeply"),
    ("[" * 5000 + "]" * 5000, "line 3: nested too deeply"),
]


@pytest.mark.parametrize(("line", "message"), BAD_LINES)
def test_a_bad_line_is_reported_by_number_and_nothing_is_written(
    cli: Cli, db: Db, tmp_path: Path, line: str, message: str
) -> None:
    good = {"at": "+1h", "webhooks": [HOOK]}
    f = jsonl(tmp_path / "r.jsonl", good, good, line, good)
    r = cli("import", str(f))
    assert r.code == 2
    assert r.out == ""
    assert r.err.startswith(f"duequeue: error: {message}")
    assert r.err.count("\n") == 1
    assert reminder_count(db) == 0
    assert not created(db)  # validated before the database is even opened


def test_a_bad_line_leaves_an_existing_database_unchanged(cli: Cli, db: Db, tmp_path: Path) -> None:
    cli.add("--at", "+1h", "--webhook", HOOK)
    f = jsonl(tmp_path / "r.jsonl", {"at": "+1h", "webhooks": [HOOK]}, {"at": "soon"})
    assert cli("import", str(f)).code == 2
    assert reminder_count(db) == 1


def test_a_bad_line_late_in_a_large_file_writes_nothing(cli: Cli, tmp_path: Path) -> None:
    # Far more lines than one chunk of the spool or of the insert: nothing is kept of them.
    kept = cli.add("--at", "+1h", "--webhook", HOOK, "--key", "kept")
    good = [{"at": "+1h", "webhooks": [HOOK], "key": f"k{i}"} for i in range(49_999)]
    f = jsonl(tmp_path / "big.jsonl", *good, {"at": "soon", "webhooks": [HOOK]})
    r = cli("import", str(f))
    assert (r.code, r.out) == (2, "")
    assert r.err.startswith("duequeue: error: line 50000: at:")
    assert [row["id"] for row in cli.inspect("--all")] == [kept]


def test_a_large_file_is_imported_whole_and_a_key_repeated_chunks_later_is_skipped(
    cli: Cli, tmp_path: Path
) -> None:
    items = [{"at": "+1h", "webhooks": [HOOK], "key": f"k{i}"} for i in range(25_000)]
    f = jsonl(tmp_path / "big.jsonl", *items, items[0])
    r = cli("import", str(f), "--json")
    assert r.json() == {"lines": 25_001, "imported": 25_000, "skipped": 1}
    assert cli("stats", "--json").json()["reminders"]["pending"] == 25_000


def test_import_reads_stdin(cli: Cli, db: Db) -> None:
    lines = "".join(json.dumps({"at": "+1h", "webhooks": [HOOK], "key": k}) + "\n" for k in "ab")
    r = cli.runner.invoke(app, ["import", "-", "--json"], input=lines, env=cli.env)
    assert (r.exit_code, json.loads(r.stdout)) == (0, {"lines": 2, "imported": 2, "skipped": 0})
    assert reminder_count(db) == 2


def test_a_missing_file_exits_2(cli: Cli, tmp_path: Path) -> None:
    r = cli("import", str(tmp_path / "nope.jsonl"))
    assert r.code == 2
    assert r.err.startswith("duequeue: error: FILE: cannot read")


def test_an_empty_file_imports_nothing(cli: Cli, tmp_path: Path) -> None:
    f = tmp_path / "empty.jsonl"
    f.write_text("\n\n")
    assert cli("import", str(f), "--json").json() == {"lines": 0, "imported": 0, "skipped": 0}


def test_a_line_that_is_not_utf8_is_reported(cli: Cli, db: Db, tmp_path: Path) -> None:
    f = tmp_path / "latin1.jsonl"
    f.write_bytes(b'{"at": "+1h", "webhooks": ["' + HOOK.encode() + b'"], "subject": "caf\xe9"}\n')
    r = cli("import", str(f))
    assert (r.code, r.err) == (2, "duequeue: error: line 1: not UTF-8 text\n")
    assert reminder_count(db) == 0


def test_a_line_whose_live_key_has_other_content_is_a_conflict_and_nothing_is_imported(
    cli: Cli, tmp_path: Path
) -> None:
    """Issue 33, item 6. Before: `imported 1, skipped 2 existing keys`, exit 0, though the
    line for 'rent' asked for another subject and `add` would have refused it."""
    rent = cli.add("--at", "2027-01-06T09:00:00Z", "--webhook", HOOK, "--key", "rent")
    gym = cli.add("--at", "2027-01-07T09:00:00Z", "--webhook", HOOK, "--key", "gym")
    f = jsonl(
        tmp_path / "r.jsonl",
        {"at": "2027-01-06T09:00:00Z", "webhooks": [HOOK], "key": "rent", "subject": "Rent!"},
        "",
        {"at": "2027-01-07T09:00:00Z", "webhooks": [HOOK], "key": "gym"},  # the same: skipped
        {"at": "+1h", "webhooks": [HOOK], "key": "new"},
        {"at": "2027-01-08T09:00:00Z", "emails": ["a@example.com"], "key": "gym"},
    )
    r = cli("import", str(f))
    assert (r.code, r.out) == (1, "")
    assert r.err == (
        "duequeue: error: 2 lines name a live key with other content, so nothing was "
        f"imported: line 1: key 'rent' is reminder {rent}'s, which differs (subject); line 5: "
        f"key 'gym' is reminder {gym}'s, which differs (time, targets) (`duequeue edit` / "
        "`reschedule` change a reminder, `cancel` frees its key)\n"
    )
    assert [row["key"] for row in cli.inspect("--all")] == ["rent", "gym"]  # 'new' is not in


def test_a_key_repeated_in_one_file_with_other_content_is_a_conflict_too(
    cli: Cli, tmp_path: Path
) -> None:
    f = jsonl(
        tmp_path / "r.jsonl",
        {"at": "+1h", "webhooks": [HOOK], "key": "a", "body": "one"},
        {"at": "+1h", "webhooks": [HOOK], "key": "a", "body": "one"},  # a repeat: skipped
        {"at": "+1h", "webhooks": [HOOK], "key": "a", "body": "two"},
    )
    r = cli("import", str(f), "--json")
    assert r.code == 1
    assert "1 line names a live key with other content" in r.err
    assert "line 3: key 'a' is reminder 1's, which differs (body)" in r.err
    assert cli.inspect("--all") == []
    f.write_text(f.read_text().splitlines(keepends=True)[0] * 2)
    assert cli("import", str(f), "--json").json() == {"lines": 2, "imported": 1, "skipped": 1}


def test_many_conflicts_are_counted_and_the_first_ten_named(cli: Cli, tmp_path: Path) -> None:
    items = [{"at": "2027-02-01T09:00:00Z", "webhooks": [HOOK], "key": f"k{i}"} for i in range(12)]
    assert cli("import", str(jsonl(tmp_path / "a.jsonl", *items))).code == 0
    changed = [{**item, "subject": "other"} for item in items]
    r = cli("import", str(jsonl(tmp_path / "b.jsonl", *changed)))
    assert r.code == 1
    assert r.err.startswith("duequeue: error: 12 lines name a live key with other content")
    assert "line 10: key 'k9'" in r.err and "line 11:" not in r.err
    assert "; and 2 more (`duequeue edit`" in r.err


def test_a_time_from_now_is_not_compared_on_import_as_on_add(cli: Cli, tmp_path: Path) -> None:
    f = jsonl(tmp_path / "r.jsonl", {"at": "in 2 hours", "webhooks": [HOOK], "key": "soon"})
    assert cli("import", str(f), "--json").json()["imported"] == 1
    cli.advance(minutes=5)
    assert cli("import", str(f), "--json").json()["skipped"] == 1
