"""`duequeue serve`'s HTTP API as a client uses it: a real server process on loopback, a real
HTTP client (aiohttp's), on SQLite and PostgreSQL. Adds, reads, the actions with the CLI's
results, errors as problem+json naming the field, the token, the loopback-only default,
--read-only, SIGTERM."""

import html
import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.procs import reap, run_cli
from tests.servers import HttpSink, Reply
from tests.stores import Db
from tests.webserver import Served

TOKEN = "t0ken-for-tests-0123456789"
JSON = {"Content-Type": "application/json"}


@pytest.fixture(autouse=True)
def _reaped() -> Iterator[None]:
    yield
    reap()


def _db(db: Db) -> Path:
    return Path(str(db))


def test_add_then_read_it_back_over_http(db: Db) -> None:
    with Served(db) as s:
        body = {"at": "2030-01-07T09:00", "tz": "Europe/Paris", "rrule": "FREQ=DAILY",
                "webhooks": ["https://hooks.example.com/r"], "subject": "Standup",
                "data": {"room": 4}}  # fmt: skip
        added = s.fetch("POST", "/api/v1/reminders", json_body=body,
                        headers={"Idempotency-Key": "standup-1"})  # fmt: skip
        assert added.status == 201, added.text
        rid = added.json()["id"]
        assert added.headers["Location"] == f"/api/v1/reminders/{rid}"
        again = s.fetch("POST", "/api/v1/reminders", json_body=body,
                        headers={"Idempotency-Key": "standup-1"})  # fmt: skip
        assert again.status == 200
        assert again.json()["id"] == rid and again.json()["created"] is False

        one = s.fetch("GET", f"/api/v1/reminders/{rid}").json()
        assert one["key"] == "standup-1" and one["rrule"] == "FREQ=DAILY"
        assert [f["utc"] for f in one["next_fires"]][:2] == [
            "2030-01-07T08:00:00.000Z", "2030-01-08T08:00:00.000Z"]  # fmt: skip
        assert one["next_fires"][0]["local"] == "2030-01-07T09:00:00+01:00"
        listed = s.fetch("GET", "/api/v1/reminders?state=pending&search=STAND").json()
        assert [r["id"] for r in listed["reminders"]] == [rid]
        assert listed["next_before"] is None
        history = s.fetch("GET", f"/api/v1/reminders/{rid}/history").json()
        assert history["attempts"] == [] and history["dead_letters"] == []
        stats = s.fetch("GET", "/api/v1/stats").json()
        assert stats["reminders"]["pending"] == 1
        metrics = s.fetch("GET", "/metrics")
        assert metrics.status == 200 and "duequeue_reminders" in metrics.text
        assert s.stop() == 0  # SIGTERM: a clean stop


def test_the_key_field_and_the_header_must_agree(db: Db) -> None:
    with Served(db) as s:
        r = s.fetch("POST", "/api/v1/reminders", json_body={"at": "+1h", "key": "a",
                    "emails": ["a@example.com"]}, headers={"Idempotency-Key": "b"})  # fmt: skip
        assert r.status == 400 and r.json()["field"] == "key"


BAD = [
    ({"at": "next tuesday-ish", "emails": ["a@example.com"]}, "at"),
    ({"at": "+1h", "emails": "a@example.com"}, "emails"),
    ({"at": "+1h", "emails": [7]}, "emails[0]"),
    ({"at": "+1h", "webhooks": ["ftp://x"]}, "webhooks[0]"),
    ({"at": "+1h", "emails": ["a@example.com"], "colour": "red"}, "colour"),
    ({"at": "+1h"}, "targets"),
    ({"at": "+1h", "emails": ["a@example.com"], "subject": 5}, "subject"),
    ({"at": "+1h", "emails": ["a@example.com"], "rrule": "FREQ=DAILY", "cron": "* * * * *"},
     "rrule"),
    ({"at": "+1h", "targets": [{"channel": "pigeon", "address": "x"}]}, "targets[0]"),
    ([1, 2], "body"),
]  # fmt: skip


@pytest.mark.sqlite_only
def test_bad_input_is_a_400_problem_naming_the_field_and_writes_nothing(db: Db) -> None:
    with Served(db) as s:
        for body, field in BAD:
            r = s.fetch("POST", "/api/v1/reminders", json_body=body)
            assert r.status == 400, (body, r.text)
            assert r.headers["Content-Type"].startswith("application/problem+json")
            problem = r.json()
            assert field in problem["fields"], (body, problem)
            assert problem["status"] == 400 and problem["detail"]
        assert s.fetch("GET", "/api/v1/stats").json()["reminders"]["pending"] == 0
        not_json = s.fetch("POST", "/api/v1/reminders", data=b"{", headers=JSON)
        assert not_json.status == 400 and not_json.json()["field"] == "body"
        form = s.fetch("POST", "/api/v1/reminders", data={"at": "+1h"})
        assert form.status == 400  # not JSON: a page of another site could send it
        huge = s.fetch("POST", "/api/v1/reminders", data=b'"' + b"x" * 400_000 + b'"',
                       headers=JSON)  # fmt: skip
        assert huge.status == 413
        assert huge.headers["Content-Type"].startswith("application/problem+json")
        for path, status in [("/api/v1/reminders/abc", 404), ("/api/v1/reminders/99", 404),
                             ("/api/v1/reminders/99999999999999999999999", 404),
                             ("/api/v1/reminders?state=weird", 400),
                             ("/api/v1/reminders?limit=0", 400),
                             ("/api/v1/reminders?before=-1", 400),
                             ("/reminders/99", 404), ("/reminders?before=x", 400)]:  # fmt: skip
            r = s.fetch("GET", path)
            assert r.status == status, (path, r.text)
            assert "Traceback" not in r.text


@pytest.mark.sqlite_only
def test_a_script_in_a_subject_is_shown_as_text(db: Db) -> None:
    with Served(db) as s:
        evil = "<script>alert(1)</script>"
        rid = s.fetch("POST", "/api/v1/reminders", json_body={
            "at": "+1h", "emails": ["a@example.com"], "subject": evil, "key": evil,
        }).json()["id"]  # fmt: skip
        for path in ("/reminders", f"/reminders/{rid}", f"/reminders?search={evil}"):
            page = s.fetch("GET", path)
            assert page.status == 200
            assert "<script" not in page.text
            assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page.text
            csp = page.headers["Content-Security-Policy"]
            assert "default-src 'none'" in csp and "form-action 'self'" in csp


def _dead_letter(db: Db, sink: HttpSink) -> int:
    sink.respond("/gone", Reply(400))  # refused for good: a dead letter at once
    out = run_cli(_db(db), "--db", str(db), "add", "--at", "now", "--webhook", sink.url("/gone"),
                  "--subject", "Doomed")  # fmt: skip
    assert out.returncode == 0, out.stderr
    rid = int(out.stdout.strip())
    tick = run_cli(_db(db), "--db", str(db), "tick")
    assert tick.returncode == 0, tick.stderr
    return rid


def test_retry_cancel_enable_answer_as_the_cli_does(db: Db, http: HttpSink) -> None:
    rid = _dead_letter(db, http)
    with Served(db) as s:
        dead = s.fetch("GET", "/api/v1/reminders?state=dead").json()["reminders"]
        assert [r["id"] for r in dead] == [rid]
        history = s.fetch("GET", f"/api/v1/reminders/{rid}/history").json()
        assert history["attempts"][0]["outcome"] == "permanent"
        assert len(history["dead_letters"]) == 1
        retried = s.fetch("POST", f"/api/v1/reminders/{rid}/retry", headers=JSON).json()
        assert retried["changes"][0]["applied"] is True
        again = s.fetch("POST", f"/api/v1/reminders/{rid}/retry", headers=JSON).json()
        cli = run_cli(_db(db), "--db", str(db), "retry", str(rid))
        skipped = again["changes"][0]["skipped"]
        assert skipped and skipped in cli.stdout + cli.stderr  # the same words as the CLI
        enabled = s.fetch("POST", f"/api/v1/reminders/{rid}/enable", headers=JSON).json()
        assert enabled["changes"][0]["applied"] is False
        cancelled = s.fetch("POST", f"/api/v1/reminders/{rid}/cancel", headers=JSON).json()
        assert cancelled["changes"][0]["applied"] is True
        missing = s.fetch("POST", "/api/v1/reminders/999/cancel", headers=JSON)
        assert missing.status == 404 and missing.json()["field"] == "ids"


@pytest.mark.sqlite_only
def test_with_a_token_the_api_wants_bearer_and_the_pages_a_login(db: Db) -> None:
    with Served(db, env={"DUEQUEUE_WEB_TOKEN": TOKEN}) as s:
        assert s.fetch("GET", "/api/v1/stats").status == 401
        wrong = s.fetch("GET", "/api/v1/stats", headers={"Authorization": "Bearer nope"})
        assert wrong.status == 401 and wrong.json()["status"] == 401
        bearer = {"Authorization": f"Bearer {TOKEN}"}
        assert s.fetch("GET", "/api/v1/stats", headers=bearer).status == 200
        assert s.fetch("GET", "/metrics").status == 401
        assert s.fetch("GET", "/api/v1/openapi.json").status == 200  # no secret in it
        add = {"at": "+1h", "emails": ["a@example.com"]}
        assert s.fetch("POST", "/api/v1/reminders", json_body=add).status == 401
        assert s.fetch("POST", "/api/v1/reminders", json_body=add, headers=bearer).status == 201

        page = s.fetch("GET", "/")
        assert page.status == 303 and page.headers["Location"] == "/login"
        form = s.fetch("GET", "/login")
        session = form.cookies["dq_session"]
        assert session["httponly"] and session["samesite"] == "Strict"
        csrf = form.text.split('name="csrf" value="', 1)[1].split('"', 1)[0]
        jar = {"dq_session": session.value}
        bad = s.fetch("POST", "/login", data={"csrf": csrf, "token": "guess"}, cookies=jar)
        assert bad.status == 401 and "dq_login" not in bad.cookies
        no_csrf = s.fetch("POST", "/login", data={"token": TOKEN}, cookies=jar)
        assert no_csrf.status == 403
        good = s.fetch("POST", "/login", data={"csrf": csrf, "token": TOKEN}, cookies=jar)
        assert good.status == 303
        login = good.cookies["dq_login"]
        assert login["httponly"] and login["samesite"] == "Strict"
        assert TOKEN not in login.value  # an HMAC of it
        jar["dq_login"] = login.value
        assert s.fetch("GET", "/", cookies=jar).status == 200
        # The cookie reads the API but changes nothing there: that takes the Bearer token.
        assert s.fetch("GET", "/api/v1/stats", cookies=jar).status == 200
        assert s.fetch("POST", "/api/v1/reminders/1/cancel", cookies=jar,
                       headers=JSON).status == 401  # fmt: skip
        # A dashboard action without the form's CSRF token, or from another origin, is refused.
        assert s.fetch("POST", "/reminders/1/cancel", cookies=jar, data={}).status == 403
        foreign = s.fetch("POST", "/reminders/1/cancel", cookies=jar, data={"csrf": csrf},
                          headers={"Origin": "https://evil.example"})  # fmt: skip
        assert foreign.status == 403
        done = s.fetch("POST", "/reminders/1/cancel", cookies=jar, data={"csrf": csrf})
        assert done.status == 200 and "1 of 1 changed" in done.text


@pytest.mark.sqlite_only
def test_without_a_token_it_answers_this_machine_only(db: Db) -> None:
    out = run_cli(_db(db), "--db", str(db), "serve", "--host", "0.0.0.0")
    assert out.returncode == 2
    assert out.stderr.count("\n") == 1 and "DUEQUEUE_WEB_TOKEN" in out.stderr
    assert out.stderr.startswith("duequeue: error: --host: 0.0.0.0 is not a loopback address")
    short = run_cli(_db(db), "--db", str(db), "serve", env={"DUEQUEUE_WEB_TOKEN": "short"})
    assert short.returncode == 1  # a bad setting, as everywhere
    assert short.stderr.startswith("duequeue: error: DUEQUEUE_WEB_TOKEN: at least 16")
    with Served(db) as s:
        # A DNS name rebound to 127.0.0.1 reaches the port, but not with its own Host.
        r = s.fetch("GET", "/api/v1/stats", headers={"Host": "evil.example"})
        assert r.status == 403
        assert s.fetch("GET", "/api/v1/stats", headers={"Host": "localhost:1"}).status == 200
        # Without a token a write needs a JSON request: a page of another site cannot send one.
        assert s.fetch("POST", "/api/v1/reminders/1/cancel").status == 400


@pytest.mark.sqlite_only
def test_read_only_serves_no_action(db: Db) -> None:
    run_cli(_db(db), "--db", str(db), "add", "--at", "+1h", "--email", "a@example.com")
    with Served(db, "--read-only") as s:
        assert s.fetch("GET", "/api/v1/reminders/1").status == 200
        add = s.fetch("POST", "/api/v1/reminders", json_body={"at": "+1h"})
        assert add.status == 405 and add.json()["status"] == 405
        assert s.fetch("POST", "/api/v1/reminders/1/cancel", headers=JSON).status == 404
        page = s.fetch("GET", "/reminders/1")
        assert "Cancel" not in page.text
        assert s.fetch("GET", "/reminders/1/cancel").status == 404
        spec = s.fetch("GET", "/api/v1/openapi.json").json()
        assert "post" not in spec["paths"]["/api/v1/reminders"]


@pytest.mark.sqlite_only
def test_a_tick_delivers_while_pages_load_in_a_loop(db: Db, http: HttpSink) -> None:
    """serve holds no SQLite write lock beyond one action's transaction: a tick's writes go
    through while the dashboard and the API are read as fast as a client can."""
    for i in range(20):
        run_cli(_db(db), "--db", str(db), "add", "--at", "now", "--webhook", http.url(f"/{i}"))
    stop = threading.Event()
    loads = [0]
    with Served(db) as s:

        def load() -> None:
            while not stop.is_set():
                for path in ("/", "/reminders", "/reminders/1", "/api/v1/stats",
                             "/reminders?state=dead"):  # fmt: skip
                    assert s.fetch("GET", path).status == 200
                    loads[0] += 1

        loaders = [threading.Thread(target=load) for _ in range(2)]
        for t in loaders:
            t.start()
        try:
            tick = run_cli(_db(db), "--db", str(db), "tick", env={"DUEQUEUE_BUSY_TIMEOUT": "1"})
        finally:
            stop.set()
            for t in loaders:
                t.join()
    assert tick.returncode == 0, tick.stderr
    assert "sent 20" in tick.stdout, tick.stdout
    assert len(http.requests) == 20
    assert loads[0] > 0


@pytest.mark.sqlite_only
def test_no_secret_reaches_a_page_or_an_answer(db: Db) -> None:
    secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
    with Served(db, env={"DUEQUEUE_WEBHOOK_SECRET": secret}) as s:
        added = s.fetch("POST", "/api/v1/reminders", json_body={
            "at": "+1h", "webhooks": ["https://hooks.example.com/a"], "webhook_secret": secret,
            "notify": ["tgram://123456789:ABCdefGHIjklMNOpqrSTUvwxYZ/987654"],
        })  # fmt: skip
        assert added.status == 201, added.text
        rid = added.json()["id"]
        shown = [s.fetch("GET", p).text for p in (f"/api/v1/reminders/{rid}",
                 f"/api/v1/reminders/{rid}/history", "/api/v1/reminders", f"/reminders/{rid}",
                 "/reminders", "/", "/metrics")]  # fmt: skip
        inspect = run_cli(_db(db), "--db", str(db), "inspect", "--pending", "--json").stdout
    masked = json.loads(inspect)[0]["targets"][1]["address"]
    assert "ABCdefGHIjklMNOpqrSTUvwxYZ" not in masked
    for text in shown:
        assert "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" not in text
        assert "ABCdefGHIjklMNOpqrSTUvwxYZ" not in text
    assert masked in shown[0] and html.escape(masked) in shown[3]  # as inspect masks it


def test_retry_all_on_a_filtered_list_of_dead_letters(db: Db, http: HttpSink) -> None:
    http.respond("/gone", Reply(400))
    for subject in ("Renew cert", "Renew domain", "Pay rent"):
        run_cli(_db(db), "--db", str(db), "add", "--at", "now", "--webhook", http.url("/gone"),
                "--subject", subject)  # fmt: skip
    run_cli(_db(db), "--db", str(db), "tick")
    with Served(db) as s:
        listed = s.fetch("GET", "/reminders?state=dead&search=renew")
        assert "/retry-all?search=renew" in listed.text
        jar = {"dq_session": listed.cookies["dq_session"].value}
        confirm = s.fetch("GET", "/retry-all?search=renew", cookies=jar).text
        csrf = confirm.split('name="csrf" value="', 1)[1].split('"', 1)[0]
        done = s.fetch("POST", "/retry-all", data={"csrf": csrf, "search": "renew"}, cookies=jar)
        assert done.status == 200 and "2 of 2 changed" in done.text
        left = s.fetch("GET", "/api/v1/reminders?state=dead").json()["reminders"]
        assert [r["subject"] for r in left] == ["Pay rent"]


def test_a_key_held_with_other_content_is_a_409_naming_the_reminder(db: Db) -> None:
    """A client retries a 5xx: a key conflict answered 500 would be sent again and again."""
    with Served(db) as s:
        first = {"at": "+1d", "emails": ["ann@example.com"], "subject": "Invoice 42 is due"}
        key = {"Idempotency-Key": "invoice-42"}
        rid = s.fetch("POST", "/api/v1/reminders", json_body=first, headers=key).json()["id"]
        other = {"at": "+2d", "emails": ["bob@example.com"]}
        r = s.fetch("POST", "/api/v1/reminders", json_body=other, headers=key)
        assert r.status == 409, r.text
        assert r.headers["Content-Type"].startswith("application/problem+json")
        assert "Retry-After" not in r.headers
        problem = r.json()
        assert problem["title"] == "Key conflict" and problem["field"] == "key"
        assert problem["existing_id"] == rid and f"reminder {rid}" in problem["detail"]
        # The same content is no conflict: the add is idempotent.
        same = s.fetch("POST", "/api/v1/reminders", json_body=first, headers=key)
        assert same.status == 200
        assert same.json()["id"] == rid and same.json()["created"] is False
        assert s.fetch("GET", "/api/v1/stats").json()["reminders"]["pending"] == 1
        spec = s.fetch("GET", "/api/v1/openapi.json").json()
        assert "409" in spec["paths"]["/api/v1/reminders"]["post"]["responses"]
    assert s.stop() == 0
