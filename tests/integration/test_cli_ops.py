"""The operator's commands through the CLI, against real loopback servers where they talk to one."""

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.clirunner import SECRET, Cli
from tests.servers import HttpSink, Reply, SmtpSink, free_port
from tests.stores import Db

T0 = datetime(2027, 1, 5, 8, 0, tzinfo=UTC)
HOOK = "https://hooks.example.com/r"


@pytest.fixture
def cli(db: Db) -> Cli:
    return Cli(db, T0, {"DUEQUEUE_CHANNEL_TIMEOUT": "2"})


def dead_hook(cli: Cli, http: HttpSink, path: str = "/gone", status: int = 410, **kw: str) -> int:
    """Add a one-shot whose webhook answers 410 (or `status`), and tick it dead."""
    http.respond(path, Reply(status))
    rid = cli.add("--at", "now", "--webhook", http.url(path), *[a for kv in kw.items() for a in kv])
    assert cli.tick()["dead"] == 1
    return rid


# -- inspect filters ------------------------------------------------------------------------


def test_inspect_filters_by_subject_and_target_patterns(cli: Cli) -> None:
    rent = cli.add("--at", "+1h", "--webhook", HOOK, "--subject", "Pay RENT")
    mail = cli.add("--at", "+1h", "--email", "ann@example.com", "--subject", "dentist")

    def ids(*args: str) -> list[int]:
        r = cli("inspect", "--all", "--json", *args)
        assert r.code == 0, r.err
        return [row["id"] for row in r.json()]

    assert ids("--subject-like", "%rent%") == [rent]
    assert ids("--subject-like", "rent") == []  # a LIKE pattern, not a substring
    assert ids("--target-like", "%@example.com") == [mail]
    assert ids("--target-like", "https://hooks.%") == [rent]
    assert ids("--subject-like", "%", "--limit", "1") == [rent]
    table = cli("inspect", "--pending", "--subject-like", "dent%").out
    assert "dentist" in table
    assert "Pay RENT" not in table


# -- history --------------------------------------------------------------------------------


def test_history_lists_every_attempt_and_the_dead_letter(cli: Cli, http: HttpSink) -> None:
    http.respond("/flaky", Reply(503), Reply(503), Reply(503))
    rid = cli.add("--at", "now", "--webhook", http.url("/flaky"), "--email", "a@example.com")
    for minutes in (0, 1, 5):
        cli.advance(minutes=minutes)
        cli.tick()
    r = cli("history", str(rid), "--json")
    assert r.code == 0, r.err
    h = r.json()
    assert set(h) == {
        "reminder",
        "attempts",
        "dead_letters",
        "target_retries",
        "changes",
        "moved_fires",
    }
    assert h["changes"] == []
    assert h["reminder"]["id"] == rid
    assert h["reminder"]["state"] == "dead"
    hook = [a for a in h["attempts"] if a["target"]["channel"] == "webhook"]
    assert [(a["attempt"], a["outcome"], a["error"]) for a in hook] == [
        (1, "failed", "HTTP 503"),
        (2, "failed", "HTTP 503"),
        (3, "failed", "HTTP 503"),
    ]
    assert hook[0] == {
        "at": "2027-01-05T08:00:00.000Z",
        "fire_at": "2027-01-05T08:00:00.000Z",
        "target": {
            "id": next(t["id"] for t in h["reminder"]["targets"] if t["channel"] == "webhook"),
            "channel": "webhook",
            "address": http.url("/flaky"),
            "disabled_at": None,
            "has_secret": False,
        },
        "outcome": "failed",
        "error": "HTTP 503",
        "attempt": 1,
    }
    assert [a["at"] for a in hook] == [
        "2027-01-05T08:00:00.000Z",
        "2027-01-05T08:01:00.000Z",
        "2027-01-05T08:06:00.000Z",
    ]
    assert len(h["attempts"]) == 6  # the email failed too: no SMTP configured
    (dead,) = h["dead_letters"]
    assert dead == {
        "fire_at": "2027-01-05T08:00:00.000Z",
        "dead_at": "2027-01-05T08:06:00.000Z",
        "error_count": 3,
        "last_error": dead["last_error"],
        "retried_at": None,
    }
    assert "HTTP 503" in dead["last_error"]
    text = cli("history", str(rid)).out
    assert "attempts" in text
    assert "dead letters" in text
    assert http.url("/flaky") in text


def test_history_of_a_fresh_reminder_says_so(cli: Cli) -> None:
    rid = cli.add("--at", "+1h", "--webhook", HOOK)
    assert "no delivery attempts yet" in cli("history", str(rid)).out
    h = cli("history", str(rid), "--json").json()
    assert (h["attempts"], h["dead_letters"]) == ([], [])


def test_history_of_an_unknown_id_exits_2_with_one_line(cli: Cli) -> None:
    cli.add("--at", "+1h", "--email", "ann@example.com")  # the database exists; id 42 does not
    r = cli("history", "42")
    assert (r.code, r.out, r.err) == (2, "", "duequeue: error: ID: no reminder with id 42\n")


# -- cancel ---------------------------------------------------------------------------------


def test_cancel_stops_delivery_and_only_inspect_all_shows_it(cli: Cli, http: HttpSink) -> None:
    rid = cli.add("--at", "+1m", "--rrule", "FREQ=MINUTELY", "--webhook", http.url("/c"))
    keep = cli.add("--at", "+1m", "--webhook", http.url("/k"))
    r = cli("cancel", str(rid))
    assert (r.code, r.out) == (0, f"cancelled {rid}\ncancelled 1, skipped 0\n")
    assert [row["id"] for row in cli.inspect("--pending")] == [keep]
    cli.advance(minutes=5)
    assert cli.tick()["claimed"] == 1
    assert http.requests_for("/c") == []
    assert len(http.requests_for("/k")) == 1
    assert cli.row(rid)["state"] == "cancelled"
    again = cli("cancel", str(rid), str(keep), "--json")
    assert again.json() == {
        "cancelled": [],
        "skipped": [
            {"id": rid, "reason": "already cancelled"},
            {"id": keep, "reason": "already finished (done)"},
        ],
    }


def test_cancel_hides_a_dead_letter(cli: Cli, http: HttpSink) -> None:
    rid = dead_hook(cli, http)
    assert cli("cancel", str(rid)).code == 0
    assert cli.inspect("--dead") == []


def test_cancel_of_an_unknown_id_cancels_nothing(cli: Cli) -> None:
    rid = cli.add("--at", "+1h", "--webhook", HOOK)
    r = cli("cancel", str(rid), "77")
    assert (r.code, r.err) == (2, "duequeue: error: ID: no reminder with id 77\n")
    assert cli.row(rid)["state"] == "pending"
    assert cli("cancel").code == 2


# -- retry (argument errors; the delivery path is in test_retry_e2e.py) -----------------------


def test_retry_needs_ids_or_all_dead_but_not_both(cli: Cli) -> None:
    for args in ([], ["1", "--all-dead"]):
        r = cli("retry", *args)
        assert r.code == 2
        assert r.err == (
            "duequeue: error: ID/--all-dead: give reminder ids or ask for all dead ones, "
            "not both or neither\n"
        )
    cli.add("--at", "+1h", "--email", "ann@example.com")
    r = cli("retry", "5")
    assert (r.code, r.err) == (2, "duequeue: error: ID: no reminder with id 5\n")


def test_retry_all_dead_with_nothing_dead_says_so_and_exits_0(cli: Cli) -> None:
    cli.add("--at", "+1h", "--webhook", HOOK)
    r = cli("retry", "--all-dead")
    # Before: only `retried 0, skipped 0`.
    assert (r.code, r.out, r.err) == (
        0,
        "nothing to retry: no dead fire awaits retry\nretried 0, skipped 0\n",
        "",
    )
    assert cli("retry", "--all-dead", "--json").json() == {"retried": [], "skipped": []}


def test_retry_json_reports_retried_and_skipped(cli: Cli, http: HttpSink) -> None:
    rid = dead_hook(cli, http, "/missing", status=404)
    fine = cli.add("--at", "+1h", "--webhook", HOOK)
    cli.advance(minutes=10)
    r = cli("retry", str(rid), str(fine), "--json")
    assert r.json() == {
        "retried": [{"id": rid, "fire_at": "2027-01-05T08:00:00.000Z"}],
        "skipped": [{"id": fine, "reason": "no dead fire to retry"}],
    }


def test_retry_of_a_fire_whose_only_missing_target_is_disabled_retries_nothing_and_says_why(
    cli: Cli, http: HttpSink
) -> None:
    http.respond("/ok", Reply(200))
    http.respond("/gone", Reply(410))
    rid = cli.add("--at", "now", "--webhook", http.url("/ok"), "--webhook", http.url("/gone"))
    cli.tick()  # /ok gets it; /gone answers 410: disabled, a per-target dead letter
    assert cli("inspect", "--dead", "--json").json()[0]["id"] == rid
    r = cli("retry", str(rid))
    assert (r.code, r.out) == (
        0,
        f"skipped {rid}: every target that lacks this fire is disabled (410 Gone); "
        f"`duequeue enable {rid}` first\nretried 0, skipped 1\n",
    )
    assert cli.tick()["claimed"] == 0  # nothing re-armed, nothing to dead-letter again
    assert cli("enable", str(rid)).code == 0
    http.respond("/gone", Reply(200))
    cli.advance(minutes=1)  # the retry after the 410, as an operator's would be
    assert cli("retry", str(rid)).out.startswith(f"retried {rid} ")
    summary = cli.tick()
    assert len(http.requests_for("/ok")) == 1, summary  # never sent twice
    assert len(http.requests_for("/gone")) == 2, summary  # the 410, then the retried fire


# -- stats ----------------------------------------------------------------------------------


def test_stats_json_counts_states_due_rows_and_recent_deliveries(cli: Cli, http: HttpSink) -> None:
    dead_hook(cli, http)
    cli.add("--at", "now", "--webhook", http.url("/ok"))
    assert cli.tick()["sent"] == 1
    cli.add("--at", "+1m", "--webhook", HOOK)
    gone = cli.add("--at", "+1h", "--webhook", HOOK)
    cli("cancel", str(gone))
    cli.advance(minutes=3)
    r = cli("stats", "--json")
    assert r.code == 0, r.err
    assert r.json() == {
        "at": "2027-01-05T08:03:00.000Z",
        "reminders": {"pending": 1, "done": 1, "dead": 1, "cancelled": 1, "paused": 0},
        "queue_paused_since": None,
        "due": 1,
        "retrying": 0,
        "leased": 0,
        "dead_letters": 1,
        "dead_reminders": 1,
        "retrying_targets": 0,
        "disabled_targets": 1,  # the dead one-shot's webhook answered 410 Gone
        "oldest_due_at": "2027-01-05T08:01:00.000Z",
        "oldest_due_lateness_s": 120.0,
        "moved_fires": 0,
        "deliveries": {
            "last_hour": {"sent": 1, "failed": 1},
            "last_day": {"sent": 1, "failed": 1},
        },
        "last_successful_tick": "2027-01-05T08:00:00.000Z",
        "hosts": [],  # ticks by the host's clock (conftest) note no host
    }
    # A tick that fails (its settings invalid, as an unreadable config file would) leaves no
    # mark, so the time of the last good one ages and an alert on it fires.
    assert cli("tick", env={"DUEQUEUE_BACKOFF": "1m,often"}).code == 1
    assert cli("stats", "--json").json()["last_successful_tick"] == "2027-01-05T08:00:00.000Z"
    cli.advance(hours=2)
    later = cli("stats", "--json").json()["deliveries"]
    assert later == {"last_hour": {"sent": 0, "failed": 0}, "last_day": {"sent": 1, "failed": 1}}
    text = cli("stats").out
    assert "1 pending, 1 done, 1 dead, 1 cancelled" in text
    assert "dead letters awaiting retry: 1" in text
    assert "last successful tick: 2027-01-05T08:00:00.000Z (7380s ago)" in text


def test_stats_writes_a_prometheus_textfile_a_real_parser_reads(
    cli: Cli, http: HttpSink, tmp_path: Path
) -> None:
    dead_hook(cli, http)
    cli.add("--at", "+1m", "--webhook", HOOK)
    cli.advance(minutes=2)
    prom = tmp_path / "duequeue.prom"
    prom.write_text("stale\n")
    r = cli("stats", "--prometheus", str(prom))
    assert (r.code, r.out) == (0, "")  # quiet for cron
    text = prom.read_text()
    families = {f.name: f for f in text_string_to_metric_families(text)}
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for f in families.values()
        for s in f.samples
    }
    assert all(name.startswith("duequeue_") for name in families)
    assert all(f.type == "gauge" and f.documentation for f in families.values())
    assert samples[("duequeue_reminders", (("state", "pending"),))] == 1
    assert samples[("duequeue_reminders", (("state", "dead"),))] == 1
    assert samples[("duequeue_due_reminders", ())] == 1
    assert samples[("duequeue_dead_letters", ())] == 1
    assert samples[("duequeue_oldest_due_lateness_seconds", ())] == 60
    assert samples[("duequeue_deliveries_last_hour", (("outcome", "failed"),))] == 1
    assert samples[("duequeue_deliveries_last_day", (("outcome", "sent"),))] == 0
    assert samples[("duequeue_stats_timestamp_seconds", ())] == T0.timestamp() + 120
    assert samples[("duequeue_last_successful_tick_timestamp_seconds", ())] == T0.timestamp()
    assert text.count("# HELP ") == text.count("# TYPE ") == len(families)
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temp left
    both = cli("stats", "--prometheus", str(prom), "--json")
    assert both.json()["due"] == 1


def test_stats_prometheus_dash_writes_stdout_and_no_file(
    cli: Cli, http: HttpSink, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dead_hook(cli, http)
    monkeypatch.chdir(tmp_path)
    r = cli("stats", "--prometheus", "-")
    assert (r.code, r.err) == (0, "")
    families = {f.name: f for f in text_string_to_metric_families(r.out)}
    assert [s.value for s in families["duequeue_dead_letters"].samples] == [1]
    assert r.out.endswith("\n") and not r.out.endswith("\n\n")
    assert not (tmp_path / "-").exists()  # before: a file named `-`
    both = cli("stats", "--prometheus", "-", "--json")
    assert (both.code, both.out) == (2, "")
    assert both.err == (
        "duequeue: error: --prometheus: - writes to stdout, as --json does: choose one\n"
    )


def test_stats_says_no_tick_ever_succeeded_on_a_new_database(cli: Cli, tmp_path: Path) -> None:
    assert cli("init").code == 0
    assert cli("stats", "--json").json()["last_successful_tick"] is None
    assert "last successful tick: never" in cli("stats").out
    prom = tmp_path / "duequeue.prom"
    assert cli("stats", "--prometheus", str(prom)).code == 0
    assert "\nduequeue_last_successful_tick_timestamp_seconds 0\n" in prom.read_text()


def test_stats_prometheus_into_a_missing_directory_exits_2(cli: Cli, tmp_path: Path) -> None:
    cli.add("--at", "+1h", "--email", "ann@example.com")
    r = cli("stats", "--prometheus", str(tmp_path / "nope" / "dq.prom"))
    assert r.code == 2
    assert r.err.startswith("duequeue: error: --prometheus: directory")


# -- prune ----------------------------------------------------------------------------------


def test_prune_drops_old_finished_rows_and_keeps_pending_and_dead(cli: Cli, http: HttpSink) -> None:
    dead = dead_hook(cli, http)
    done = cli.add("--at", "now", "--webhook", http.url("/ok"))
    daily = cli.add("--at", "now", "--rrule", "FREQ=DAILY", "--webhook", http.url("/d"))
    cli.tick()
    gone = cli.add("--at", "+1h", "--webhook", HOOK)
    cli("cancel", str(gone))
    cli.advance(days=31)
    r = cli("prune", "--older-than", "30d", "--dry-run", "--json")
    # Ledger: the done row's send and the daily row's first (finished) fire; the dead fire's
    # attempt stays, as it would stop a retry from re-sending what went out.
    expected = {"deliveries": 2, "done": 1, "cancelled": 1, "dead_letters": 0}
    assert r.json() == {"dry_run": True, "before": "2027-01-06T08:00:00.000Z", **expected}
    assert len(cli.inspect("--all")) == 4
    r = cli("prune", "--older-than", "30d")
    assert r.out == (
        "pruned: 2 ledger rows, 1 done reminders, 1 cancelled reminders, 0 dead letters\n"
    )
    assert [row["id"] for row in cli.inspect("--all")] == [dead, daily]
    assert [row["id"] for row in cli.inspect("--dead")] == [dead]
    assert len(cli("history", str(dead), "--json").json()["attempts"]) == 1
    assert done not in [row["id"] for row in cli.inspect("--all")]


def test_prune_needs_a_valid_age(cli: Cli) -> None:
    r = cli("prune", "--older-than", "a month")
    assert r.code == 2
    assert r.err.startswith("duequeue: error: --older-than: invalid duration")
    assert cli("prune").code == 2


# -- config ---------------------------------------------------------------------------------


def test_config_prints_effective_settings_with_secrets_masked(cli: Cli, tmp_path: Path) -> None:
    conf = tmp_path / "dq.toml"
    conf.write_text('tick_limit = 7\nsmtp_url = "smtp://me:s3cret-pw@mail.example.com:2525"\n')
    env = {"DUEQUEUE_CONFIG": str(conf), "DUEQUEUE_WEBHOOK_SECRET": SECRET}
    r = cli("config", "--json", env=env)
    values = r.json()
    assert values["tick_limit"] == 7
    assert values["smtp_url"] == "smtp://me:****@mail.example.com:2525"
    assert values["webhook_secret"] == "whsec_****"
    assert values["db"] == cli.env["DUEQUEUE_DB"]
    text = cli("config", env=env).out
    assert "tick_limit = 7" in text
    assert "s3cret" not in text + r.out
    assert SECRET not in text + r.out


# -- doctor ---------------------------------------------------------------------------------


@pytest.mark.sqlite_only  # it checks the SQLite journal mode
def test_doctor_passes_against_a_real_smtp_server_and_sends_nothing(cli: Cli) -> None:
    cli.add("--at", "+1h", "--webhook", HOOK)  # the database exists
    with SmtpSink() as smtp:
        env = {
            "DUEQUEUE_SMTP_URL": smtp.url,
            "DUEQUEUE_EMAIL_FROM": "r@example.com",
            "DUEQUEUE_WEBHOOK_SECRET": SECRET,
        }
        r = cli("doctor", "--json", env=env)
        assert smtp.connections == 1
        text = cli("doctor", env=env).out
        assert smtp.data_attempts == 0
        assert smtp.messages == []
    report = r.json()
    assert r.code == 0, r.out
    assert report["ok"] is True
    names = [c["name"] for c in report["checks"]]
    for name in ("database", "database schema", "database integrity", "database journal"):
        assert name in names
    for name in ("smtp", "webhook secret", "zone data"):
        assert name in names
    assert all(set(c) == {"name", "ok", "warning", "detail", "fix"} for c in report["checks"])
    assert not any(c["warning"] for c in report["checks"])  # it holds a reminder
    assert text.endswith("all checks passed\n")


def test_doctor_reports_a_closed_smtp_port_with_a_fix_and_exits_1(cli: Cli) -> None:
    cli.add("--at", "+1h", "--webhook", HOOK)
    env = {"DUEQUEUE_SMTP_URL": f"smtp://127.0.0.1:{free_port()}"}
    r = cli("doctor", env=env)
    assert r.code == 1
    assert "PROBLEM  smtp: connection refused (127.0.0.1:" in r.out
    assert "PROBLEM  email from: DUEQUEUE_EMAIL_FROM not set" in r.out
    assert "fix: start the SMTP server or correct DUEQUEUE_SMTP_URL" in r.out
    assert r.out.endswith("some checks found problems\n")


@pytest.mark.sqlite_only  # a missing file; PostgreSQL has no such thing
def test_doctor_reports_a_missing_database_without_creating_it(cli: Cli, db_path: Path) -> None:
    r = cli("doctor", "--json")
    assert r.code == 1
    (db,) = [c for c in r.json()["checks"] if c["name"] == "database"]
    assert (db["ok"], db["detail"]) == (False, f"{db_path} does not exist")
    assert not db_path.exists()


def test_doctor_reports_a_foreign_file_as_the_database(cli: Cli, tmp_path: Path) -> None:
    junk = tmp_path / "notes.txt"
    junk.write_text("not a database\n" * 100)
    r = Cli(junk, T0)("doctor", "--json")
    assert r.code == 1
    (db,) = [c for c in r.json()["checks"] if c["name"] == "database"]
    assert "not an SQLite database" in db["detail"]
    assert db["fix"]


def test_doctor_reports_a_bad_webhook_secret(cli: Cli) -> None:
    r = cli("doctor", "--json", env={"DUEQUEUE_WEBHOOK_SECRET": "hunter2"})
    assert r.code == 1
    failed = [c for c in r.json()["checks"] if not c["ok"]]
    assert [c["name"] for c in failed] == ["webhook secret"]
    assert "whsec_" in failed[0]["detail"]
    assert failed[0]["fix"]


def test_doctor_reports_a_short_webhook_key(cli: Cli) -> None:
    cli.add("--at", "+1h", "--webhook", HOOK)
    r = cli("doctor", "--json", env={"DUEQUEUE_WEBHOOK_SECRET": "whsec_c2hvcnQ="})
    (secret,) = [c for c in r.json()["checks"] if c["name"] == "webhook secret"]
    assert (r.code, secret["ok"]) == (1, False)
    assert "the key is only 5 bytes; Standard Webhooks requires at least 24" in secret["detail"]


def test_doctor_reports_an_unknown_default_zone(cli: Cli) -> None:
    cli.add("--at", "+1h", "--webhook", HOOK)
    r = cli("doctor", "--json", env={"DUEQUEUE_TZ": "Mars/Olympus"})
    (zones,) = [c for c in r.json()["checks"] if c["name"] == "zone data"]
    assert (r.code, zones["ok"]) == (1, False)
    assert "Mars/Olympus" in zones["detail"]
    assert "tzdata" in zones["fix"]


def test_json_outputs_are_single_documents(cli: Cli) -> None:
    cli.add("--at", "+1h", "--webhook", HOOK)
    for args in (["stats", "--json"], ["config", "--json"], ["cancel", "1", "--json"]):
        json.loads(cli(*args).out)


def test_doctor_logs_in_as_a_delivery_would_and_reports_a_wrong_password(cli: Cli) -> None:
    cli.add("--at", "+1h", "--webhook", HOOK)
    with SmtpSink(credentials=("mailer", "right-password")) as smtp:
        base = {"DUEQUEUE_EMAIL_FROM": "r@example.com"}
        good = f"smtp://mailer:right-password@127.0.0.1:{smtp.port}"
        bad = f"smtp://mailer:wrong-password@127.0.0.1:{smtp.port}"
        # doctor compares this host's clock with a PostgreSQL server's: not a frozen one.
        cli.now = datetime.now(UTC).replace(microsecond=0)
        ok = cli("doctor", "--json", env={**base, "DUEQUEUE_SMTP_URL": good})
        refused = cli("doctor", "--json", env={**base, "DUEQUEUE_SMTP_URL": bad})
        assert smtp.logins == ["mailer"]
        assert smtp.messages == []
    assert ok.code == 0, ok.out
    assert refused.code == 1
    (check,) = [c for c in refused.json()["checks"] if c["name"] == "smtp"]
    assert check["detail"].startswith("login refused for user mailer (127.0.0.1:")
    assert "wrong-password" not in refused.out


def test_help_lists_the_operator_commands(cli: Cli) -> None:
    out = cli("--help").out
    for command in ("import", "history", "retry", "cancel", "stats", "prune", "doctor"):
        assert command in out
    for command in ("worker", "config"):
        assert command in out


@pytest.mark.sqlite_only  # it scribbles over the SQLite file
def test_doctor_reports_a_damaged_database(cli: Cli, db_path: Path, tmp_path: Path) -> None:
    import apsw

    lines = [json.dumps({"at": "+1h", "webhooks": [HOOK], "body": "x" * 500}) for _ in range(300)]
    f = tmp_path / "many.jsonl"
    f.write_text("\n".join(lines) + "\n")
    assert cli("import", str(f)).code == 0
    conn = apsw.Connection(str(db_path))
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    page_size = conn.execute("PRAGMA page_size").fetchall()[0][0]
    # A leaf page of the reminders table (not a page number: the indexes before it vary).
    leaf = conn.execute(
        "SELECT pageno FROM dbstat WHERE name = 'reminders' AND pagetype = 'leaf' LIMIT 1 OFFSET 5"
    ).fetchall()[0][0]
    conn.close()
    with db_path.open("r+b") as raw:  # scribble over a page in the middle of the reminders
        raw.seek(page_size * (leaf - 1) + 100)
        raw.write(b"\xff" * 2000)
    r = cli("doctor", "--json")
    assert r.code == 1
    failed = {c["name"]: c for c in r.json()["checks"] if not c["ok"]}
    assert "database integrity" in failed
    assert ".recover" in failed["database integrity"]["fix"]
