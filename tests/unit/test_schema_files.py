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
    assert re.search(rf"PRAGMA user_version = {schema.VERSION};", sqlite)
    assert f"('schema_version', '{schema.VERSION}')" in postgres
    assert f"version {schema.VERSION} (SQLite)" in sqlite
    assert f"version {schema.VERSION} (PostgreSQL)" in postgres
