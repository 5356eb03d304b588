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


def test_data_is_shown_with_the_values_of_secret_keys_and_url_passwords_masked() -> None:
    given = {
        "amount": 900,
        "password": "s3cret",
        "Authorization": "Bearer abc",
        "nested": [{"api_key": {"id": 1, "value": "k"}, "accessToken": "t"}],
        "client_secret": None,  # nothing to hide
        "invoice": "see https://ann:s3cret@billing.example/42 today",
        # Names that only look alike stay shown: a key, a keyword, an author.
        "key": "invoice-42",
        "keyword": "rent",
        "author": "ann",
    }
    assert redact.data(given) == {
        "amount": 900,
        "password": "****",
        "Authorization": "****",
        "nested": [{"api_key": "****", "accessToken": "****"}],
        "client_secret": None,
        "invoice": "see https://ann:****@billing.example/42 today",
        "key": "invoice-42",
        "keyword": "rent",
        "author": "ann",
    }
    assert redact.data(["a", 1, None, True]) == ["a", 1, None, True]
    assert redact.data("plain text") == "plain text"
