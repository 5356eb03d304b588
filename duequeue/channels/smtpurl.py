"""Parse DUEQUEUE_SMTP_URL; light enough for settings validation on every command."""

import os
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from duequeue.errors import ConfigError

Security = Literal["none", "starttls", "tls"]

_SCHEMES: dict[str, tuple[Security, int]] = {
    "smtp": ("none", 25),
    "smtp+starttls": ("starttls", 587),
    "smtps": ("tls", 465),
}
_URL_HINT = "expected smtp://, smtp+starttls:// or smtps://[user:password@]host[:port]"


@dataclass(frozen=True, slots=True)
class SmtpSettings:
    """Where and how to reach the SMTP server; the repr never shows the password."""

    host: str
    port: int
    security: Security
    user: str | None = None
    password: str | None = field(default=None, repr=False)


def parse_smtp_url(url: str, env: Mapping[str, str] = os.environ) -> SmtpSettings:
    """Return the settings of an SMTP URL; credentials missing from it come from `env`."""
    try:
        parts = urllib.parse.urlsplit(url.strip())
        port = parts.port
    except ValueError:
        # Never quote the URL or the parser's message: both may contain the password.
        raise ConfigError(f"DUEQUEUE_SMTP_URL: not a valid URL ({_URL_HINT})") from None
    if parts.scheme not in _SCHEMES:
        raise ConfigError(f"DUEQUEUE_SMTP_URL: unsupported scheme ({_URL_HINT})")
    if not parts.hostname:
        raise ConfigError(f"DUEQUEUE_SMTP_URL: no host ({_URL_HINT})")
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        # Also where an unescaped '/', '?' or '#' in a password lands; say so, do not echo it.
        raise ConfigError(
            "DUEQUEUE_SMTP_URL: unexpected path, query or fragment "
            f"(percent-encode '/', '?' and '#' in the password; {_URL_HINT})"
        )
    if port == 0:
        raise ConfigError("DUEQUEUE_SMTP_URL: port 0 is not a valid port")
    security, default_port = _SCHEMES[parts.scheme]
    user = urllib.parse.unquote(parts.username) if parts.username else None
    password = urllib.parse.unquote(parts.password) if parts.password is not None else None
    if user is None:
        if password is not None:
            raise ConfigError("DUEQUEUE_SMTP_URL: a password is given without a user")
        user = env.get("DUEQUEUE_SMTP_USER") or None
    if user is not None and password is None:
        password = env.get("DUEQUEUE_SMTP_PASSWORD")
        if password is None:
            raise ConfigError(
                "DUEQUEUE_SMTP_URL: a user is set but no password "
                "(put it in the URL or in DUEQUEUE_SMTP_PASSWORD)"
            )
    return SmtpSettings(parts.hostname, port or default_port, security, user, password)
