"""Who may do what: the token (Bearer for the API, a login cookie for the dashboard), CSRF
tokens for the dashboard's forms, and the loopback-only rule without a token.

Tokens are compared in constant time (hmac.compare_digest). The login cookie holds an HMAC of
the token, not the token; the CSRF token of a form is an HMAC of the browser's session cookie
under a key made at start, so a page of another site can neither read nor forge it.
"""

import hashlib
import hmac
import ipaddress
import secrets
from dataclasses import dataclass, field

from aiohttp import web

LOGIN_COOKIE = "dq_login"
SESSION_COOKIE = "dq_session"


@dataclass(frozen=True, slots=True)
class Guard:
    """The server's access rules: its token (None: loopback only) and its CSRF key."""

    token: str | None
    read_only: bool = False
    key: bytes = field(default_factory=lambda: secrets.token_bytes(32))

    def bearer_ok(self, request: web.Request) -> bool:
        """Return whether the request carries the token as `Authorization: Bearer`."""
        if self.token is None:
            return True
        scheme, _, given = request.headers.get("Authorization", "").partition(" ")
        return scheme.lower() == "bearer" and _same(given.strip(), self.token)

    def login_value(self) -> str:
        """Return what the login cookie holds once the token was given."""
        assert self.token is not None
        return hmac.new(self.token.encode(), b"duequeue web login", hashlib.sha256).hexdigest()

    def cookie_ok(self, request: web.Request) -> bool:
        """Return whether the request carries a valid login cookie (always, without a token)."""
        if self.token is None:
            return True
        return _same(request.cookies.get(LOGIN_COOKIE, ""), self.login_value())

    def token_ok(self, given: str) -> bool:
        """Return whether `given` (the login form's field) is the token."""
        return self.token is not None and _same(given, self.token)

    def csrf(self, session: str) -> str:
        """Return the CSRF token of the forms shown to the browser session `session`."""
        return hmac.new(self.key, session.encode(), hashlib.sha256).hexdigest()

    def csrf_ok(self, request: web.Request, given: str) -> bool:
        """Return whether a form's CSRF field belongs to the session cookie it came with."""
        session = request.cookies.get(SESSION_COOKIE, "")
        return bool(session) and _same(given, self.csrf(session))


def new_session() -> str:
    """Return a fresh browser-session id."""
    return secrets.token_urlsafe(24)


def set_cookie(response: web.StreamResponse, name: str, value: str, secure: bool) -> None:
    """Set a cookie no script can read and no other site's request carries."""
    response.set_cookie(name, value, httponly=True, samesite="Strict", secure=secure, path="/")


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


def _same(given: str, expected: str) -> bool:
    return hmac.compare_digest(given.encode("utf-8", "replace"), expected.encode())
