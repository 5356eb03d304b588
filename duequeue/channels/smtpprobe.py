"""Check that an SMTP server answers, without sending anything: connect, EHLO, NOOP, QUIT."""

import smtplib
import socket
import ssl

from duequeue.channels import smtpconnect
from duequeue.channels.smtpurl import parse_smtp_url

_FIX = "start the SMTP server or correct DUEQUEUE_SMTP_URL (host, port, scheme, user and password)"


class LoginRequiredError(smtplib.SMTPResponseException):
    """The server refuses mail without a login, and no user is set."""


def probe(
    smtp_url: str,
    timeout: float,
    user: str | None = None,
    password: str | None = None,
    sender: str | None = None,
) -> str:
    """Return what the server said; raise OSError or smtplib.SMTPException when it fails.

    The session opens by the routine deliveries use (connect, TLS, EHLO, STARTTLS, login), so a
    wrong password, an untrusted certificate or a missing STARTTLS shows here.
    """
    settings = parse_smtp_url(smtp_url, user, password)
    context = smtpconnect.tls_context()
    conn = smtpconnect.client(settings, timeout, context)
    smtpconnect.establish(conn, settings, context)
    try:
        code, reply = conn.noop()
        if code != 250:
            raise smtplib.SMTPResponseException(code, reply)
        banner = reply.decode("utf-8", "replace").strip()
        if settings.user is None and conn.has_extn("auth"):
            _mail_without_login(conn, sender)
        conn.quit()
    finally:
        conn.close()
    secured = {"none": "", "starttls": ", STARTTLS", "tls": ", TLS"}[settings.security]
    login = f", logged in as {settings.user}" if settings.user is not None else ""
    return (
        f"{settings.host}:{settings.port} answered EHLO and NOOP{secured}{login} ({banner or 'ok'})"
    )


def _mail_without_login(conn: smtplib.SMTP, sender: str | None) -> None:
    """Raise LoginRequiredError if the server, which offers AUTH, refuses MAIL without it.

    A submission server (port 587) usually takes no mail from a client that has not logged in;
    without this every email would die at the tick (530 or 554). MAIL then RSET sends nothing.
    """
    from email.utils import parseaddr  # lazy: only a server that offers AUTH gets here

    code, reply = conn.mail(parseaddr(sender or "")[1] if sender else "")
    if code == 530 or code >= 500:
        raise LoginRequiredError(code, reply)
    conn.rset()


def describe(
    exc: BaseException, smtp_url: str, user: str | None = None, password: str | None = None
) -> str:
    """Return one line about a failed probe, never quoting the password."""
    settings = parse_smtp_url(smtp_url, user, password)
    where = f"{settings.host}:{settings.port}"
    if isinstance(exc, ConnectionRefusedError):
        return f"connection refused ({where})"
    if isinstance(exc, TimeoutError | socket.timeout):
        return f"no answer within the timeout ({where})"
    if isinstance(exc, socket.gaierror):
        return f"host lookup failed for {settings.host}"
    if isinstance(exc, smtplib.SMTPAuthenticationError):
        return f"login refused for user {settings.user} ({where}): {exc.smtp_code}"
    if isinstance(exc, LoginRequiredError):
        said = (
            exc.smtp_error.decode("utf-8", "replace")
            if isinstance(exc.smtp_error, bytes)
            else exc.smtp_error
        )
        return (
            f"the server requires a login (AUTH) and no user is set: it answered MAIL with "
            f"{exc.smtp_code} {' '.join(str(said).split())} ({where}); every email would fail"
        )
    if isinstance(exc, ssl.SSLCertVerificationError):
        return f"TLS certificate not accepted ({where}): {exc.verify_message}"
    if isinstance(exc, ssl.SSLError):
        return f"TLS handshake failed ({where}): {exc.reason or exc}"
    if isinstance(exc, smtplib.SMTPResponseException):
        return f"unexpected reply {exc.smtp_code} ({where})"
    text = " ".join(str(exc).split())
    if settings.password and len(settings.password) >= 4:
        text = text.replace(settings.password, "***")
    return f"{type(exc).__name__} ({where}): {text}"


def advice(exc: BaseException) -> str:
    """Return how to fix what `exc` says is wrong."""
    if isinstance(exc, LoginRequiredError):
        return (
            "set the user and password: in DUEQUEUE_SMTP_URL (smtp+starttls://user:pass@host), "
            "DUEQUEUE_SMTP_USER / DUEQUEUE_SMTP_PASSWORD, or smtp_user / smtp_password in the "
            "config file"
        )
    if isinstance(exc, smtplib.SMTPAuthenticationError):
        return (
            "correct the user and password (in DUEQUEUE_SMTP_URL, percent-encoded, or in "
            "DUEQUEUE_SMTP_USER / DUEQUEUE_SMTP_PASSWORD, or smtp_user / smtp_password in the "
            "config file)"
        )
    if isinstance(exc, ssl.SSLCertVerificationError):
        return (
            "a certificate from a private CA: set SSL_CERT_FILE to a PEM bundle holding that CA "
            "and the public ones (docs/email-and-webhooks.md: Email over TLS); a name mismatch: "
            "use the host name the certificate was issued for in DUEQUEUE_SMTP_URL"
        )
    if isinstance(exc, ssl.SSLError):
        return (
            "check the scheme against the port: smtps:// for TLS from the start (465), "
            "smtp+starttls:// for STARTTLS (587)"
        )
    if isinstance(exc, smtplib.SMTPNotSupportedError):
        return (
            "the server does not offer what DUEQUEUE_SMTP_URL asks for (STARTTLS or AUTH): "
            "check the port and scheme"
        )
    return _FIX
