"""checker.judge.remeasure: a claim against its re-measurement, judged one-sided with the stated tolerances, on the
figures of real GuideLLM 0.8.1 outputs (tests/fixtures/importers/guidellm, made against `guidellm mock-server`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from checker.cli.import_pipeline import import_runs
from checker.judge.remeasure import OUTSIDE, TOLERANCES, WITHIN, compare_point, shortfall
from checker.recompute.imported import Slo

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "importers" / "guidellm" / "benchmarks.json"


@pytest.fixture(scope="module")
def points():
    result = import_runs([FIXTURE], slo=Slo(ttft_ms=100.0, tpot_ms=10.0))
    return {p["concurrency"]: p["portal"] for p in result.points}


def test_a_point_measured_again_the_same_is_within(points):
    verdict, lines = compare_point(points[8], dict(points[8]))
    assert verdict == WITHIN
    assert {line.figure for line in lines} == set(TOLERANCES)
    assert all(line.shortfall == 0.0 for line in lines)


def test_a_claim_of_the_concurrency_8_point_measured_at_concurrency_1_is_outside(points):
    # The c1 run made fewer tokens per second than c8 claims: system_tps falls short by far more than 35 %.
    verdict, lines = compare_point(points[8], points[1])
    by_figure = {line.figure: line for line in lines}
    assert verdict == OUTSIDE
    assert by_figure["system_tps"].within is False
    assert by_figure["system_tps"].shortfall > TOLERANCES["system_tps"][0]


def test_doing_better_than_claimed_is_never_a_finding(points):
    # c1 claims less throughput than c8 measures, and c8's TTFT is what it is: only shortfalls count.
    claim = dict(points[1])
    better = dict(points[1], system_tps=claim["system_tps"] * 3, ttft_p90_ms=claim["ttft_p90_ms"] / 2)
    verdict, _ = compare_point(claim, better)
    assert verdict == WITHIN


def test_ttft_is_judged_lower_is_better():
    assert shortfall(100.0, 140.0, higher_is_better=False) == pytest.approx(0.40)
    assert shortfall(100.0, 60.0, higher_is_better=True) == pytest.approx(0.40)
    verdict, lines = compare_point({"ttft_p90_ms": 100.0}, {"ttft_p90_ms": 131.0})
    assert verdict == OUTSIDE and lines[2].within is False


def test_a_figure_missing_on_one_side_is_not_compared_and_nothing_compared_is_outside(points):
    claim = {k: v for k, v in points[8].items() if k != "goodput"}
    verdict, lines = compare_point(claim, points[8])
    assert verdict == WITHIN
    assert next(line for line in lines if line.figure == "goodput").within is None
    assert compare_point(points[8], {})[0] == OUTSIDE
