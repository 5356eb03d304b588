"""The tokens of `duequeue serve` as people and scripts meet them (a real server process, aiohttp's
client): the read-only token reads everything and changes nothing; wrong tokens slow down per
client (as trusted proxies report it), with a clear 429, a reset on success, and no way for an
attacker to keep the admin out; a spoofed X-Forwarded-For from an untrusted peer changes
nothing."""

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.procs import reap, run_cli
from tests.servers import HttpSink, Reply
from tests.webserver import Reply as Answer
from tests.webserver import Served

ADMIN = "admin-token-0123456789abcdef"
READER = "reader-token-0123456789abcdef"
TOKENS = {"DUEQUEUE_WEB_TOKEN": ADMIN, "DUEQUEUE_WEB_READ_TOKEN": READER}
JSON = {"Content-Type": "application/json"}
WAIT_S = 20.0  # the longest a test waits out the throttle's first wait (1 s) on a busy machine


@pytest.fixture(autouse=True)
def _reaped() -> Iterator[None]:
    yield
    reap()


def _csrf(text: str) -> str:
    return text.split('name="csrf" value="', 1)[1].split('"', 1)[0]


class Browser:
    """A browser's cookie jar against one server, from one client address (X-Forwarded-For,
    which the server believes when its peer is a trusted proxy)."""

    def __init__(self, s: Served, client: str | None = None) -> None:
        self.s = s
        self.client = client
        page = s.fetch("GET", "/login", headers=self._headers())
        self.jar = {"dq_session": page.cookies["dq_session"].value}
        self.csrf = _csrf(page.text)

    def _headers(self) -> dict[str, str]:
        return {"X-Forwarded-For": self.client} if self.client else {}

    def get(self, path: str) -> Answer:
        return self.s.fetch("GET", path, headers=self._headers(), cookies=self.jar)

    def post(self, path: str, **fields: str) -> Answer:
        return self.s.fetch("POST", path, data={"csrf": self.csrf, **fields},
                            headers=self._headers(), cookies=self.jar)  # fmt: skip

    def login(self, token: str) -> Answer:
        r = self.post("/login", token=token)
        for name in ("dq_login", "dq_device"):
            if name in r.cookies:
                self.jar[name] = r.cookies[name].value
        return r


def _dead_letter(db: Path, http: HttpSink) -> int:
    http.respond("/gone", Reply(400))
    out = run_cli(db, "add", "--at", "now", "--webhook", http.url("/gone"), "--subject", "Doomed")
    assert out.returncode == 0, out.stderr
    assert run_cli(db, "tick").returncode == 0
    return int(out.stdout)


def test_the_read_token_reads_everything_and_changes_nothing(
    tmp_path: Path, http: HttpSink
) -> None:
    db = tmp_path / "dq.db"
    rid = _dead_letter(db, http)
    with Served(db, env=TOKENS) as s:
        reader = {"Authorization": f"Bearer {READER}"}
        for path in ("/api/v1/reminders", f"/api/v1/reminders/{rid}",
                     f"/api/v1/reminders/{rid}/history", "/api/v1/stats", "/metrics",
                     "/api/v1/reminders?state=dead"):  # fmt: skip
            assert s.fetch("GET", path, headers=reader).status == 200, path
        for path in ("/api/v1/reminders", *(f"/api/v1/reminders/{rid}/{a}"
                     for a in ("retry", "cancel", "enable"))):  # fmt: skip
            r = s.fetch("POST", path, json_body={"at": "+1h", "emails": ["a@example.com"]},
                        headers=reader)  # fmt: skip
            assert r.status == 403, (path, r.text)
            assert r.headers["Content-Type"].startswith("application/problem+json")
            assert "reads only" in r.json()["detail"]

        b = Browser(s)
        assert b.login(READER).status == 303
        for path in ("/", "/reminders", f"/reminders/{rid}", "/reminders?state=dead"):
            page = b.get(path)
            assert page.status == 200, path
            assert 'id="role">read-only<' in page.text
            assert "Retry…" not in page.text and "Cancel…" not in page.text
            assert "/retry-all" not in page.text
        for path in (f"/reminders/{rid}/retry", f"/reminders/{rid}/cancel", "/retry-all"):
            assert b.get(path).status == 403, path
            assert b.post(path).status == 403, path
        assert b.post("/logout").status == 303

        # Nothing changed: the dead letter is still there, for the admin to retry.
        admin = Browser(s)
        assert admin.login(ADMIN).status == 303
        page = admin.get(f"/reminders/{rid}")
        assert "Retry…" in page.text and 'id="role"' not in page.text
        assert admin.post(f"/reminders/{rid}/retry").status == 200
        stats = s.fetch("GET", "/api/v1/stats", headers={"Authorization": f"Bearer {ADMIN}"})
        assert stats.json()["dead_letters"] == 0
    assert s.stop() == 0


def test_a_read_token_must_stand_beside_a_different_admin_token(tmp_path: Path) -> None:
    db = tmp_path / "dq.db"
    alone = run_cli(db, "serve", "--port", "0", env={"DUEQUEUE_WEB_READ_TOKEN": READER})
    assert alone.returncode == 1
    assert alone.stderr.startswith("duequeue: error: DUEQUEUE_WEB_READ_TOKEN: a read token needs")
    same = run_cli(db, "serve", "--port", "0",
                   env={"DUEQUEUE_WEB_TOKEN": ADMIN, "DUEQUEUE_WEB_READ_TOKEN": ADMIN})  # fmt: skip
    assert same.returncode == 1 and "must differ from the admin token" in same.stderr
    short_token = {"DUEQUEUE_WEB_TOKEN": ADMIN, "DUEQUEUE_WEB_READ_TOKEN": "short"}
    short = run_cli(db, "serve", "--port", "0", env=short_token)
    assert short.returncode == 1
    assert short.stderr.startswith("duequeue: error: DUEQUEUE_WEB_READ_TOKEN: at least 16")
    shown = run_cli(db, "config", "--json", env=TOKENS)
    settings = json.loads(shown.stdout)
    assert settings["web_read_token"] == "****" and READER not in shown.stdout


def _wrong_until_a_wait(b: Browser) -> list[Answer]:
    return [b.login("guess-0123456789abcdef") for _ in range(5)]


def test_wrong_logins_slow_down_per_client_and_a_success_resets(tmp_path: Path) -> None:
    db = tmp_path / "dq.db"
    with Served(db, "--forwarded-allow-ips", "127.0.0.1", env=TOKENS) as s:
        attacker = Browser(s, "198.51.100.1")
        tries = _wrong_until_a_wait(attacker)
        assert [t.status for t in tries] == [401] * 5
        assert "next try waits 1 s" in tries[-1].text and "next try" not in tries[-2].text
        waiting = attacker.login("guess-0123456789abcdef")
        assert waiting.status == 429 and waiting.headers["Retry-After"] == "1"
        assert "try again in 1 s" in waiting.text
        # During the wait not even the right token is judged: a guess then tells nothing.
        right = attacker.login(ADMIN)
        assert right.status == 429 and "dq_login" not in right.cookies

        # Another client is not slowed down by it.
        admin = Browser(s, "198.51.100.2")
        assert admin.login(ADMIN).status == 303 and "dq_device" in admin.jar

        # The wait ends; the right token then logs in, and the count starts again.
        deadline = time.monotonic() + WAIT_S
        while (r := attacker.login(ADMIN)).status == 429:
            assert time.monotonic() < deadline, "the wait did not end"
        assert r.status == 303
        again = Browser(s, "198.51.100.1")
        assert [again.login("guess-0123456789abcdef").status for _ in range(4)] == [401] * 4
    assert s.stop() == 0
    assert "a wrong token for the login from 198.51.100.1" in s.log
    assert "a wrong token for the login from 198.51.100.1; its next try waits 1 s" in s.log
    assert "198.51.100.2" not in s.log


def test_an_attacker_at_the_admin_s_address_does_not_lock_out_the_admin_s_browser(
    tmp_path: Path,
) -> None:
    db = tmp_path / "dq.db"
    with Served(db, "--forwarded-allow-ips", "127.0.0.1", env=TOKENS) as s:
        # The admin's browser logged in before (and logged out): it holds a device cookie.
        admin = Browser(s, "192.0.2.10")
        assert admin.login(ADMIN).status == 303
        assert admin.post("/logout").status == 303
        admin.jar.pop("dq_login")
        # Someone behind the same NAT guesses until the address must wait.
        attacker = Browser(s, "192.0.2.10")
        _wrong_until_a_wait(attacker)
        assert attacker.login(ADMIN).status == 429
        # The admin's browser is judged by its own record, not its address's.
        assert admin.login(ADMIN).status == 303
        assert admin.get("/").status == 200
        # A device cookie this server did not sign counts for nothing.
        forged = Browser(s, "192.0.2.10")
        forged.jar["dq_device"] = "A" * 32 + "." + "0" * 64
        assert forged.login(ADMIN).status == 429
    assert s.stop() == 0


def test_wrong_bearer_tokens_slow_down_with_a_429_problem(tmp_path: Path) -> None:
    db = tmp_path / "dq.db"
    with Served(db, "--forwarded-allow-ips", "127.0.0.1", env=TOKENS) as s:
        client = {"X-Forwarded-For": "203.0.113.9"}
        wrong = {**client, "Authorization": "Bearer guess-0123456789abcdef"}
        assert [s.fetch("GET", "/api/v1/stats", headers=wrong).status for _ in range(5)] == [
            401
        ] * 5
        r = s.fetch("GET", "/api/v1/stats", headers={**client, "Authorization": f"Bearer {ADMIN}"})
        assert r.status == 429 and r.headers["Retry-After"] == "1"
        assert r.headers["Content-Type"].startswith("application/problem+json")
        assert r.json()["status"] == 429 and "try again" in r.json()["detail"]
        # Without a token given there is nothing to judge: a plain 401, not counted.
        assert s.fetch("GET", "/api/v1/stats", headers=client).status == 401
        other = {"X-Forwarded-For": "203.0.113.10", "Authorization": f"Bearer {ADMIN}"}
        assert s.fetch("GET", "/api/v1/stats", headers=other).status == 200
        spec = s.fetch("GET", "/api/v1/openapi.json").json()
        assert "429" in spec["paths"]["/api/v1/stats"]["get"]["responses"]
    assert s.stop() == 0


def test_a_spoofed_x_forwarded_for_from_an_untrusted_peer_changes_nothing(tmp_path: Path) -> None:
    db = tmp_path / "dq.db"
    # No proxy trusted (the default): the test's own connection is the client, whatever it says.
    with Served(db, env=TOKENS) as s:
        tries = []
        for i in range(6):
            b = Browser(s, f"198.51.100.{i + 1}")  # a new address claimed each time
            tries.append(b.login("guess-0123456789abcdef").status)
        assert tries == [401] * 5 + [429]
        spoof = {"X-Forwarded-Proto": "https", "X-Forwarded-Host": "evil.example",
                 "Forwarded": "for=192.0.2.1;proto=https;host=evil.example"}  # fmt: skip
        page = s.fetch("GET", "/login", headers=spoof)
        # Not https: no Secure cookie, and a form sent from https://evil.example is foreign.
        assert not page.cookies["dq_session"]["secure"]
        jar = {"dq_session": page.cookies["dq_session"].value}
        r = s.fetch("POST", "/login", cookies=jar, data={"csrf": _csrf(page.text), "token": ADMIN},
                    headers={**spoof, "Origin": "https://evil.example"})  # fmt: skip
        assert r.status == 403 and "a form of another site" in r.text
    assert s.stop() == 0
    assert "from 127.0.0.1" in s.log and "198.51.100" not in s.log and "192.0.2.1" not in s.log
