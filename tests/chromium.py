"""Debian's chromium, driven by Selenium through chromium-driver, for the tests that use the
dashboard as a person does (tests/e2e/test_serve_browser.py, test_serve_proxy.py).

Where chromium, its driver or selenium is missing a test skips, except in CI (CI or
DUEQUEUE_TEST_PG_REQUIRED set), where it fails: .ci/run installs them.
"""

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

CHROMIUM = "/usr/bin/chromium"
DRIVER = "/usr/bin/chromedriver"
# Read at import: the autouse isolated_env fixture removes DUEQUEUE_* variables from each test.
IN_CI = bool(os.environ.get("CI") or os.environ.get("DUEQUEUE_TEST_PG_REQUIRED"))

if TYPE_CHECKING := False:
    from selenium.webdriver.remote.webdriver import WebDriver


def need(missing: list[str], install: str) -> None:
    """Skip (fail in CI) when something a test needs is missing, saying how to install it."""
    if not missing:
        return
    why = f"{', '.join(missing)} missing: {install}"
    if IN_CI:
        pytest.fail(why)
    pytest.skip(why)


def browser_or_skip() -> None:
    missing = [p for p in (CHROMIUM, DRIVER) if not Path(p).exists()]
    try:
        import selenium  # noqa: F401 - only whether it is there
    except ImportError:
        missing.append("selenium (pip)")
    need(missing, "apt-get install chromium chromium-driver; pip install selenium")


@contextmanager
def chromium(profile: Path, *, insecure_certs: bool = False) -> Iterator["WebDriver"]:
    """Run a headless chromium with its profile in `profile`; with `insecure_certs`, it accepts
    a certificate no CA it knows signed (a test's own)."""
    browser_or_skip()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    options.accept_insecure_certs = insecure_certs
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                "--window-size=1280,1000", f"--user-data-dir={profile}"):  # fmt: skip
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(DRIVER), options=options)
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()
