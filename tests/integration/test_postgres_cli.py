"""The operator's view of a PostgreSQL database: doctor's checks, and no password on display."""

from datetime import UTC, datetime
from urllib.parse import urlsplit

from duequeue.store import schema
from tests.clirunner import SECRET, Cli

T0 = datetime(2027, 1, 5, 8, 0, tzinfo=UTC)


def with_password(url: str, password: str) -> str:
    parts = urlsplit(url)
    netloc = f"{parts.username}:{password}@{parts.hostname}:{parts.port}"
    return parts._replace(netloc=netloc).geturl()


def real_now() -> datetime:
    # doctor compares this host's clock with the server's: a frozen calendar would be "off".
    return datetime.now(UTC).replace(microsecond=0)


def test_doctor_checks_the_postgresql_database(pg_url: str) -> None:
    cli = Cli(pg_url, real_now(), {"DUEQUEUE_WEBHOOK_SECRET": SECRET})  # type: ignore[arg-type]
    cli.add("--at", "+1h", "--webhook", "https://hooks.example.com/r")
    cli.now = real_now()
    r = cli("doctor", "--json")
    report = r.json()
    assert (r.code, report["ok"]) == (0, True), r.out
    checks = {c["name"]: c for c in report["checks"]}
    for name in ("database", "database schema", "database server", "database integrity", "clock"):
        assert checks[name]["ok"], checks[name]
    version = schema.VERSION
    assert checks["database schema"]["detail"].endswith(
        f"schema version {version}, floor {schema.FLOOR} (this duequeue: {version})"
    )


def test_a_password_in_the_url_is_never_printed(pg_url: str) -> None:
    # Trust auth accepts any password, so the URL works while carrying one.
    url = with_password(pg_url, "pw-s3cret")
    cli = Cli(url, real_now(), {"DUEQUEUE_WEBHOOK_SECRET": SECRET})  # type: ignore[arg-type]
    cli.add("--at", "+1h", "--webhook", "https://hooks.example.com/r")
    outputs = [cli("config", "--json"), cli("doctor"), cli("stats"), cli("inspect", "--all")]
    assert all(r.code == 0 for r in outputs), [r.err for r in outputs]
    assert all("pw-s3cret" not in r.out + r.err for r in outputs)
    assert cli("config", "--json").json()["db"] == with_password(pg_url, "****")
