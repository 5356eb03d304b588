"""Who may do what: the tokens (Bearer for the API, a login cookie for the dashboard), the role
each grants (the admin token everything, the read token every read and no change), CSRF tokens
for the dashboard's forms, and the loopback-only rule without a token.

Tokens are compared in constant time (hmac.compare_digest), each given token against both. The
login cookie holds an HMAC of the token, not the token; the CSRF token of a form is an HMAC of
the browser's session cookie under a key made at start, so a page of another site can neither
read nor forge it. A browser that logged in once gets a device cookie (an id signed with a key
derived from the admin token): the login throttle judges it by its own failures, not by its
address's (throttle.py).
"""

import hashlib
import hmac
import ipaddress
import re
import secrets
from dataclasses import dataclass, field
from typing import Literal
from urllib.parse import urlsplit

from aiohttp import web

LOGIN_COOKIE = "dq_login"
SESSION_COOKIE = "dq_session"
DEVICE_COOKIE = "dq_device"
# A device cookie outlives the browser's session: a year (browsers cap it at 400 days).
DEVICE_AGE = 365 * 24 * 3600

Role = Literal["admin", "read"]
# What new_session makes; anything else in the cookie is replaced, never used as a key.
_SESSION = re.compile(r"^[A-Za-z0-9_-]{16,64}$")
_DEVICE = re.compile(r"^([A-Za-z0-9_-]{16,64})\.([0-9a-f]{64})$")


@dataclass(frozen=True, slots=True)
class Guard:
    """The server's access rules: its tokens (None: loopback only, no login) and its CSRF key."""

    token: str | None
    read_only: bool = False
    read_token: str | None = None
    key: bytes = field(default_factory=lambda: secrets.token_bytes(32))

    def role_of(self, given: str) -> Role | None:
        """Return the role a token given by a client grants, or None."""
        if self.token is None:
            return None
        admin = _same(given, self.token)
        read = self.read_token is not None and _same(given, self.read_token)
        return "admin" if admin else "read" if read else None

    def bearer(self, request: web.Request) -> Role | None:
        """Return the role of the token in `Authorization: Bearer` (admin without a token)."""
        if self.token is None:
            return "admin"
        scheme, _, given = request.headers.get("Authorization", "").partition(" ")
        return self.role_of(given.strip()) if scheme.lower() == "bearer" else None

    def login_value(self, role: Role) -> str:
        """Return what the login cookie of `role` holds."""
        secret = self.token if role == "admin" else self.read_token
        assert secret is not None
        what = f"duequeue web login {role}".encode()
        return hmac.new(secret.encode(), what, hashlib.sha256).hexdigest()

    def cookie(self, request: web.Request) -> Role | None:
        """Return the role of the request's login cookie (admin for all, without a token)."""
        if self.token is None:
            return "admin"
        given = request.cookies.get(LOGIN_COOKIE, "")
        if _same(given, self.login_value("admin")):
            return "admin"
        if self.read_token is not None and _same(given, self.login_value("read")):
            return "read"
        return None

    def csrf(self, session: str) -> str:
        """Return the CSRF token of the forms shown to the browser session `session`."""
        return hmac.new(self.key, session.encode(), hashlib.sha256).hexdigest()

    def csrf_ok(self, request: web.Request, given: str) -> bool:
        """Return whether a form's CSRF field belongs to the session cookie it came with."""
        session = session_of(request)
        return session is not None and _same(given, self.csrf(session))

    def new_device(self) -> str:
        """Return a device cookie for a browser that has just logged in."""
        device = secrets.token_urlsafe(24)
        return f"{device}.{self._device_mac(device)}"

    def device(self, request: web.Request) -> str | None:
        """Return the id of the request's device cookie if this server signed it, else None."""
        found = _DEVICE.match(request.cookies.get(DEVICE_COOKIE, ""))
        if found is None or self.token is None:
            return None
        return found.group(1) if _same(found.group(2), self._device_mac(found.group(1))) else None

    def _device_mac(self, device: str) -> str:
        assert self.token is not None
        key = hmac.new(self.token.encode(), b"duequeue web device", hashlib.sha256).digest()
        return hmac.new(key, device.encode(), hashlib.sha256).hexdigest()


def session_of(request: web.Request) -> str | None:
    """Return the request's browser-session id, None when it has none (or a forged one)."""
    given = request.cookies.get(SESSION_COOKIE, "")
    return given if _SESSION.match(given) else None


def new_session() -> str:
    """Return a fresh browser-session id."""
    return secrets.token_urlsafe(24)


def set_cookie(
    response: web.StreamResponse, name: str, value: str, secure: bool, max_age: int | None = None
) -> None:
    """Set a cookie no script can read and no other site's request carries."""
    response.set_cookie(
        name, value, httponly=True, samesite="Strict", secure=secure, path="/", max_age=max_age
    )


def is_loopback(host: str) -> bool:
    """Return whether `host` (a --host value, or a Host header's name) is this machine only."""
    name = host.strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def host_name(header: str) -> str:
    """Return the name of a Host header, without its port."""
    if header.startswith("["):
        return header.split("]", 1)[0] + "]"
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


def safe_next(text: str | None) -> str | None:
    """Return where a login may send the browser back to: a path of this site (with its
    query), never another site's (`//host`, `/\\host`, a scheme), nor the login itself."""
    if not text or len(text) > 2048 or not text.startswith("/") or text.startswith("//"):
        return None
    if "\\" in text or any(ord(c) < 0x20 or ord(c) == 0x7F for c in text):
        return None  # browsers read a backslash as a slash, and drop tabs and newlines
    parts = urlsplit(text)
    if parts.scheme or parts.netloc or parts.path in ("/login", "/logout"):
        return None
    return text


def _same(given: str, expected: str) -> bool:
    return hmac.compare_digest(given.encode("utf-8", "replace"), expected.encode())
