"""`duequeue serve` behind a real reverse proxy that terminates TLS, as docs/dashboard.md
recommends: Debian's nginx with a throw-away certificate (tests/certs.py) on a loopback port,
started by the test with its own config in tmp_path (never the system's nginx), in front of a
real `serve`, driven by Chromium. nginx connects from 127.0.0.2 (`proxy_bind`), so that the
test's own connections from 127.0.0.1 are an untrusted peer's.

Where nginx is missing the test skips, except in CI, where it fails: .ci/run installs it.
"""

import shutil
import signal
import socket
import ssl
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.certs import TestCa
from tests.chromium import chromium, need
from tests.procs import LIMIT_S, reap, run_cli
from tests.webserver import Served, fetch

TOKEN = "proxy-test-token-0123456789"
NGINX = shutil.which("nginx") or "/usr/sbin/nginx"
PROXY_ADDRESS = "127.0.0.2"  # where nginx connects to serve from: the one trusted peer

if TYPE_CHECKING := False:
    pass

_CONF = """
daemon off;
master_process off;
worker_processes 1;
pid {d}/nginx.pid;
error_log {d}/error.log info;
events {{ worker_connections 256; }}
http {{
    access_log {d}/access.log;
    client_body_temp_path {d}/body;
    proxy_temp_path {d}/proxy;
    fastcgi_temp_path {d}/fastcgi;
    uwsgi_temp_path {d}/uwsgi;
    scgi_temp_path {d}/scgi;
    server {{
        listen 127.0.0.1:{port} ssl;
        ssl_certificate {cert};
        ssl_certificate_key {key};
        location / {{
            proxy_pass http://{upstream};
            proxy_bind {bind};
            proxy_set_header Host              $http_host;
            proxy_set_header X-Forwarded-Proto $scheme;
            proxy_set_header X-Forwarded-Host  $http_host;
            proxy_set_header X-Forwarded-For   $proxy_add_x_forwarded_for;
        }}
    }}
}}
"""


class Nginx:
    """nginx terminating TLS on a free loopback port in front of `upstream`."""

    def __init__(self, directory: Path, ca: TestCa, upstream: str) -> None:
        self.directory = directory
        self.ca = ca
        self.upstream = upstream
        self.proc: subprocess.Popen[bytes] | None = None
        self.url = ""

    def __enter__(self) -> "Nginx":
        self.directory.mkdir(parents=True)
        for _ in range(5):  # a free port taken by someone else before nginx binds it: again
            port = _free_port()
            conf = self.directory / "nginx.conf"
            conf.write_text(_CONF.format(
                d=self.directory, port=port, cert=self.ca.cert_file, key=self.ca.key_file,
                upstream=self.upstream, bind=PROXY_ADDRESS))  # fmt: skip
            self.proc = subprocess.Popen(
                [NGINX, "-p", str(self.directory), "-c", str(conf)],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )  # fmt: skip
            if _listening(port, self.proc):
                self.url = f"https://127.0.0.1:{port}"
                return self
            self.proc.wait(timeout=LIMIT_S)
        raise AssertionError((self.directory / "error.log").read_text())

    def __exit__(self, *exc: object) -> None:
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)  # nginx's fast shutdown
        self.proc.wait(timeout=LIMIT_S)

    def tls(self) -> ssl.SSLContext:
        """Return a client context that trusts the proxy's certificate."""
        return ssl.create_default_context(cafile=self.ca.ca_file)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _listening(port: int, proc: "subprocess.Popen[bytes]") -> bool:
    """Wait until nginx accepts on `port` (True) or has exited (False), within the limit."""
    deadline = time.monotonic() + LIMIT_S
    while proc.poll() is None and time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return True
        except OSError:
            time.sleep(0.05)  # a bounded poll for the port to open, not a race to win
    return False


@pytest.fixture
def ca(tmp_path: Path) -> TestCa:
    need([] if Path(NGINX).exists() else ["nginx"], "apt-get install nginx-light")
    return TestCa.create(tmp_path / "certs")


@pytest.fixture(autouse=True)
def _reaped() -> Iterator[None]:
    yield
    reap()


def _upstream(s: Served) -> str:
    return s.url.removeprefix("http://")


def _csrf(text: str) -> str:
    return text.split('name="csrf" value="', 1)[1].split('"', 1)[0]


@pytest.mark.timeout(300)
def test_a_person_logs_in_and_acts_through_a_tls_proxy(tmp_path: Path, ca: TestCa) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.wait import WebDriverWait

    db = tmp_path / "dq.db"
    env = {"DUEQUEUE_WEB_TOKEN": TOKEN}
    with (
        Served(db, "--forwarded-allow-ips", PROXY_ADDRESS, env=env) as s,
        Nginx(tmp_path / "nginx", ca, _upstream(s)) as proxy,
        chromium(tmp_path / "chromium", insecure_certs=True) as b,
    ):
        # A script adds a reminder through the proxy, with the token.
        bearer = {"Authorization": f"Bearer {TOKEN}"}
        added = fetch("POST", proxy.url + "/api/v1/reminders", headers=bearer, tls=proxy.tls(),
                      json_body={"at": "+1d", "emails": ["ann@example.com"],
                                 "subject": "Renew the certificate"})  # fmt: skip
        assert added.status == 201, added.text
        rid = added.json()["id"]

        wait = WebDriverWait(b, 60)
        b.get(proxy.url + "/")
        wait.until(ec.url_to_be(proxy.url + "/login"))  # a relative redirect, kept on https
        b.find_element(By.NAME, "token").send_keys("not-the-token-0123456789")
        b.find_element(By.CSS_SELECTOR, "form[action='/login'] button").click()
        wait.until(ec.text_to_be_present_in_element((By.CLASS_NAME, "error"), "not the token"))
        b.find_element(By.NAME, "token").send_keys(TOKEN)
        b.find_element(By.CSS_SELECTOR, "form[action='/login'] button").click()
        wait.until(ec.title_contains("Overview"))
        assert b.current_url == proxy.url + "/"
        cookies = {c["name"]: c for c in b.get_cookies()}
        for name in ("dq_login", "dq_session", "dq_device"):
            assert cookies[name]["secure"] is True, cookies[name]
            assert cookies[name]["httpOnly"] is True and cookies[name]["sameSite"] == "Strict"

        # Cancel it through the dashboard's forms (a confirmation page, then its POST).
        b.get(f"{proxy.url}/reminders/{rid}")
        wait.until(ec.presence_of_element_located((By.LINK_TEXT, "Cancel…"))).click()
        wait.until(
            ec.presence_of_element_located((By.XPATH, "//button[normalize-space()='Yes, cancel']"))
        ).click()
        result = wait.until(ec.presence_of_element_located((By.ID, "result")))
        assert result.text == "1 of 1 changed."
        assert b.current_url == f"{proxy.url}/reminders/{rid}/cancel"

        # Log out, through its form.
        b.find_element(By.XPATH, "//button[normalize-space()='Log out']").click()
        wait.until(ec.url_to_be(proxy.url + "/login"))
        assert "dq_login" not in {c["name"] for c in b.get_cookies()}
    assert s.stop() == 0
    got = run_cli(db, "inspect", "--all", "--json")
    assert '"cancelled"' in got.stdout
    # The log names the browser (127.0.0.1, as nginx reported it), not nginx itself.
    assert "a wrong token for the login from 127.0.0.1" in s.log
    assert PROXY_ADDRESS not in s.log


@pytest.mark.timeout(300)
def test_without_trusting_the_proxy_its_forms_are_refused(tmp_path: Path, ca: TestCa) -> None:
    """What every user behind a proxy met before --forwarded-allow-ips: the login refused."""
    db = tmp_path / "dq.db"
    with (
        Served(db, env={"DUEQUEUE_WEB_TOKEN": TOKEN}) as s,
        Nginx(tmp_path / "nginx", ca, _upstream(s)) as proxy,
    ):
        form = fetch("GET", proxy.url + "/login", tls=proxy.tls())
        assert not form.cookies["dq_session"]["secure"]
        jar = {"dq_session": form.cookies["dq_session"].value}
        login = fetch("POST", proxy.url + "/login", tls=proxy.tls(), cookies=jar,
                      data={"csrf": _csrf(form.text), "token": TOKEN},
                      headers={"Origin": proxy.url})  # fmt: skip
        assert login.status == 403 and "a form of another site" in login.text
    assert s.stop() == 0


@pytest.mark.timeout(300)
def test_forwarding_headers_from_anyone_but_the_proxy_are_ignored(
    tmp_path: Path, ca: TestCa
) -> None:
    db = tmp_path / "dq.db"
    with (
        Served(db, "--forwarded-allow-ips", PROXY_ADDRESS, env={"DUEQUEUE_WEB_TOKEN": TOKEN}) as s,
        Nginx(tmp_path / "nginx", ca, _upstream(s)) as proxy,
    ):
        spoof = {"X-Forwarded-Proto": "https", "X-Forwarded-Host": "evil.example",
                 "X-Forwarded-For": "203.0.113.66",
                 "Forwarded": "for=203.0.113.67;proto=https;host=evil.example"}  # fmt: skip
        # Straight to serve, past the proxy: the peer (127.0.0.1) is not trusted.
        direct = s.fetch("GET", "/login", headers=spoof)
        assert not direct.cookies["dq_session"]["secure"]
        jar = {"dq_session": direct.cookies["dq_session"].value}
        wrong = {"csrf": _csrf(direct.text), "token": "wrong-0123456789abcdef"}
        evil_origin = {**spoof, "Origin": "https://evil.example"}
        forged = s.fetch("POST", "/login", cookies=jar, headers=evil_origin, data=wrong)
        assert forged.status == 403 and "a form of another site" in forged.text
        assert s.fetch("POST", "/login", cookies=jar, headers=spoof, data=wrong).status == 401
        # Through the proxy: nginx replaces the scheme and host and appends the real peer, so
        # what the client wrote itself is not believed either.
        via = fetch("GET", proxy.url + "/login", tls=proxy.tls(), headers=spoof)
        assert via.cookies["dq_session"]["secure"]
        jar = {"dq_session": via.cookies["dq_session"].value}
        wrong = {"csrf": _csrf(via.text), "token": "wrong-0123456789abcdef"}
        evil = fetch("POST", proxy.url + "/login", tls=proxy.tls(), cookies=jar,
                     headers=evil_origin, data=wrong)  # fmt: skip
        assert evil.status == 403
        proxied = fetch("POST", proxy.url + "/login", tls=proxy.tls(), cookies=jar,
                        headers={**spoof, "Origin": proxy.url}, data=wrong)  # fmt: skip
        assert proxied.status == 401
    assert s.stop() == 0
    wrongs = [line for line in s.log.splitlines() if "a wrong token" in line]
    assert len(wrongs) == 2 and all("from 127.0.0.1" in line for line in wrongs), s.log
    assert "203.0.113.6" not in s.log and "evil.example" not in s.log
