"""serve's search over HTTP, as a client and a person use it (issue 31 item 2): the API's
`?search=` and the dashboard's list find a reminder by what they show of it, and by no part of
a secret in its targets, on SQLite and PostgreSQL."""

import html
from collections.abc import Iterator
from urllib.parse import quote

import pytest

from tests.integration.test_search import BOT_TOKEN, PASSWORD, SECRETS, SIGNING, SMTP_PASSWORD
from tests.procs import reap
from tests.stores import Db
from tests.webserver import Served


@pytest.fixture(autouse=True)
def _reaped() -> Iterator[None]:
    yield
    reap()


def _windows(secret: str, size: int) -> list[str]:
    return [secret[i : i + size] for i in range(len(secret) - size + 1)]


def test_search_over_http_finds_what_is_shown_and_no_part_of_a_secret(db: Db) -> None:
    with Served(db) as s:
        body = {
            "at": "+1d",
            "subject": "Quarterly report",
            "notify": [
                f"json://jsonuser:{PASSWORD}@hooks.example.com/path",
                f"tgram://123456789:{BOT_TOKEN}/987654321",
                f"mailto://mailuser:{SMTP_PASSWORD}@smtp.example.net",
            ],
            "webhooks": ["https://receiver.example.org/in"],
            "webhook_secret": SIGNING,
        }
        added = s.fetch("POST", "/api/v1/reminders", json_body=body)
        assert added.status == 201, added.text
        rid = added.json()["id"]

        def api(term: str) -> list[int]:
            found = s.fetch("GET", f"/api/v1/reminders?search={quote(term)}")
            assert found.status == 200, found.text
            return [r["id"] for r in found.json()["reminders"]]

        def page(term: str) -> str:
            found = s.fetch("GET", f"/reminders?search={quote(term)}")
            assert found.status == 200, found.text
            return found.text

        (listed,) = s.fetch("GET", "/api/v1/reminders?search=quarterly").json()["reminders"]
        shown = "\n".join(f"{t['channel']}: {t['address']}" for t in listed["targets"]).lower()
        assert "jsonuser:****@hooks.example.com" in shown
        for term in ("jsonuser:****", "hooks.example.com", "receiver.example.org/in", "TGRAM"):
            assert api(term) == [rid], term
            assert f'href="/reminders/{rid}"' in page(term), term
        probes = ["jsonuser:S", "jsonuser:S3", PASSWORD, BOT_TOKEN, SMTP_PASSWORD, SIGNING]
        for secret in SECRETS:
            probes += _windows(secret, 4)
        probes = [
            p for p in probes if p.lower() not in shown and p.lower() not in "quarterly report"
        ]
        assert len(probes) > 40
        for probe in probes:
            assert api(probe) == [], probe
            text = page(probe)
            assert f'href="/reminders/{rid}"' not in text, probe
            assert "no reminders match" in html.unescape(text), probe
