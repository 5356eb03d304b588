"""The schema files and the numbered migrations agree on the version they lead to."""

import re

import pytest

from duequeue.store import schema


@pytest.mark.parametrize("dialect", ["sqlite", "postgresql"])
def test_the_migrations_lead_from_the_oldest_version_to_the_current_one(dialect: str) -> None:
    steps = schema.migrations(dialect, schema.OLDEST[dialect])
    assert [m.version for m in steps] == list(range(schema.OLDEST[dialect] + 1, schema.VERSION + 1))
    assert schema.migrations(dialect, schema.VERSION) == []


def test_both_schema_files_declare_the_current_version() -> None:
    sqlite, postgres = schema.current("sqlite"), schema.current("postgresql")
    # The number older versions check is the floor; the version beyond it is a queue_meta row.
    assert re.search(rf"PRAGMA user_version = {schema.FLOOR};", sqlite)
    assert f"('schema_version', '{schema.FLOOR}')" in postgres
    for text in (sqlite, postgres):
        steps = f"('{schema.STEPS_KEY}', '{schema.VERSION}')"
        assert (steps in text) == (schema.VERSION > schema.FLOOR)
    assert f"version {schema.VERSION} (SQLite)" in sqlite
    assert f"version {schema.VERSION} (PostgreSQL)" in postgres


@pytest.mark.parametrize("dialect", ["sqlite", "postgresql"])
def test_the_floor_is_the_newest_step_that_raises_it(dialect: str) -> None:
    steps = schema.migrations(dialect, schema.OLDEST[dialect])
    assert max(m.version for m in steps if m.kind != "expand") == schema.FLOOR
    assert all((m.kind == "lockstep") == (m.version <= schema.LOCKSTEP_UNTIL) for m in steps)
