"""`duequeue serve` as a real process on loopback, and a real HTTP client (aiohttp's) for it.

`Served` starts `python -m duequeue --db DB serve --port 0` (tests/procs.py), reads the URL it
announces, keeps the log it writes after that (`log`, whole once it has stopped), and stops it
with SIGTERM. `fetch` is one request through aiohttp's client, returned whole.
"""

import asyncio
import json
import re
import signal
import socket
import ssl
import subprocess
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp

from tests.procs import LIMIT_S, run_cli, spawn_cli

_ANNOUNCED = re.compile(r"listening on (http://\S+?)/?$")


@dataclass
class Reply:
    status: int
    headers: Mapping[str, str]
    text: str
    cookies: Mapping[str, Any]  # name -> http.cookies.Morsel, attributes and all

    def json(self) -> Any:
        return json.loads(self.text)


class Served:
    """A running `duequeue serve` on `db`; use as a context manager."""

    def __init__(self, db: Path | str, *flags: str, env: Mapping[str, str] | None = None) -> None:
        self.db = db
        self.flags = flags
        self.env = dict(env or {})
        self.url = ""
        self.proc: subprocess.Popen[str] | None = None
        self._lines: list[str] = []
        self._reader: threading.Thread | None = None

    def __enter__(self) -> "Served":
        # serve refuses a missing database (as tick does): make it first, as a unit's setup does.
        made = run_cli(Path(str(self.db)), "--db", str(self.db), "init", env=self.env)
        assert made.returncode == 0, made.stderr
        # --db names the database whatever it is; spawn_cli's DUEQUEUE_DB is then moot.
        self.proc = spawn_cli(
            Path(str(self.db)), "--db", str(self.db), "serve", "--port", "0", *self.flags,
            env=self.env,
        )  # fmt: skip
        assert self.proc.stderr is not None
        line = self.proc.stderr.readline()
        found = _ANNOUNCED.search(line.strip())
        if found is None:
            self.proc.kill()
            _, rest = self.proc.communicate(timeout=LIMIT_S)
            raise AssertionError(f"serve did not start: {line}{rest}")
        self.url = found.group(1)
        # Read the log as it comes, so that a chatty server never blocks on a full pipe.
        self._reader = threading.Thread(target=self._read_log, args=(self.proc,), daemon=True)
        self._reader.start()
        return self

    def _read_log(self, proc: "subprocess.Popen[str]") -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            self._lines.append(line)

    @property
    def log(self) -> str:
        """Return what the server wrote on stderr after it announced its URL."""
        return "".join(self._lines)

    def stop(self) -> int:
        """Send SIGTERM and return the exit code, with the whole log read."""
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=LIMIT_S)
        if self._reader is not None:
            self._reader.join(timeout=LIMIT_S)
        return self.proc.returncode

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def raw(self, request: bytes) -> bytes:
        """Send `request` as it is on a new connection (what no HTTP client would send); return
        all the server answers until it closes."""
        host, _, port = self.url.removeprefix("http://").rpartition(":")
        with socket.create_connection((host.strip("[]"), int(port)), timeout=LIMIT_S) as conn:
            conn.sendall(request)
            answer = b""
            while chunk := conn.recv(65536):
                answer += chunk
        return answer

    def fetch(
        self,
        method: str,
        path: str,
        *,
        json_body: Any = None,
        data: bytes | Mapping[str, str] | None = None,
        headers: Mapping[str, str] | None = None,
        cookies: Mapping[str, str] | None = None,
    ) -> Reply:
        """Make one request to this server."""
        return fetch(method, self.url + path, json_body=json_body, data=data, headers=headers,
                     cookies=cookies)  # fmt: skip


def fetch(
    method: str,
    url: str,
    *,
    json_body: Any = None,
    data: bytes | Mapping[str, str] | None = None,
    headers: Mapping[str, str] | None = None,
    cookies: Mapping[str, str] | None = None,
    tls: ssl.SSLContext | None = None,
) -> Reply:
    """Make one request through aiohttp's client (redirects not followed); an https URL's
    server is checked with `tls` (a context trusting the test's CA)."""

    async def go() -> Reply:
        async with (
            aiohttp.ClientSession(cookies=dict(cookies or {})) as session,
            session.request(
                method, url, json=json_body, data=data, headers=dict(headers or {}),
                allow_redirects=False, ssl=tls if tls is not None else True,
            ) as r,
        ):  # fmt: skip
            return Reply(r.status, dict(r.headers), await r.text(), dict(r.cookies))

    return asyncio.run(asyncio.wait_for(go(), LIMIT_S))
