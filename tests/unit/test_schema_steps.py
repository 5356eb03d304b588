"""Expand and contract steps (store/schema_steps.py): what opening applies, what
`migrate --contract` applies, and which versions may run on a database, on made-up steps."""

import pytest

from duequeue.store import schema, schema_steps
from duequeue.store.schema import Migration
from duequeue.store.schema_steps import Shape


@pytest.fixture
def steps(monkeypatch: pytest.MonkeyPatch) -> list[Migration]:
    """Steps 10-11 from before the scheme, then 12 expand, 13 contract, 14 expand."""
    made = [
        Migration(10, "0010_a.sql", ""),
        Migration(11, "0011_b.sql", ""),
        Migration(12, "0012_expand_c.sql", ""),
        Migration(13, "0013_contract_d.sql", ""),
        Migration(14, "0014_expand_e.sql", ""),
    ]
    monkeypatch.setattr(schema, "VERSION", 14)
    monkeypatch.setattr(
        schema, "migrations", lambda dialect, after: [m for m in made if m.version > after]
    )
    return made


def names(found: list[Migration]) -> list[str]:
    return [m.name for m in found]


def test_it_expands_past_a_pending_contract_step_and_leaves_the_floor(
    steps: list[Migration],
) -> None:
    at_11 = schema_steps.shape(11)
    todo = schema_steps.to_expand("sqlite", at_11)
    assert names(todo) == ["0012_expand_c.sql", "0014_expand_e.sql"]
    expanded = schema_steps.after(at_11, todo, expanded=True)
    assert expanded == Shape(11, 14)
    assert expanded.runs(11)  # the version before the scheme still runs on it
    assert names(schema_steps.to_contract("sqlite", expanded)) == ["0013_contract_d.sql"]


def test_a_contract_step_raises_the_floor_and_older_code_may_not_run(
    steps: list[Migration],
) -> None:
    expanded = Shape(11, 14)
    done = schema_steps.after(expanded, schema_steps.to_contract("sqlite", expanded))
    assert done == Shape(13, 14)
    assert not done.runs(12)
    assert done.runs(13)
    assert schema_steps.to_contract("sqlite", done) == []
    assert "upgrade duequeue on this host" in schema_steps.refusal("q.db", Shape(15, 15))


def test_an_old_database_gets_the_lockstep_steps_first(steps: list[Migration]) -> None:
    at_9 = schema_steps.shape(9)
    todo = schema_steps.to_expand("sqlite", at_9)
    assert [m.version for m in todo] == [10, 11, 12, 14]
    assert schema_steps.after(at_9, todo, expanded=True) == Shape(11, 14)


def test_a_database_a_newer_version_expanded_needs_nothing_from_an_older_one() -> None:
    newer = schema_steps.shape(schema.FLOOR, str(schema.VERSION + 3))
    assert newer == Shape(schema.FLOOR, schema.VERSION + 3)
    assert newer.runs()
    assert schema_steps.to_expand("sqlite", newer) == []
    assert newer.steps_row() == str(schema.VERSION + 3)
    assert schema_steps.shape(11, "garbage") == Shape(11, 11)
    assert Shape(11, 11).steps_row() is None
