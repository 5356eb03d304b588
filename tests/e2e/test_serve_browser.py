"""The dashboard as a person uses it, in a real browser: Debian's chromium, driven by Selenium
through chromium-driver, against a real `duequeue serve` with a token. Log in, find a dead
letter, open it, retry it, watch the counts change after a tick, cancel a reminder, page through
10^4 reminders.

With DUEQUEUE_SCREENSHOTS=1 the screenshots of the overview, a reminder and the dead letters go
to docs/img/ (docs/dashboard.md shows them). Where chromium is missing the test skips, except in
CI (CI or DUEQUEUE_TEST_PG_REQUIRED set), where it fails: .ci/run installs it (tests/chromium.py).
"""

import json
import os
import re
import shutil
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.chromium import CHROMIUM, chromium
from tests.procs import ROOT, reap, run_cli
from tests.servers import HttpSink, Reply
from tests.webserver import Served

TOKEN = "browser-test-token-0123456789"
MANY = 10_000
SHOTS = ROOT / "docs" / "img"
# Read at import: the autouse isolated_env fixture removes DUEQUEUE_* variables from each test.
KEEP_SHOTS = os.environ.get("DUEQUEUE_SCREENSHOTS") == "1"

if TYPE_CHECKING := False:
    from selenium.webdriver.remote.webdriver import WebDriver


@pytest.fixture
def browser(tmp_path: Path) -> Iterator["WebDriver"]:
    with chromium(tmp_path / "chromium") as driver:
        yield driver


def _shot(driver: "WebDriver", name: str, tmp_path: Path) -> None:
    # The whole page, as a person scrolls through it (DevTools' capture beyond the viewport).
    import base64

    shot = driver.execute_cdp_cmd(  # type: ignore[attr-defined]
        "Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True}
    )
    path = (SHOTS if KEEP_SHOTS else tmp_path) / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(base64.b64decode(shot["data"]))


def _count(driver: "WebDriver", card: str) -> int:
    from selenium.webdriver.common.by import By

    return int(driver.find_element(By.CSS_SELECTOR, f"#count-{card} .n").text)


API_TOKEN = "tok-9f8e7d6c5b4a3210"


def _seed(db: Path, http: HttpSink, tmp_path: Path) -> int:
    """Make a queue a person would look at: deliveries in the ledger, a dead letter, rows due
    over the next day, and 10^4 reminders in all. Return the dead reminder's id."""
    http.respond("/gone", Reply(400, body=b"no such invoice"))
    now = datetime.now(UTC)
    lines = []
    for i in range(MANY - 30):
        at = now + timedelta(minutes=5 + (i * 7919) % (24 * 60))
        lines.append(json.dumps({"at": at.isoformat(), "subject": f"Invoice {i} is due",
                                 "webhooks": [f"https://billing.example.com/hooks/{i % 40}"],
                                 "key": f"invoice-{i}"}))  # fmt: skip
    (tmp_path / "seed.jsonl").write_text("\n".join(lines) + "\n")
    assert run_cli(db, "import", str(tmp_path / "seed.jsonl")).returncode == 0
    for i in range(25):
        run_cli(db, "add", "--at", "now", "--webhook", http.url(f"/ok/{i}"), "--subject",
                f"Standup {i}")  # fmt: skip
    add = run_cli(db, "add", "--at", "now", "--webhook", http.url("/gone"),
                  "--email", "ops@example.com", "--subject", "Renew <b>TLS</b> certificate",
                  "--body", "The certificate of billing.example.com expires on Friday.",
                  "--data", '{"domain": "billing.example.com", "api_token": "' + API_TOKEN + '"}',
                  "--key", "cert-renewal")  # fmt: skip
    dead = int(add.stdout.strip())
    run_cli(db, "add", "--at", "+1h", "--cron", "0 9 * * 1-5", "--tz", "Europe/Paris",
            "--webhook", http.url("/daily"), "--subject", "Daily report")  # fmt: skip
    env = {"DUEQUEUE_MAX_RETRIES": "1"}
    assert run_cli(db, "tick", env=env).returncode == 0
    return dead


@pytest.mark.timeout(600)
def test_a_person_finds_a_dead_letter_retries_it_and_pages_through(
    browser: "WebDriver", http: HttpSink, tmp_path: Path
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.wait import WebDriverWait

    db = tmp_path / "dq.db"
    dead = _seed(db, http, tmp_path)
    try:
        with Served(db, env={"DUEQUEUE_WEB_TOKEN": TOKEN}) as s:
            b = browser
            # A click that submits a form returns before the next page has loaded: each check
            # after one waits for that page (an event), as long as a busy machine needs.
            wait = WebDriverWait(b, 60)
            # Log in: the dashboard sends a stranger to the login form.
            b.get(s.url + "/")
            assert b.current_url.endswith("/login")
            b.find_element(By.NAME, "token").send_keys(TOKEN)
            b.find_element(By.CSS_SELECTOR, "form[action='/login'] button").click()
            wait.until(ec.title_contains("Overview"))
            assert b.title.startswith("Overview")
            assert _count(b, "dead") == 1
            pending_before = _count(b, "pending")
            assert b.find_elements(By.CSS_SELECTOR, "svg.chart") != []
            _shot(b, "overview.png", tmp_path)

            # Find the dead letter: the card links to the filtered list.
            b.find_element(By.CSS_SELECTOR, "#count-dead a").click()
            wait.until(ec.url_contains("state=dead"))
            rows = b.find_elements(By.CSS_SELECTOR, "tbody tr")
            assert len(rows) == 1
            # The subject's markup is text, not markup.
            assert "Renew <b>TLS</b> certificate" in rows[0].text
            _shot(b, "dead-letters.png", tmp_path)

            # Open it: its targets, its attempts, its dead letter.
            b.find_element(By.LINK_TEXT, "Renew <b>TLS</b> certificate").click()
            wait.until(ec.url_matches(f"/reminders/{dead}$"))
            page = b.page_source
            assert "awaiting retry" in page and "no such invoice" in page
            # What it sends, its data's token masked.
            assert "expires on Friday" in page and '"api_token": "****"' in page
            assert API_TOKEN not in page
            _shot(b, "reminder.png", tmp_path)

            # Retry it, confirmed on a page of its own.
            b.find_element(By.LINK_TEXT, "Retry…").click()
            wait.until(ec.text_to_be_present_in_element((By.TAG_NAME, "h1"), "Retry reminder"))
            wait.until(
                ec.presence_of_element_located(
                    (By.XPATH, "//button[normalize-space()='Yes, retry']")
                )
            ).click()
            result = wait.until(ec.presence_of_element_located((By.ID, "result")))
            assert result.text == "1 of 1 changed."

            # A tick delivers the retried fire (the endpoint is fixed); the counts follow.
            http.respond("/gone", Reply(200))
            assert run_cli(db, "tick").returncode == 0
            b.get(s.url + "/")
            assert _count(b, "dead") == 0
            sent = b.find_element(By.XPATH, "//th[starts-with(., 'sent / failed, last hour')]"
                                            "/following-sibling::td").text  # fmt: skip
            assert sent.startswith("26 / ")  # the 25 standups and the retried fire

            # Cancel a reminder.
            b.get(s.url + "/reminders?search=Daily+report")
            b.find_element(By.LINK_TEXT, "Daily report").click()
            wait.until(ec.presence_of_element_located((By.LINK_TEXT, "Cancel…"))).click()
            wait.until(
                ec.presence_of_element_located(
                    (By.XPATH, "//button[normalize-space()='Yes, cancel']")
                )
            ).click()
            result = wait.until(ec.presence_of_element_located((By.ID, "result")))
            assert result.text == "1 of 1 changed."
            b.get(s.url + "/")
            assert _count(b, "cancelled") == 1
            assert _count(b, "pending") == pending_before - 1

            # Page through every reminder, 50 a page, by the Next page link.
            b.get(s.url + "/reminders")
            seen: list[int] = []
            while True:
                seen += [int(x) for x in re.findall(r'<td><a href="/reminders/(\d+)">\1</a>',
                                                    b.page_source)]  # fmt: skip
                nxt = b.find_elements(By.ID, "next-page")
                if not nxt:
                    break
                nxt[0].click()
                wait.until(ec.staleness_of(nxt[0]))  # the next page, not this one read again
            total = MANY - 30 + 25 + 2
            assert len(seen) == total and len(set(seen)) == total
            assert seen == sorted(seen, reverse=True)
    finally:
        reap()
    assert shutil.which("chromium") or Path(CHROMIUM).exists()
