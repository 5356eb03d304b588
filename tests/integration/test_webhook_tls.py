"""Webhooks over https: the receiver's certificate is checked against Mozilla's CA bundle
(certifi), or against SSL_CERT_FILE when set, as an operator trusts a private CA."""

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from freezegun import freeze_time

from duequeue import Queue
from duequeue.channels import webhook_sender as webhook
from tests.certs import TestCa
from tests.servers import HttpSink

T0 = datetime(2027, 1, 5, 8, 0, tzinfo=UTC)


@pytest.fixture
def ca(tmp_path: Path) -> TestCa:
    return TestCa.create(tmp_path)


@pytest.fixture
def https(ca: TestCa) -> Iterator[HttpSink]:
    with HttpSink(tls=ca.server_context()) as sink:
        yield sink


@pytest.fixture(autouse=True)
def fresh_context() -> Iterator[None]:
    # The process builds its TLS context once; each test here sets up its own trust.
    webhook._tls_context.cache_clear()
    yield
    webhook._tls_context.cache_clear()


def _deliver(db: Path, url: str) -> str | None:
    """Add a webhook due now, tick, return the reminder's last error (None: delivered)."""
    with Queue(db, channel_timeout=5) as q, freeze_time(T0, real_asyncio=True):
        rid = q.add(at="now", webhooks=[url]).id
        q.tick()
        (attempt,) = q.history(rid).attempts
    return attempt.error if attempt.outcome != "sent" else None


def test_a_private_ca_named_by_ssl_cert_file_is_trusted(
    db_path: Path, https: HttpSink, ca: TestCa, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(ca.ca_file))
    assert https.url("/r").startswith("https://")
    assert _deliver(db_path, https.url("/r")) is None
    (request,) = https.requests
    assert request.path == "/r"


def test_without_it_the_certificate_is_refused_and_nothing_is_posted(
    db_path: Path, https: HttpSink, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    error = _deliver(db_path, https.url("/r"))
    assert error is not None and "certificate" in error.lower()
    assert https.requests == []


def test_the_default_trust_is_mozillas_bundle(monkeypatch: pytest.MonkeyPatch) -> None:
    import certifi

    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    context = webhook._tls_context()
    assert context.verify_mode.name == "CERT_REQUIRED" and context.check_hostname
    bundle = Path(certifi.where()).read_text(encoding="ascii")
    assert len(context.get_ca_certs()) == bundle.count("BEGIN CERTIFICATE")
