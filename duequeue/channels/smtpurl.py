"""Parse DUEQUEUE_SMTP_URL; light enough for settings validation on every command."""

import re
import urllib.parse
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


# A host name or an IP address (an IPv6 one without its brackets): no space, no '%' escape.
_HOST = re.compile(r"[A-Za-z0-9._:-]+")
# A '%' that does not start a %XX escape: unquote() would keep it literally, so the server would
# get another password than the one the user meant to percent-encode.
_BAD_ESCAPE = re.compile(r"%(?![0-9A-Fa-f]{2})")


def parse_smtp_url(url: str, user: str | None = None, password: str | None = None) -> SmtpSettings:
    """Return the settings of an SMTP URL; `user` and `password` (the smtp_user and
    smtp_password settings) fill in credentials the URL does not carry."""
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
    if not _HOST.fullmatch(parts.hostname):
        raise ConfigError(
            f"DUEQUEUE_SMTP_URL: the host {parts.hostname!r} is not a host name or IP address"
        )
    if _BAD_ESCAPE.search(parts.netloc.rpartition("@")[0]):
        raise ConfigError(
            "DUEQUEUE_SMTP_URL: a '%' in the user or password does not start a %XX escape "
            "(write a literal '%' as %25)"
        )
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        # Also where an unescaped '/', '?' or '#' in a password lands; say so, do not echo it.
        raise ConfigError(
            "DUEQUEUE_SMTP_URL: unexpected path, query or fragment "
            f"(percent-encode '/', '?' and '#' in the password; {_URL_HINT})"
        )
    if port == 0:
        raise ConfigError("DUEQUEUE_SMTP_URL: port 0 is not a valid port")
    security, default_port = _SCHEMES[parts.scheme]
    url_user = urllib.parse.unquote(parts.username) if parts.username else None
    url_password = urllib.parse.unquote(parts.password) if parts.password is not None else None
    if url_user is None and url_password is not None:
        raise ConfigError("DUEQUEUE_SMTP_URL: a password is given without a user")
    login = url_user or user or None
    secret = url_password if url_password is not None else password
    if login is not None and secret is None:
        raise ConfigError(
            "DUEQUEUE_SMTP_URL: a user is set but no password (put it in the URL, in "
            "DUEQUEUE_SMTP_PASSWORD or as smtp_password in the config file)"
        )
    return SmtpSettings(parts.hostname, port or default_port, security, login, secret)
