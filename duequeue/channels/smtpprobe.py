"""Check that an SMTP server answers, without sending anything: connect, EHLO, NOOP, QUIT."""

import smtplib
import socket
import ssl

from duequeue.channels.smtpurl import parse_smtp_url


def probe(smtp_url: str, timeout: float) -> str:
    """Return what the server said; raise OSError or smtplib.SMTPException when it fails.

    STARTTLS and login run as a real delivery would run them, so a wrong password shows here.
    """
    settings = parse_smtp_url(smtp_url)
    context = ssl.create_default_context()
    conn: smtplib.SMTP
    if settings.security == "tls":
        conn = smtplib.SMTP_SSL(settings.host, settings.port, timeout=timeout, context=context)
    else:
        conn = smtplib.SMTP(settings.host, settings.port, timeout=timeout)
    try:
        code, reply = conn.ehlo()
        if code != 250:
            raise smtplib.SMTPResponseException(code, reply)
        if settings.security == "starttls":
            if not conn.has_extn("starttls"):
                raise smtplib.SMTPNotSupportedError("server does not offer STARTTLS")
            conn.starttls(context=context)
            conn.ehlo()
        if settings.user is not None:
            conn.login(settings.user, settings.password or "")
        code, reply = conn.noop()
        if code != 250:
            raise smtplib.SMTPResponseException(code, reply)
        banner = reply.decode("utf-8", "replace").strip()
        conn.quit()
    finally:
        conn.close()
    return f"{settings.host}:{settings.port} answered EHLO and NOOP ({banner or 'ok'})"


def describe(exc: BaseException, smtp_url: str) -> str:
    """Return one line about a failed probe, never quoting the password."""
    settings = parse_smtp_url(smtp_url)
    where = f"{settings.host}:{settings.port}"
    if isinstance(exc, ConnectionRefusedError):
        return f"connection refused ({where})"
    if isinstance(exc, TimeoutError | socket.timeout):
        return f"no answer within the timeout ({where})"
    if isinstance(exc, socket.gaierror):
        return f"host lookup failed for {settings.host}"
    if isinstance(exc, smtplib.SMTPAuthenticationError):
        return f"login refused ({where}): {exc.smtp_code}"
    if isinstance(exc, smtplib.SMTPResponseException):
        return f"unexpected reply {exc.smtp_code} ({where})"
    text = " ".join(str(exc).split())
    if settings.password and len(settings.password) >= 4:
        text = text.replace(settings.password, "***")
    return f"{type(exc).__name__} ({where}): {text}"
