"""Everything the CLI can change, over `duequeue serve`'s HTTP API and in its dashboard, as a
client and a person meet it (a real server process, aiohttp's client): reschedule, edit, pause
and resume a reminder, cancel by key, bulk cancel and retry on a filter (the count first), and
pause the whole queue (the tick then says so). Changes take the admin token, a form its CSRF
token from this site. Times show on the reminder's clocks beside UTC; the login returns to the
page asked for, and only to a page of this site."""

import json
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from tests.procs import reap, run_cli
from tests.servers import HttpSink, Reply
from tests.stores import Db
from tests.webserver import Reply as Answer
from tests.webserver import Served

ADMIN = "admin-token-0123456789abcdef"
READER = "reader-token-0123456789abcdef"
TOKENS = {"DUEQUEUE_WEB_TOKEN": ADMIN, "DUEQUEUE_WEB_READ_TOKEN": READER}
AS_ADMIN = {"Authorization": f"Bearer {ADMIN}"}


@pytest.fixture(autouse=True)
def _reaped() -> Iterator[None]:
    yield
    reap()


def _cli(db: Db, *args: str) -> str:
    out = run_cli(Path(str(db)), "--db", str(db), *args)
    assert out.returncode == 0, out.stderr
    return out.stdout


def _csrf(text: str) -> str:
    return text.split('name="csrf" value="', 1)[1].split('"', 1)[0]


class Browser:
    """A browser's cookie jar against one server."""

    def __init__(self, s: Served) -> None:
        self.s = s
        page = s.fetch("GET", "/login")
        self.jar = {"dq_session": page.cookies["dq_session"].value}
        self.csrf = _csrf(page.text)

    def get(self, path: str) -> Answer:
        return self.s.fetch("GET", path, cookies=self.jar)

    def post(self, path: str, headers: dict[str, str] | None = None, **fields: str) -> Answer:
        return self.s.fetch("POST", path, data={"csrf": self.csrf, **fields}, cookies=self.jar,
                            headers=headers)  # fmt: skip

    def login(self, token: str, **fields: str) -> Answer:
        r = self.post("/login", token=token, **fields)
        if "dq_login" in r.cookies:
            self.jar["dq_login"] = r.cookies["dq_login"].value
        return r


def test_every_cli_change_over_the_api(db: Db, http: HttpSink) -> None:
    http.respond("/gone", Reply(400))
    rid = int(_cli(db, "add", "--at", "2030-01-07 09:00", "--tz", "Europe/Paris",
                   "--webhook", "https://hooks.example.com/a", "--key", "standup"))  # fmt: skip
    dead = [int(_cli(db, "add", "--at", "now", "--webhook", http.url("/gone"), "--subject",
                     f"Renew {n}")) for n in ("cert", "domain")]  # fmt: skip
    _cli(db, "tick")
    with Served(db) as s:
        moved = s.fetch("POST", f"/api/v1/reminders/{rid}/reschedule",
                        json_body={"at": "2030-01-08 10:00"})  # fmt: skip
        assert moved.status == 200, moved.text
        assert moved.json()["reminder"]["fire_at"] == "2030-01-08T09:00:00.000Z"
        change = {"subject": "Standup moved", "webhooks": ["https://x.example.com/b"]}
        edited = s.fetch("POST", f"/api/v1/reminders/{rid}/edit", json_body=change)
        assert edited.status == 200, edited.text
        shown = edited.json()["reminder"]
        assert shown["subject"] == "Standup moved"
        assert [t["address"] for t in shown["targets"]] == ["https://x.example.com/b"]

        paused = s.fetch("POST", f"/api/v1/reminders/{rid}/pause", json_body={}).json()
        assert paused["changes"] == [{"id": rid, "applied": True, "fire_at": None, "skipped": None}]
        again = s.fetch("POST", f"/api/v1/reminders/{rid}/pause", json_body={}).json()["changes"][0]
        assert again["skipped"] == "already paused"
        one = s.fetch("GET", f"/api/v1/reminders/{rid}").json()
        assert (one["state"], one["next_fire_at"]) == ("paused", None)
        assert one["paused_at"] is not None
        listed = s.fetch("GET", "/api/v1/reminders?state=paused").json()["reminders"]
        assert [r["id"] for r in listed] == [rid]
        resumed = s.fetch("POST", f"/api/v1/reminders/{rid}/resume", json_body={}).json()[
            "changes"
        ][0]
        assert resumed["fire_at"] == "2030-01-08T09:00:00.000Z"

        count = s.fetch("POST", "/api/v1/reminders/retry",
                        json_body={"search": "renew", "dry_run": True}).json()  # fmt: skip
        assert count == {"matched": 2, "more": False, "ids": sorted(dead, reverse=True)}
        assert s.fetch("GET", "/api/v1/stats").json()["dead_letters"] == 2  # dry run: unchanged
        retried = s.fetch("POST", "/api/v1/reminders/retry", json_body={"search": "domain"})
        assert retried.json()["matched"] == 1
        assert [c["id"] for c in retried.json()["changes"] if c["applied"]] == [dead[1]]

        cancelled = s.fetch("POST", "/api/v1/reminders/cancel", json_body={"state": "dead"})
        assert cancelled.json()["matched"] == 1
        assert [c["id"] for c in cancelled.json()["changes"]] == [dead[0]]
        by_key = s.fetch("POST", "/api/v1/reminders/cancel", json_body={"key": "standup"})
        assert [c["id"] for c in by_key.json()["changes"]] == [rid]
        gone = s.fetch("POST", "/api/v1/reminders/cancel", json_body={"key": "standup"})
        assert gone.status == 404 and gone.json()["field"] == "key"
        assert gone.headers["Content-Type"].startswith("application/problem+json")

        queue = s.fetch("POST", "/api/v1/queue/pause", json_body={}).json()
        assert queue["paused"] is True and queue["changed"] is True
        assert s.fetch("GET", "/api/v1/stats").json()["queue_paused_since"] == queue["since"]
        tick = json.loads(_cli(db, "tick", "--json"))
        assert (tick["claimed"], tick["paused_since"]) == (0, queue["since"])
        back = s.fetch("POST", "/api/v1/queue/resume", json_body={}).json()
        assert back == {"paused": False, "since": queue["since"], "changed": True}
        assert s.fetch("GET", "/api/v1/stats").json()["queue_paused_since"] is None
    assert json.loads(_cli(db, "tick", "--json"))["claimed"] == 1  # the retried dead letter


BAD = [
    ("/api/v1/reminders/{rid}/reschedule", {"when": "+1h"}, 400, "when"),
    ("/api/v1/reminders/{rid}/reschedule", {"at": "someday"}, 400, "at"),
    ("/api/v1/reminders/{rid}/reschedule", {"at": 5}, 400, "at"),
    ("/api/v1/reminders/{rid}/edit", {}, 400, "subject"),
    ("/api/v1/reminders/{rid}/edit", {"emails": ["not an address"]}, 400, "emails[0]"),
    ("/api/v1/reminders/{rid}/edit", {"key": "k"}, 400, "key"),
    ("/api/v1/reminders/999/pause", None, 404, "ids"),
    ("/api/v1/reminders/cancel", {"state": "sleeping"}, 400, "state"),
    ("/api/v1/reminders/cancel", {}, 400, "state"),
    ("/api/v1/reminders/cancel", {"search": "x"}, 400, "state"),
    ("/api/v1/reminders/cancel", {"key": "k", "state": "all"}, 400, "state"),
    ("/api/v1/reminders/retry", {"dry_run": "yes"}, 400, "dry_run"),
    ("/api/v1/reminders/retry", {"search": "a\u0000"}, 400, "search"),
]


def test_bad_changes_are_problems_naming_the_field(tmp_path: Path) -> None:
    db = tmp_path / "dq.db"
    rid = int(_cli(db, "add", "--at", "+1h", "--webhook", "https://hooks.example.com/a"))
    with Served(db) as s:
        for path, body, status, field in BAD:
            r = s.fetch("POST", path.format(rid=rid), json_body=body,
                        headers={"Content-Type": "application/json"})  # fmt: skip
            assert r.status == status, (path, body, r.text)
            assert r.json()["field"] == field, (path, body, r.text)
        # A change a tick would race is refused (409), never half-made: here, a done one.
        _cli(db, "cancel", str(rid))
        r = s.fetch("POST", f"/api/v1/reminders/{rid}/reschedule", json_body={"at": "+2h"})
        assert r.status == 409 and r.json()["title"] == "Change refused"
        # Without a token, a change must come as JSON (a page of another site cannot send it).
        plain = s.fetch("POST", "/api/v1/queue/pause", data=b"x",
                        headers={"Content-Type": "text/plain"})  # fmt: skip
        assert plain.status == 400 and plain.json()["field"] == "content-type"
        spec = s.fetch("GET", "/api/v1/openapi.json").json()
    for path in ("/api/v1/reminders/{id}/reschedule", "/api/v1/reminders/{id}/edit",
                 "/api/v1/reminders/{id}/pause", "/api/v1/reminders/{id}/resume",
                 "/api/v1/reminders/cancel", "/api/v1/reminders/retry", "/api/v1/queue/pause",
                 "/api/v1/queue/resume"):  # fmt: skip
        assert set(spec["paths"][path]["post"]["responses"]) >= {"200", "400", "401", "403"}
    assert "409" in spec["paths"]["/api/v1/reminders/{id}/reschedule"]["post"]["responses"]


def test_the_changes_take_the_admin_token(tmp_path: Path) -> None:
    db = tmp_path / "dq.db"
    rid = int(_cli(db, "add", "--at", "+1h", "--webhook", "https://hooks.example.com/a"))
    paths = [f"/api/v1/reminders/{rid}/{a}" for a in ("reschedule", "edit", "pause", "resume")]
    paths += ["/api/v1/reminders/cancel", "/api/v1/reminders/retry", "/api/v1/queue/pause",
              "/api/v1/queue/resume"]  # fmt: skip
    with Served(db, env=TOKENS) as s:
        for path in paths:
            none = s.fetch("POST", path, json_body={})
            assert none.status == 401, path
            read = s.fetch(
                "POST", path, json_body={}, headers={"Authorization": f"Bearer {READER}"}
            )
            assert read.status == 403 and "reads only" in read.json()["detail"], path
        assert s.fetch("GET", "/api/v1/stats", headers=AS_ADMIN).json()["reminders"]["paused"] == 0
        r = s.fetch("POST", f"/api/v1/reminders/{rid}/pause", headers=AS_ADMIN)
        assert r.status == 200 and r.json()["changes"][0]["applied"]

        reader = Browser(s)
        assert reader.login(READER).status == 303
        for path in (f"/reminders/{rid}/reschedule", f"/reminders/{rid}/edit",
                     f"/reminders/{rid}/resume", "/bulk-cancel", "/cancel-key?key=k",
                     "/queue/pause"):  # fmt: skip
            assert reader.get(path).status == 403, path
            assert reader.post(path.split("?")[0], key="k").status == 403, path
        page = reader.get(f"/reminders/{rid}").text
        assert "Resume…" not in page and "Reschedule…" not in page
        assert "Pause the queue" not in reader.get("/").text
    with Served(db, "--read-only") as s:
        assert s.fetch("POST", "/api/v1/queue/pause", json_body={}).status in (404, 405)
        assert "/api/v1/queue/pause" not in s.fetch("GET", "/api/v1/openapi.json").text


def test_every_change_in_the_dashboard(tmp_path: Path, http: HttpSink) -> None:
    db = tmp_path / "dq.db"
    http.respond("/gone", Reply(400))
    rid = int(_cli(db, "add", "--at", "2030-01-07 09:00", "--tz", "Europe/Paris",
                   "--webhook", "https://hooks.example.com/a", "--subject", "Standup",
                   "--key", "standup"))  # fmt: skip
    for n in range(3):
        _cli(db, "add", "--at", "+1d", "--webhook", "https://hooks.example.com/a",
             "--subject", f"Invoice {n}")  # fmt: skip
    with Served(db, env=TOKENS) as s:
        b = Browser(s)
        assert b.login(ADMIN).status == 303
        page = b.get(f"/reminders/{rid}").text
        # Where people live: the reminder's zone beside UTC.
        assert "2030-01-07 08:00:00 UTC" in page and "(09:00:00 Europe/Paris)" in page
        for action in ("Reschedule…", "Edit…", "Pause…", "Cancel…"):
            assert action in page

        form = b.get(f"/reminders/{rid}/reschedule").text
        assert 'name="tz" value="Europe/Paris"' in form
        done = b.post(f"/reminders/{rid}/reschedule", at="2030-01-08 10:00", tz="Europe/Paris")
        assert done.status == 200, done.text
        assert "Rescheduled reminder" in done.text and "(10:00:00 Europe/Paris)" in done.text
        assert 'class="state' not in done.text  # a result, not a state
        edited = b.post(f"/reminders/{rid}/edit", subject="Standup (moved)", body="",
                        data='{"room": 4}', targets="")  # fmt: skip
        assert edited.status == 200 and "Standup (moved)" in edited.text
        bad = b.post(f"/reminders/{rid}/edit", subject="", targets="nonsense")
        assert bad.status == 400 and "targets[0]" in bad.text

        assert "Pause reminder" in b.get(f"/reminders/{rid}/pause").text
        paused = b.post(f"/reminders/{rid}/pause")
        assert "1 of 1 changed" in paused.text and 'class="state' not in paused.text
        assert "Resume…" in b.get(f"/reminders/{rid}").text
        assert "1 of 1 changed" in b.post(f"/reminders/{rid}/resume").text

        listed = b.get("/reminders?search=invoice").text
        assert "/bulk-cancel?state=all&amp;search=invoice" in listed
        confirm = b.get("/bulk-cancel?state=all&search=invoice").text
        assert 'id="count"><strong>3</strong> reminders match now' in confirm
        done = b.post("/bulk-cancel", state="all", search="invoice")
        assert "3 of 3 changed" in done.text
        assert "are you sure" not in done.text.lower()

        assert "Cancel the reminder with key standup?" in b.get("/cancel-key?key=standup").text
        assert "1 of 1 changed" in b.post("/cancel-key", key="standup").text
        assert b.post("/cancel-key", key="standup").status == 404

        assert "Pause the queue…" in b.get("/").text
        assert "The queue is paused since" in b.post("/queue/pause").text
        banner = b.get("/").text
        assert 'id="queue-paused"' in banner and 'href="/queue/resume"' in banner
        tick = json.loads(_cli(db, "tick", "--json"))
        assert tick["paused_since"] is not None
        assert "The queue is resumed" in b.post("/queue/resume").text
        assert 'id="queue-paused"' not in b.get("/").text

        # A form of another site is refused before anything changes.
        other = b.post("/queue/pause", headers={"Origin": "http://evil.example"})
        assert other.status == 403
        stale = s.fetch("POST", "/queue/pause", data={"csrf": "0" * 64}, cookies=b.jar)
        assert stale.status == 403
        stats = s.fetch("GET", "/api/v1/stats", headers=AS_ADMIN).json()
        assert stats["queue_paused_since"] is None


def test_the_login_returns_to_the_page_asked_for_and_nowhere_else(tmp_path: Path) -> None:
    db = tmp_path / "dq.db"
    rid = int(_cli(db, "add", "--at", "+1h", "--webhook", "https://hooks.example.com/a"))
    with Served(db, env=TOKENS) as s:
        b = Browser(s)
        asked = b.get(f"/reminders/{rid}?x=1")
        assert asked.status == 303
        where = urlsplit(asked.headers["Location"])
        assert (where.path, parse_qs(where.query)) == (
            "/login",
            {"next": [f"/reminders/{rid}?x=1"]},
        )
        form = b.get(asked.headers["Location"]).text
        assert f'name="next" value="/reminders/{rid}?x=1"' in form
        assert "Log out" not in form  # logged out: nothing to log out of
        wrong = b.login("not-the-token", next=f"/reminders/{rid}?x=1")
        assert wrong.status == 401 and f'value="/reminders/{rid}?x=1"' in wrong.text
        r = b.login(ADMIN, next=f"/reminders/{rid}?x=1")
        assert (r.status, r.headers["Location"]) == (303, f"/reminders/{rid}?x=1")
        assert "Log out" in b.get(f"/reminders/{rid}").text
        for elsewhere in ("//evil.example/", "https://evil.example/", "/\\evil.example",
                          "/login"):  # fmt: skip
            other = Browser(s)
            assert other.login(ADMIN, next=elsewhere).headers["Location"] == "/"
        assert b.post("/logout").status == 303
        del b.jar["dq_login"]
        assert "Log out" not in b.get("/login").text
        assert "Log out" not in b.get("/nowhere").text
