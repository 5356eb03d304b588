"""One way to show a URL: passwords masked wherever a URL carries one."""

import pytest

from duequeue.shared import redact


@pytest.mark.parametrize(
    ("given", "shown"),
    [
        ("/var/lib/duequeue/dq.db", "/var/lib/duequeue/dq.db"),
        ("postgresql://dq@db.example/dq", "postgresql://dq@db.example/dq"),
        ("postgresql://dq:s3cret@db.example:5432/dq", "postgresql://dq:****@db.example:5432/dq"),
        ("postgresql://dq:p@ss@db.example/dq", "postgresql://dq:****@db.example/dq"),
        (
            "postgresql://db.example/dq?user=dq&password=s3cret&sslmode=require",
            "postgresql://db.example/dq?user=dq&password=****&sslmode=require",
        ),
        ("smtps://ann:s3cret@smtp.example:465", "smtps://ann:****@smtp.example:465"),
        ("smtp://127.0.0.1:25", "smtp://127.0.0.1:25"),
        ("smtp://ann:s3cret@[::1", "smtp://****"),  # unparsable: nothing of it shown
    ],
)
def test_a_url_is_shown_without_its_password(given: str, shown: str) -> None:
    assert redact.url(given) == shown
    assert "s3cret" not in redact.url(given)
