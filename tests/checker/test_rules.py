"""Individual rules on a copy of the sample bundle (AX-8000 curve), each changed the way a submitter might."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from checker.judge.rules import run_rules
from checker.report import Report
from tests.checker.bundle_layout import BUNDLE, layout_of

CURVE = Path("results/Acme_AX-8000/llama3_1-8b")


@pytest.fixture
def root(tmp_path) -> Path:
    out = tmp_path / "sub"
    shutil.copytree(BUNDLE, out)
    shutil.rmtree(out / "results" / "Acme_AX-4000")
    return out


def edit(root: Path, rel: str, change) -> None:
    path = root / CURVE / rel
    data = yaml.safe_load(path.read_text()) if path.suffix == ".yaml" else json.loads(path.read_text())
    change(data)
    path.write_text(yaml.safe_dump(data) if path.suffix == ".yaml" else json.dumps(data))


def check(root: Path) -> Report:
    report = Report()
    run_rules(layout_of(root), report, ruleset="endpoints-v1.0-preview")
    return report


def found(report: Report, rule: str, severity: str = "error", point: str | None = "any") -> list:
    return [
        f
        for f in report.findings
        if f.rule == rule
        and f.severity == severity
        and (point == "any" or f.point == (None if point is None else f"Acme_AX-8000/llama3_1-8b/{point}"))
    ]


def test_sample_curve_passes_everything_but_the_known_short_run_findings(root):
    report = check(root)
    assert {f.rule for f in report.findings if f.severity == "error"} == {"accuracy-sample-count"}
    pr = {p.key: p for p in report.points}["Acme_AX-8000/llama3_1-8b/r64"]
    assert pr.extra["region"] == "high_concurrency" and pr.extra["offline"] == "elected"
    assert pr.extra["tps_utilization"] == 1.0


def test_failed_requests_counted_inside_completed_pass(root):
    def fail_two(d):
        d["n_samples_failed"] = 2  # completed stays == issued: the client's semantics

    edit(root, "r8/result_summary.json", fail_two)
    report = check(root)
    assert not found(report, "metric-consistency-accounting")
    (note,) = found(report, "metric-consistency-accounting", "info", "r8")
    assert "official checker" in note.message


def test_official_style_accounting_is_an_error(root):
    def official_style(d):
        d["n_samples_completed"] -= 2
        d["n_samples_failed"] = 2  # completed + failed == issued: what the official checker wants

    edit(root, "r8/result_summary.json", official_style)
    (err,) = found(check(root), "metric-consistency-accounting", point="r8")
    assert "inside completed" in err.message


def test_inflated_tps_is_caught_without_a_stored_system_tps(root):
    def inflate(d):
        assert "system_tps" not in d
        d["tps"] *= 1.2

    edit(root, "r8/result_summary.json", inflate)
    assert found(check(root), "metric-consistency-system-tps", point="r8")


def test_stored_tps_per_user_checked(root):
    edit(root, "r8/result_summary.json", lambda d: d.update(tps_per_user=500.0))
    assert found(check(root), "metric-consistency-tps-per-user", point="r8")


def test_dedicated_offline_within_two_percent(root):
    shutil.copytree(root / CURVE / "r64", root / CURVE / "r80")
    edit(root, "r64/point.yaml", lambda d: d.pop("offline"))
    edit(root, "r80/point.yaml", lambda d: d.update(concurrency=80, offline="dedicated"))
    edit(
        root,
        "r80/result_summary.json",
        lambda d: d.update(tps=d["tps"] * 0.9, duration_ns=int(d["duration_ns"] / 0.9)),
    )
    report = check(root)
    assert found(report, "offline-ordering", "warning")
    assert not found(report, "point-count")  # 8 points with a dedicated Offline run
    assert not found(report, "concurrency-in-range")  # dedicated Offline is exempt from the margin


def test_elected_offline_must_be_c_max(root):
    edit(root, "r64/point.yaml", lambda d: d.pop("offline"))
    edit(root, "r32/point.yaml", lambda d: d.update(offline="elected"))
    assert found(check(root), "offline-point-present")


def test_runtime_seeds_read_from_config_yaml(root):
    edit(root, "r4/config.yaml", lambda d: d["settings"]["runtime"].update(scheduler_random_seed=42))
    (err,) = found(check(root), "seed-runtime-match", point="r4")
    assert "config.yaml" in err.message


def test_unpublished_seed_set(root):
    edit(root, "r4/point.yaml", lambda d: d.update(seed_set="Z"))
    report = check(root)
    assert found(report, "seed-set-membership", point="r4") and found(
        report, "seed-set-consistency", point=None
    )


def test_streaming_off_and_wrong_target_concurrency(root):
    edit(root, "r4/config.yaml", lambda d: d["model_params"].update(streaming="off"))
    edit(root, "r8/config.yaml", lambda d: d["settings"]["load_pattern"].update(target_concurrency=9))
    report = check(root)
    assert found(report, "streaming-config", point="r4") and found(report, "load-pattern", point="r8")


def test_region_placement_and_coverage(root):
    edit(root, "r8/point.yaml", lambda d: d.update(region="high_concurrency"))
    report = check(root)
    (warn,) = found(report, "region-placement", "warning", "r8")
    assert "med_concurrency" in warn.message
    shutil.rmtree(root / CURVE / "r8")
    shutil.rmtree(root / CURVE / "r16")
    report = check(root)
    assert found(report, "med-concurrency-coverage", point=None) and found(report, "point-count", point=None)


def test_full_dataset_pass(root):
    for c in (1, 2, 4, 8, 16, 32, 64):
        edit(root, f"r{c}/point.yaml", lambda d: d.update(dataset="cnn_dailymail"))
    (err,) = found(check(root), "min-query-count", point="r1")
    assert "13368" in err.message


def test_tps_utilization_stored_value(root):
    edit(root, "r8/system_desc.json", lambda d: d.update(tps_utilization=0.9))
    assert found(check(root), "tps-utilization", point="r8")


def test_unknown_model_and_declared_max_concurrency(root):
    edit(root, "r8/point.yaml", lambda d: d.update(model_name="llama3.1-8b", max_supported_concurrency=128))
    report = check(root)
    assert found(report, "model-name-valid", point="r8") and found(
        report, "max-concurrency-declared", point="r8"
    )


def test_accuracy_coverage_and_gate(root):
    (root / CURVE / "r16" / "accuracy_results.json").unlink()
    report = check(root)
    assert found(report, "accuracy-coverage", point=None)

    def named_metric(d):
        d["accuracy_scores"][0]["rouge1"] = 0.2

    edit(root, "r4/accuracy_results.json", named_metric)
    assert any("rouge1" in f.message for f in found(check(root), "accuracy-gate", point="r4"))


def test_missing_descriptors(root):
    (root / CURVE / "r2" / "config.yaml").unlink()
    (root / "results/Acme_AX-8000/system_power.json").unlink()
    report = check(root)
    assert found(report, "config-file-present", point="r2") and found(report, "power-descriptor", point=None)
