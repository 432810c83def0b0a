"""run_rules: every rule area over a layout and its recomputed points, in a fixed order."""

from __future__ import annotations

from typing import Any

from checker.judge.rules.accuracy import check_accuracy, check_accuracy_present, check_agentic_accuracy
from checker.judge.rules.disclosure import (
    check_benchmark_type,
    check_model_name_and_c_max,
    check_point_disclosure,
    check_seeds,
    check_steady_state,
    check_system_description,
    check_warmup,
)
from checker.judge.rules.drafters import check_drafters
from checker.judge.rules.engagement import check_engagement
from checker.judge.rules.files import check_official_files
from checker.judge.rules.load_pattern import (
    check_c_min_override,
    check_duration_and_queries,
    check_load_and_streaming,
    check_point_count_and_offline,
    check_regions,
)
from checker.judge.rules.metrics import check_metric_consistency, check_tps_utilization
from checker.judge.rules.physical import (
    check_declared_concurrency,
    check_point_physics,
    check_raw_log_duplicates,
)
from checker.judge.rules.power import check_point_power, check_system_power
from checker.judge.rules.state import Point, RuleRun
from checker.judge.rules.structure import check_structure
from checker.judge.ruleset import Ruleset, load_ruleset
from checker.read.inputs import Layout
from checker.report import Report


def run_rules(layout: Layout, report: Report, *, ruleset: str | Ruleset = "endpoints-v1.0") -> None:
    """Add every rule finding to report.findings and per-point facts to PointResult.extra."""
    loaded = ruleset if isinstance(ruleset, Ruleset) else load_ruleset(ruleset)
    report.ruleset = loaded.name
    run = RuleRun(layout, report, loaded)
    for point in run.points:
        run.load_point(point)
        check_official_files(run, point)
    check_structure(run)
    curves: dict[tuple[str, str], list[Point]] = {}
    for point in run.points:
        curves.setdefault((point.input.system, point.input.model), []).append(point)
    provisioned = check_system_power(run)
    for (system, model), points in curves.items():
        _check_curve(run, system, model, points, provisioned.get(system))
    check_raw_log_duplicates(run)
    check_accuracy_present(run)


def _check_curve(run: RuleRun, system: str, model: str, points: list[Point], provisioned: Any) -> None:
    """The rules of one (system, model) curve; `provisioned` is the system's power descriptor, if readable."""
    where = f"results/{system}/{model}/"
    check_point_disclosure(run, points)
    check_system_description(run, points, where)
    c_max = check_model_name_and_c_max(run, model, points, where)
    override, override_ok = check_c_min_override(run, points, where)
    regions = check_regions(run, points, c_max, where, override=override) if override_ok else None
    check_point_count_and_offline(run, points, c_max, where)
    check_seeds(run, points, where)
    check_drafters(run, model, points, where)
    for point in points:
        check_load_and_streaming(run, point)
        check_warmup(run, point)
        check_steady_state(run, point)
        check_duration_and_queries(run, point, regions)
        check_metric_consistency(run, point)
        check_declared_concurrency(run, point)
        check_point_physics(run, point)
    check_tps_utilization(run, points)
    check_accuracy(run, model, points, regions, where)
    check_agentic_accuracy(run, model, points, regions, where)
    for point in points:
        check_point_power(run, point, provisioned)
        if provisioned is not None:
            check_engagement(run, point, provisioned)
    check_benchmark_type(run, points, where)
