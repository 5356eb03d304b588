"""The dashboard's changes as a person makes them, in a real browser (Debian's chromium through
Selenium, tests/chromium.py) against a real `duequeue serve` with a token: a link to a reminder
opened logged out leads to the login and back to it; its times are on its own clocks beside
UTC; it is rescheduled and paused with forms and confirmations; a filter's reminders are
cancelled after a page that counts them; the whole queue is paused and a tick says so.

With DUEQUEUE_SCREENSHOTS=1 the reminder's page and the bulk confirmation go to docs/img/.
"""

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.chromium import chromium
from tests.procs import ROOT, reap, run_cli
from tests.webserver import Served

TOKEN = "browser-actions-token-0123456789"
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
    import base64

    shot = driver.execute_cdp_cmd(  # type: ignore[attr-defined]
        "Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True}
    )
    path = (SHOTS if KEEP_SHOTS else tmp_path) / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(base64.b64decode(shot["data"]))


def _add(db: Path, *args: str) -> int:
    out = run_cli(db, "add", *args)
    assert out.returncode == 0, out.stderr
    return int(out.stdout)


@pytest.mark.timeout(600)
def test_a_person_reschedules_pauses_and_cancels_on_a_filter(
    browser: "WebDriver", tmp_path: Path
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.wait import WebDriverWait

    db = tmp_path / "dq.db"
    rid = _add(db, "--at", "2030-01-07 09:00", "--tz", "Europe/Paris", "--rrule",
               "FREQ=WEEKLY;BYDAY=MO", "--webhook", "https://hooks.example.com/standup",
               "--subject", "Team standup")  # fmt: skip
    for n in range(4):
        _add(db, "--at", "+2d", "--webhook", "https://billing.example.com/h",
             "--subject", f"Invoice {n} is due")  # fmt: skip
    try:
        with Served(db, env={"DUEQUEUE_WEB_TOKEN": TOKEN}) as s:
            b = browser
            wait = WebDriverWait(b, 60)

            # A link to the reminder, opened logged out: the login, then that very page.
            b.get(f"{s.url}/reminders/{rid}")
            assert "/login?next=" in b.current_url
            assert "Log out" not in b.page_source
            b.find_element(By.NAME, "token").send_keys(TOKEN)
            b.find_element(By.CSS_SELECTOR, "form[action='/login'] button").click()
            wait.until(ec.url_matches(f"/reminders/{rid}$"))
            # The URL changes when the navigation commits, before the page is parsed: wait for it.
            facts = wait.until(
                ec.presence_of_element_located((By.CSS_SELECTOR, "table.facts"))
            ).text
            assert "2030-01-07 08:00:00 UTC (09:00:00 Europe/Paris)" in facts

            # Reschedule with the form: the new time read in the reminder's zone.
            b.find_element(By.LINK_TEXT, "Reschedule…").click()
            wait.until(ec.presence_of_element_located((By.NAME, "at"))).send_keys(
                "2030-01-14 10:30"
            )
            b.find_element(By.XPATH, "//button[normalize-space()='Reschedule']").click()
            result = wait.until(ec.presence_of_element_located((By.ID, "result")))
            assert result.text == f"Rescheduled reminder {rid}."
            moved = b.find_element(By.CSS_SELECTOR, "table.facts").text
            assert "2030-01-14 09:30:00 UTC (10:30:00 Europe/Paris)" in moved
            assert b.find_elements(By.CSS_SELECTOR, "#result .state, span.state") == []

            # Pause it, confirmed; its page then offers Resume.
            b.get(f"{s.url}/reminders/{rid}")
            b.find_element(By.LINK_TEXT, "Pause…").click()
            wait.until(
                ec.presence_of_element_located(
                    (By.XPATH, "//button[normalize-space()='Yes, pause']")
                )
            ).click()
            result = wait.until(ec.presence_of_element_located((By.ID, "result")))
            assert result.text == "1 of 1 changed."
            b.get(f"{s.url}/reminders/{rid}")
            assert b.find_elements(By.LINK_TEXT, "Resume…") != []
            _shot(b, "reminder-paused.png", tmp_path)

            # Cancel every invoice: the filter, then a page with the count, then the result.
            b.get(f"{s.url}/reminders?search=invoice")
            b.find_element(By.PARTIAL_LINK_TEXT, "Cancel all matching").click()
            count = wait.until(ec.presence_of_element_located((By.ID, "count")))
            assert count.text.startswith("4 reminders match now")
            _shot(b, "bulk-cancel.png", tmp_path)
            b.find_element(By.XPATH, "//button[normalize-space()='Yes, cancel 4']").click()
            result = wait.until(ec.presence_of_element_located((By.ID, "result")))
            assert result.text == "4 of 4 changed."

            # Pause the whole queue: a banner says so, and so does a tick.
            b.get(s.url + "/")
            b.find_element(By.LINK_TEXT, "Pause the queue…").click()
            wait.until(
                ec.presence_of_element_located(
                    (By.XPATH, "//button[normalize-space()='Yes, pause']")
                )
            ).click()
            wait.until(ec.presence_of_element_located((By.ID, "result")))
            b.get(s.url + "/")
            banner = b.find_element(By.ID, "queue-paused").text
            assert banner.startswith("The queue is paused since")
            tick = json.loads(run_cli(db, "tick", "--json").stdout)
            assert tick["claimed"] == 0 and tick["paused_since"] is not None
            b.find_element(By.LINK_TEXT, "Resume…").click()
            wait.until(
                ec.presence_of_element_located(
                    (By.XPATH, "//button[normalize-space()='Yes, resume']")
                )
            ).click()
            result = wait.until(ec.presence_of_element_located((By.ID, "result")))
            assert result.text.startswith("The queue is resumed")
    finally:
        reap()
