"""The one mapping of an error to the command line: a field as the flag a user typed."""

import pytest

from duequeue.cli.report import flag, message, setting_source
from duequeue.errors import BadInputError, ConfigError, NotFoundError, StoreError


@pytest.mark.parametrize(
    ("field", "shown"),
    [
        ("at", "--at"),
        ("misfire_grace", "--misfire-grace"),
        ("emails[0]", "--email"),
        ("webhooks[1]", "--webhook (the 2nd)"),
        ("targets[2]", "--target (the 3rd)"),
        ("notify[10]", "--notify (the 11th)"),
        ("webhook_secret[20]", "--webhook-secret (the 21st)"),
        ("data_json", "--data"),
        ("id", "ID"),
        ("ids", "ID"),
        ("file", "FILE"),
    ],
)
def test_a_field_is_named_as_its_flag(field: str, shown: str) -> None:
    assert flag(field) == shown


def test_an_error_reads_as_before_with_flags_in_place_of_fields() -> None:
    both = BadInputError("give one recurrence, not both", field=("rrule", "cron"))
    assert message(both) == "--rrule/--cron: give one recurrence, not both"
    found = NotFoundError("no reminder with id 9", field="id")
    assert (str(found), message(found)) == (
        "id: no reminder with id 9",
        "ID: no reminder with id 9",
    )
    setting = ConfigError("'x' is not a number", field="tick_limit")
    assert message(setting) == "DUEQUEUE_TICK_LIMIT: 'x' is not a number"
    # Without a field, or on a line of an import (whose fields are the file's), as given.
    assert message(StoreError("database locked")) == "database locked"
    line = BadInputError("'nope' is not a valid email address", field="emails[0]").at_line(3)
    assert message(line) == "line 3: emails[0]: 'nope' is not a valid email address"


def test_a_setting_given_as_an_argument_shows_its_flag() -> None:
    assert setting_source("db", "argument") == "--db"
    assert setting_source("tz", "DUEQUEUE_TZ") == "DUEQUEUE_TZ"
