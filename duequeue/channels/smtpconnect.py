"""Open an SMTP session the one way delivery and `doctor` share: connect, TLS, EHLO, AUTH.

`doctor` runs exactly this routine, so it cannot pass where a delivery would fail.
"""

import base64
import hmac
import smtplib
import ssl
from typing import TYPE_CHECKING, overload

from duequeue.channels.smtpurl import SmtpSettings

if TYPE_CHECKING:
    from _socket import _Address as _SourceAddress
    from smtplib import _AuthObject

    from _typeshed import ReadableBuffer

# smtplib's order: CRAM-MD5 first keeps the password off a connection without TLS.
_MECHANISMS = ("CRAM-MD5", "PLAIN", "LOGIN")
_MAX_CHALLENGES = 5  # as smtplib: a server that keeps challenging is broken


def tls_context() -> ssl.SSLContext:
    """Return the context that verifies the server: system CAs, or SSL_CERT_FILE / SSL_CERT_DIR."""
    # OpenSSL reads SSL_CERT_FILE and SSL_CERT_DIR when the default paths load, which is how a
    # private CA is trusted (README: "Email over TLS").
    return ssl.create_default_context()


def client(settings: SmtpSettings, timeout: float, context: ssl.SSLContext) -> smtplib.SMTP:
    """Return an unconnected client for `settings`; `establish` connects it.

    Built unconnected so that a caller can watch its socket before the first read.
    """
    if settings.security == "tls":
        return _TlsClient(timeout=timeout, context=context)
    return _Client(timeout=timeout)


def establish(conn: smtplib.SMTP, settings: SmtpSettings, context: ssl.SSLContext) -> None:
    """Connect, greet, secure and log in; close `conn` and raise if any step fails.

    Raises OSError or smtplib.SMTPException (ssl.SSLError for TLS, SMTPAuthenticationError for
    a refused login, SMTPNotSupportedError when STARTTLS or AUTH is required but not offered).
    """
    try:
        code, greeting = conn.connect(settings.host, settings.port)
        if code != 220:
            raise smtplib.SMTPConnectError(code, greeting)
        conn.ehlo_or_helo_if_needed()
        if settings.security == "starttls":
            # Never fall back to plain text: the password would cross the network in clear.
            if not conn.has_extn("starttls"):
                raise smtplib.SMTPNotSupportedError("server does not offer STARTTLS")
            conn.starttls(context=context)
            conn.ehlo()
        if settings.user is not None:
            conn.login(settings.user, settings.password or "")
    except BaseException:
        conn.close()
        raise


class _Utf8Auth(smtplib.SMTP):
    """smtplib's client with the server name kept for TLS and credentials sent as UTF-8.

    smtplib takes the TLS server name from the host given to the constructor only, so a client
    built unconnected has none and every handshake fails ("check_hostname requires
    server_hostname"). It also encodes credentials as ASCII; RFC 4616 says UTF-8.
    """

    _host: str

    def connect(
        self,
        host: str = "localhost",
        port: int = 0,
        source_address: "_SourceAddress | None" = None,
    ) -> tuple[int, bytes]:
        """Connect to `host`, remembered as the name the certificate must carry."""
        self._host = host
        return super().connect(host, port, source_address)

    def login(
        self, user: str, password: str, *, initial_response_ok: bool = True
    ) -> tuple[int, bytes]:
        """Log in with the first offered mechanism the server does not call unknown.

        smtplib tries every offered mechanism after a refusal; a refused password would then
        count as several failed logins towards the provider's lockout.
        """
        self.ehlo_or_helo_if_needed()
        if not self.has_extn("auth"):
            raise smtplib.SMTPNotSupportedError("server does not offer AUTH")
        offered = self.esmtp_features["auth"].upper().split()
        mechanisms = [m for m in _MECHANISMS if m in offered]
        if not mechanisms:
            raise smtplib.SMTPNotSupportedError(
                f"no AUTH mechanism in common ({' '.join(offered)})"
            )
        self.user, self.password = user, password
        for mechanism in mechanisms:
            authobject = getattr(self, f"auth_{mechanism.lower().replace('-', '_')}")
            try:
                return self.auth(mechanism, authobject, initial_response_ok=initial_response_ok)
            except smtplib.SMTPAuthenticationError as exc:
                # 504: the mechanism is not really supported, so the next may be.
                if exc.smtp_code != 504 or mechanism == mechanisms[-1]:
                    raise
        raise AssertionError("unreachable")  # pragma: no cover

    def auth(
        self,
        mechanism: str,
        authobject: "_AuthObject",
        *,
        initial_response_ok: bool = True,
    ) -> tuple[int, bytes]:
        """Run one AUTH exchange as smtplib does, with each response encoded as UTF-8."""
        mechanism = mechanism.upper()
        initial = authobject() if initial_response_ok else None
        if initial is not None:
            code, reply = self.docmd("AUTH", f"{mechanism} {_b64(initial)}")
            self._auth_challenge_count = 1
        else:
            code, reply = self.docmd("AUTH", mechanism)
            self._auth_challenge_count = 0
        while code == 334:
            self._auth_challenge_count += 1
            if self._auth_challenge_count > _MAX_CHALLENGES:
                raise smtplib.SMTPException(f"server AUTH loop; last reply {code}")
            code, reply = self.docmd(_b64(authobject(base64.decodebytes(reply))))
        if code in (235, 503):  # 503: already authenticated
            return code, reply
        raise smtplib.SMTPAuthenticationError(code, reply)

    @overload
    def auth_cram_md5(self, challenge: None = None) -> None: ...
    @overload
    def auth_cram_md5(self, challenge: "ReadableBuffer") -> str: ...
    def auth_cram_md5(self, challenge: "ReadableBuffer | None" = None) -> str | None:
        """Answer a CRAM-MD5 challenge, keyed with the UTF-8 password."""
        if challenge is None:
            return None  # CRAM-MD5 has no initial response
        digest = hmac.HMAC(self.password.encode(), challenge, "md5").hexdigest()
        return f"{self.user} {digest}"


class _Client(_Utf8Auth):
    """Plain SMTP, upgraded by STARTTLS when the URL asks for it."""


class _TlsClient(_Utf8Auth, smtplib.SMTP_SSL):
    """SMTP inside TLS from the first byte (port 465)."""


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode("ascii")
