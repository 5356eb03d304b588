"""The instruction budget's file and verdicts (benchmarks/budget.py), without callgrind."""

import pytest

from benchmarks import budget
from benchmarks.budget import Budget, BudgetFileError, Entry, compare, parse_budget, render_budget

GOOD = """
[tick_per_delivery]
budget = 700000
tolerance = 0.02

[empty_tick]
budget = 419000000
tolerance = 0.005

[import_per_line]
budget = 348000
tolerance = 0.01

[baselines]
bare_per_post = 550000
"""

MEASURED = {"tick_per_delivery": 700_000.0, "empty_tick": 419e6, "import_per_line": 348_000.0}


def test_the_committed_budget_file_parses_and_budgets_every_checked_figure() -> None:
    found = parse_budget(budget.BUDGET_FILE.read_text(encoding="utf-8"))
    assert set(found.entries) == set(budget.CHECKED)
    # A tolerance of a few percent at most: wider, and the check would let real costs through.
    assert all(0 < entry.tolerance <= 0.05 for entry in found.entries.values())
    assert set(found.baselines) == set(budget.BASELINES)


def test_figures_at_or_within_tolerance_pass() -> None:
    parsed = parse_budget(GOOD)
    assert compare(parsed, MEASURED) == []
    just_within = {**MEASURED, "tick_per_delivery": 700_000 * 1.02}
    assert compare(parsed, just_within) == []
    cheaper = {**MEASURED, "empty_tick": 300e6}
    assert compare(parsed, cheaper) == []


def test_each_figure_over_its_limit_is_reported_once_with_budget_measured_and_ratio() -> None:
    parsed = parse_budget(GOOD)
    over = compare(
        parsed, {**MEASURED, "tick_per_delivery": 735_000.0, "import_per_line": 352_000.0}
    )
    assert [e.name for e in over] == ["tick_per_delivery", "import_per_line"]
    assert over[0].line() == (
        "budget exceeded: tick_per_delivery: budget 700,000, measured 735,000, ratio 1.050 "
        "(allowed up to 1.020)"
    )
    assert over[1].ratio == pytest.approx(352 / 348)
    # The empty tick's tighter tolerance: half a percent over fails it.
    assert [e.name for e in compare(parsed, {**MEASURED, "empty_tick": 419e6 * 1.006})] == [
        "empty_tick"
    ]


def test_a_figure_the_measurement_lacks_is_an_error_not_a_pass() -> None:
    measured = dict(MEASURED)
    del measured["import_per_line"]
    with pytest.raises(BudgetFileError, match="not measured: import_per_line"):
        compare(parse_budget(GOOD), measured)


@pytest.mark.parametrize(
    ("text", "complaint"),
    [
        (GOOD.replace("[empty_tick]", "[empty_tock]"), "no \\[empty_tick\\] table"),
        (GOOD.replace("budget = 700000", 'budget = "700000"'), "budget must be a positive"),
        (GOOD.replace("budget = 700000", "budget = 0"), "budget must be a positive"),
        (GOOD.replace("tolerance = 0.02", "tolerance = 2"), "tolerance must be a fraction"),
        (GOOD.replace("tolerance = 0.02", "tolerance = true"), "tolerance must be a fraction"),
        (GOOD.replace("bare_per_post = 550000", "bare_per_post = 'x'"), "\\[baselines\\]"),
        ("budget = [", "not TOML"),
    ],
)
def test_a_bad_budget_file_says_what_is_wrong(text: str, complaint: str) -> None:
    with pytest.raises(BudgetFileError, match=complaint):
        parse_budget(text)


def test_the_rendered_file_reads_back_the_same() -> None:
    written = Budget(
        {
            "tick_per_delivery": Entry(765_874.0, 0.02),
            "empty_tick": Entry(419_352_567.0, 0.005),
            "import_per_line": Entry(348_203.0, 0.01),
        },
        {"bare_per_post": 548_378.0, "import_base": 288_920_094.0},
        'measured at "abc123"',
    )
    assert parse_budget(render_budget(written)) == written


def test_update_takes_the_new_figures_and_keeps_the_tolerances() -> None:
    old = parse_budget(GOOD)
    new = budget.updated(
        old, {**MEASURED, "tick_per_delivery": 650_000.0, "bare_per_post": 1.0}, "n"
    )
    assert new.entries["tick_per_delivery"] == Entry(650_000.0, 0.02)
    assert new.entries["empty_tick"] == Entry(419e6, 0.005)
    assert new.baselines == {"bare_per_post": 1.0}
    assert budget.updated(None, MEASURED, "n").entries["import_per_line"].tolerance == 0.02


def test_update_of_one_part_keeps_the_other_figures_as_the_file_has_them() -> None:
    old = parse_budget(GOOD)
    new = budget.updated(old, {"empty_tick": 400e6, "import_base": 290e6}, "n")
    assert new.entries["empty_tick"] == Entry(400e6, 0.005)
    assert new.entries["tick_per_delivery"] == old.entries["tick_per_delivery"]
    assert new.entries["import_per_line"] == old.entries["import_per_line"]
    assert new.baselines == {**old.baselines, "import_base": 290e6}


def test_update_of_one_part_without_a_file_is_refused() -> None:
    with pytest.raises(BudgetFileError, match="tick_per_delivery"):
        budget.updated(None, {"empty_tick": 400e6, "import_base": 290e6}, "n")


def test_per_unit_is_the_difference_over_the_sizes() -> None:
    assert budget.per_unit(1_000_000, 3_000_000, (1_000, 3_000)) == 1_000.0
