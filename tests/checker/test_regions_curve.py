"""Region boundaries, the Pareto front and its step vertices, and the ruleset data."""

from __future__ import annotations

import pytest

from checker.judge.ruleset import RulesetError, load_ruleset
from checker.recompute.curve import build_curves, pareto_front, step_vertices
from checker.recompute.regions import RegionError, compute_regions
from checker.report import PointResult, Report


@pytest.mark.parametrize(
    ("c_max", "c_min", "low", "med", "high"),
    [
        (64, 1, (2, 5), (6, 17), (18, 64)),  # the samples; the official verdict says 2-5, 6-17, 18-64
        (1024, 16, (17, 26), (27, 117), (118, 1024)),  # the reference docstring's example: low 17-26
        (65, 1, (2, 5), (6, 17), (18, 65)),  # log2(64)/3 = 2 exactly: 1 + 4 = 5, 1 + 16 = 17
    ],
)
def test_region_boundaries(c_max, c_min, low, med, high):
    r = compute_regions(c_max, c_min)
    assert (r.low_concurrency.start, r.low_concurrency.end) == low
    assert (r.med_concurrency.start, r.med_concurrency.end) == med
    assert (r.high_concurrency.start, r.high_concurrency.end) == high
    assert r.margin.end == -(-c_max * 11 // 10)


def test_classification_and_margin():
    r = compute_regions(40, 32)  # I = 1 -> low ends at round(34) = 34, medium at round(36) = 36
    assert (r.low_concurrency.end, r.med_concurrency.end) == (34, 36)
    assert r.classify(33) == "low_concurrency" and r.classify(40) == "high_concurrency"
    assert r.classify(44) == "margin" and r.classify(45) is None


def test_regions_refuse_small_c_max():
    with pytest.raises(RegionError):
        compute_regions(32, 1)


def test_pareto_front_keeps_points_whose_y_beats_the_last_kept():
    pts = [
        {"point": "a", "tps_per_user": 100.0, "system_tps": 100.0},
        {"point": "b", "tps_per_user": 90.0, "system_tps": 300.0},
        {"point": "c", "tps_per_user": 90.0, "system_tps": 200.0},  # tie on x: b first (y best-first)
        {"point": "d", "tps_per_user": 80.0, "system_tps": 250.0},  # dominated by b
        {"point": "e", "tps_per_user": 50.0, "system_tps": 900.0},
        {"point": "f", "tps_per_user": None, "system_tps": 1e9},  # no TPOT: not on the front
    ]
    front = pareto_front(pts, x="tps_per_user", y="system_tps")
    assert [p["point"] for p in front] == ["a", "b", "e"]
    assert step_vertices(front, x="tps_per_user", y="system_tps") == [
        [100.0, 100.0],
        [100.0, 300.0],
        [90.0, 300.0],
        [90.0, 900.0],
        [50.0, 900.0],
    ]


def test_build_curves_prefers_recomputed_and_sorts_by_concurrency():
    report = Report(
        points=[
            PointResult(
                "S",
                "m",
                8,
                "bundle",
                claimed={"system_tps": 800.0, "tps_per_user": 50.0},
                recomputed={"system_tps": 700.0, "tps_per_user": 40.0},
            ),
            PointResult("S", "m", 1, "bundle", claimed={"system_tps": 100.0, "tps_per_user": 90.0}),
        ]
    )
    (curve,) = build_curves(report, ruleset=load_ruleset())
    assert [p["concurrency"] for p in curve["points"]] == [1, 8]
    assert curve["points"][1]["system_tps"] == 700.0 and curve["points"][1]["basis"] == "recomputed"
    assert curve["pareto"]["tps_per_user"]["steps"] == [[90.0, 100.0], [90.0, 700.0], [40.0, 700.0]]
    assert curve["ruleset"] == "endpoints-v1.0"


def test_build_curves_leaves_out_numbers_a_float_cannot_hold():
    """A hostile summary's 10**400 is no metric: the curve omits it instead of crashing the check."""
    report = Report(
        points=[
            PointResult("S", "m", 1, "bundle", claimed={"system_tps": 10**400, "tps_per_user": 90.0}),
            PointResult("S", "m", 8, "bundle", claimed={"system_tps": 700.0, "tps_per_user": float("nan")}),
        ]
    )
    (curve,) = build_curves(report, ruleset=load_ruleset())
    assert [p["system_tps"] for p in curve["points"]] == [None, 700.0]
    assert curve["points"][1]["tps_per_user"] is None
    assert "tps_per_user" not in curve["pareto"]


def test_ruleset_is_data():
    rs = load_ruleset("endpoints-v1.0")
    assert rs.datasets["cnn_dailymail"] == 13368
    assert rs.models["llama3_1-8b"].accuracy_min_samples == 13368
    assert (
        rs.min_duration_ms(32, agentic=False) == 600_000
        and rs.min_duration_ms(33, agentic=False) == 1_200_000
    )
    assert rs.seed_sets["A"].seeds["model_seed"] == 9315206023656308754
    with pytest.raises(RulesetError):
        load_ruleset("../../etc/passwd")
    with pytest.raises(RulesetError):
        load_ruleset("endpoints-v9.9")
