"""The benchmark harness still runs (tiny N, in process); figures are never asserted."""

from benchmarks import claim_cost
from benchmarks.common import Result


def test_the_claim_benchmark_runs_and_reports_a_verdict() -> None:
    result = claim_cost.run(big=2_000, small=1_000, due=50)
    assert result.ratio is not None and result.ratio > 0
    assert result.verdict in ("PASS", "FAIL")
    assert result.line().startswith("3. claim + write back 50 due rows: ratio ")


def test_a_skipped_result_says_so() -> None:
    skipped = Result("5. x", "b", "-", None, ">= 1", None, note="skipped: not here")
    assert skipped.verdict == "SKIPPED"
    assert "skipped: not here" in skipped.line()
