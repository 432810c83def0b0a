"""Official rules added after the first agreement pass: engagement, nodes_used, c_min_override, drafters,
steady state, agentic accuracy, estimated power (Appendix D) and the warmup cross-check against the raw log.

Each test copies the sample bundle (AX-8000 curve) and changes its descriptors the way a submitter might.
"""

from __future__ import annotations

import copy
import json
import shutil
import tarfile
from pathlib import Path

import pytest
import yaml

from checker.judge.rules import run_rules
from checker.judge.rules.common import cohort_after, cohort_key
from checker.judge.ruleset import load_ruleset, parse_ruleset
from checker.recompute.replay import recompute_point
from checker.report import Findings, PointResult, Report
from tests.checker.bundle_layout import ARCHIVES, BUNDLE, FIXTURES, layout_of

CURVE = Path("results/Acme_AX-8000/llama3_1-8b")
POWER = Path("results/Acme_AX-8000/system_power.json")
POINTS = (1, 2, 4, 8, 16, 32, 64)
KEY = "Acme_AX-8000/llama3_1-8b"


@pytest.fixture
def root(tmp_path) -> Path:
    out = tmp_path / "sub"
    shutil.copytree(BUNDLE, out)
    shutil.rmtree(out / "results" / "Acme_AX-4000")
    return out


def edit(root: Path, rel: str | Path, change) -> None:
    path = root / rel
    data = yaml.safe_load(path.read_text()) if path.suffix == ".yaml" else json.loads(path.read_text())
    change(data)
    path.write_text(yaml.safe_dump(data) if path.suffix == ".yaml" else json.dumps(data))


def edit_points(root: Path, name: str, change, points=POINTS) -> None:
    for c in points:
        edit(root, CURVE / f"r{c}" / name, change)


# The sample runs last ~20 s: the rules run under the preview rule set (short runs are warnings, as the official
# checker 1.5.3.0 reports them); tests/checker/test_physical.py covers the official durations.
PREVIEW = "endpoints-v1.0-preview"


def check(root: Path, ruleset=None, report: Report | None = None) -> Report:
    report = report or Report()
    run_rules(layout_of(root), report, ruleset=ruleset or PREVIEW)
    return report


def found(report: Report, rule: str, severity: str = "error", point: str | None = "any") -> list:
    return [
        f
        for f in report.findings
        if f.rule == rule
        and f.severity == severity
        and (point == "any" or f.point == (None if point is None else f"{KEY}/{point}"))
    ]


def ruleset_with(change):
    raw = copy.deepcopy(load_ruleset(PREVIEW).raw)
    change(raw)
    return parse_ruleset(raw, name=PREVIEW)


def test_sample_curve_engages_every_accelerator_and_needs_no_new_finding(root):
    report = check(root)
    for c in POINTS:
        (info,) = found(report, "maximal-engagement", "info", f"r{c}")
        assert "DP 8 = floor(8 / 1) = 8" in info.message
    new_rules = {
        "maximal-engagement",
        "nodes-used",
        "c-min-override",
        "approved-drafter",
        "drafter-approval-lead-time",
        "steady-state-valid",
        "steady-state-consistency",
        "agentic-accuracy",
        "agentic-accuracy-inline",
        "agentic-accuracy-swebench",
        "agentic-osl-range",
        "power-estimated",
        "warmup-log-mismatch",
    }
    assert not [f for f in report.findings if f.rule in new_rules and f.severity != "info"]


# ---------------------------------------------------------------- maximal engagement


def test_dp_below_the_formula_needs_a_matching_shortfall(root):
    edit(root, CURVE / "r8/system_desc.json", lambda d: d.update(data_parallel=4))
    (err,) = found(check(root), "maximal-engagement", point="r8")
    assert "below floor(8 / 1) = 8" in err.message and err.file.endswith("r8/point.yaml") and err.fix

    edit(
        root,
        CURVE / "r8/point.yaml",
        lambda d: d.update(dp_shortfall={"dp_actual": 4, "dp_formula": 8, "reason": "memory per replica"}),
    )
    report = check(root)
    assert not found(report, "maximal-engagement", point="r8")
    (warn,) = found(report, "maximal-engagement", "warning", "r8")
    assert "memory per replica" in warn.message

    edit(root, CURVE / "r8/point.yaml", lambda d: d["dp_shortfall"].update(dp_actual=2))
    (err,) = found(check(root), "maximal-engagement", point="r8")
    assert "dp_shortfall declares DP 2" in err.message


def test_dp_beyond_the_provisioned_accelerators_and_disaggregation(root):
    edit(root, CURVE / "r4/system_desc.json", lambda d: d.update(tensor_parallel=2))
    (err,) = found(check(root), "maximal-engagement", point="r4")
    assert "16 accelerators, more than the 8 provisioned" in err.message
    edit(root, CURVE / "r4/system_desc.json", lambda d: d.update(disaggregated=True))
    assert found(check(root), "maximal-engagement", "warning", "r4")


def test_shortfall_declared_without_a_shortfall_is_a_warning(root):
    edit(
        root,
        CURVE / "r2/point.yaml",
        lambda d: d.update(dp_shortfall={"dp_actual": 8, "dp_formula": 8, "reason": "none"}),
    )
    (warn,) = found(check(root), "maximal-engagement", "warning", "r2")
    assert "no shortfall" in warn.message


# ---------------------------------------------------------------- nodes_used


def _two_nodes(root: Path) -> None:
    def change(d):
        d["node_sets"][0]["nodes_provisioned"] = 2
        d.pop("computed")
        d.pop("provisioned_power_kw")

    edit(root, POWER, change)


def test_nodes_used_resolves_to_a_node_set_within_its_count(root):
    edit(
        root,
        CURVE / "r8/point.yaml",
        lambda d: d.update(nodes_used=[{"system_node_ensemble_id": 3, "nodes": 1}]),
    )
    edit(
        root,
        CURVE / "r16/point.yaml",
        lambda d: d.update(nodes_used=[{"system_node_ensemble_id": 0, "nodes": 2}]),
    )
    report = check(root)
    (err,) = found(report, "nodes-used", point="r8")
    assert "matches 0 node sets" in err.message and err.pointer == "/nodes_used"
    (err,) = found(report, "nodes-used", point="r16")
    assert "no greater than N_s = 1" in err.message


def test_nodes_used_must_hold_the_engaged_accelerators(root):
    _two_nodes(root)
    # DP 8 x 1 = 8 accelerators fit one node of 8: declaring one node is exact, two is more than needed
    edit(
        root,
        CURVE / "r8/point.yaml",
        lambda d: d.update(nodes_used=[{"system_node_ensemble_id": 0, "nodes": 1}]),
    )
    edit(
        root,
        CURVE / "r16/point.yaml",
        lambda d: d.update(nodes_used=[{"system_node_ensemble_id": 0, "nodes": 2}]),
    )
    edit(root, CURVE / "r32/system_desc.json", lambda d: d.update(data_parallel=16))
    edit(
        root,
        CURVE / "r32/point.yaml",
        lambda d: d.update(nodes_used=[{"system_node_ensemble_id": 0, "nodes": 1}]),
    )
    report = check(root)
    assert found(report, "nodes-used", "info", "r8")
    (warn,) = found(report, "nodes-used", "warning", "r16")
    assert "ceil(8 / 8) = 1 nodes" in warn.message
    (err,) = found(report, "nodes-used", point="r32")
    assert "hold 8 accelerators" in err.message and "engages 16" in err.message
    pr = {p.key: p for p in report.points}
    assert pr[f"{KEY}/r8"].extra["power"]["point_power_kw"] == pytest.approx(10.95)  # half of 21.9 kW


# ---------------------------------------------------------------- c_min_override


def test_c_min_override_sets_ultra_low_coverage(root):
    edit_points(root, "system_desc.json", lambda d: d.update(c_min_override=2))
    report = check(root)
    assert not found(report, "c-min-override")
    (basis,) = found(report, "region-basis", "info", None)
    assert "declared by c_min_override" in basis.message
    (cov,) = found(report, "ultra-low-concurrency-coverage", "info", None)
    assert "[1, 2]" in cov.message
    regions = {p.key: p for p in report.points}[f"{KEY}/r1"].extra["regions"]
    assert regions["c_min"] == 2 and regions["low_concurrency"] == [3, 6]


def test_c_min_override_must_be_unanimous_valid_and_measured(root):
    edit(root, CURVE / "r1/system_desc.json", lambda d: d.update(c_min_override=2))
    report = check(root)
    assert len(found(report, "c-min-override")) == 6  # every other point lacks the declaration
    assert not found(report, "ultra-low-concurrency-coverage", "info")  # region rules skipped

    edit_points(root, "system_desc.json", lambda d: d.update(c_min_override=40))
    assert all("[1,32]" in f.message for f in found(check(root), "c-min-override"))

    edit_points(root, "system_desc.json", lambda d: d.update(c_min_override=True))
    assert len(found(check(root), "c-min-override")) == 7  # a bool is not a JSON integer

    edit_points(root, "system_desc.json", lambda d: d.update(c_min_override=3))
    (err,) = found(check(root), "c-min-override", point=None)
    assert "must match a submitted concurrency point" in err.message

    edit_points(root, "system_desc.json", lambda d: d.update(c_min_override=2), points=(1, 2, 4))
    edit_points(root, "system_desc.json", lambda d: d.update(c_min_override=4), points=(8, 16, 32, 64))
    (err,) = found(check(root), "c-min-override", point=None)
    assert "Conflicting" in err.message and "[2, 4]" in err.message


# ---------------------------------------------------------------- speculative decoding


def test_cohort_arithmetic():
    assert cohort_after(cohort_key("2026-12-C1"), 1) == (2027, 1, 0)
    assert cohort_after(cohort_key("2026-10-C1"), 2) == (2026, 11, 1)
    assert cohort_key("2026-13-C0") is None and cohort_key(42) is None


def test_speculative_decoding_without_an_approved_drafter(root):
    edit(
        root,
        CURVE / "r8/point.yaml",
        lambda d: d.update(speculative_decoding={"model_id": "acme/eagle", "weight_checksum": "sha256:1"}),
    )
    (err,) = found(check(root), "approved-drafter", point="r8")
    assert (
        "no drafter is approved for 'llama3_1-8b'" in err.message and err.pointer == "/speculative_decoding"
    )


def test_drafter_identity_and_approval_lead_time(root):
    def approve(cohort):
        def change(raw):
            raw["drafters"]["approved"] = [
                {"benchmark": "llama3_1-8b", "approved_cohort": cohort, "weight_checksum": "sha256:w"},
                {
                    "benchmark": "llama3_1-8b",
                    "approved_cohort": cohort,
                    "target_checksum": "sha256:t",
                    "configuration": {"exit_layer": 24},
                },
            ]

        return ruleset_with(change)

    edit(
        root,
        CURVE / "r8/point.yaml",
        lambda d: d.update(speculative_decoding={"weight_checksum": "sha256:w"}),
    )
    edit(
        root,
        CURVE / "r16/point.yaml",
        lambda d: d.update(
            speculative_decoding={"target_checksum": "sha256:t", "configuration": {"exit_layer": 12}}
        ),
    )
    edit(
        root,
        CURVE / "r32/point.yaml",
        lambda d: d.update(
            speculative_decoding={"target_checksum": "sha256:t", "configuration": {"exit_layer": 24}}
        ),
    )
    report = check(root, approve("2026-10-C1"))  # earliest usable 2026-11-C1 <= 2026-12-C0
    assert found(report, "approved-drafter", "info", "r8") and found(
        report, "approved-drafter", "info", "r32"
    )
    assert found(report, "approved-drafter", point="r16")  # same target, different configuration
    assert found(report, "drafter-approval-lead-time", "info", "r8")

    report = check(root, approve("2026-11-C1"))  # earliest usable 2026-12-C1 > 2026-12-C0
    (err,) = found(report, "drafter-approval-lead-time", point="r8")
    assert "earliest usable target_cohort is 2026-12-C1" in err.message
    edit(root, CURVE / "r8/point.yaml", lambda d: d.update(target_cohort="2026-13-C0"))
    assert found(check(root, approve("2026-11-C1")), "drafter-approval-lead-time", "warning", "r8")


# ---------------------------------------------------------------- steady state


def _steady(status="windowable", start=0, end=3, state=None, verdict="STEADY STATE"):
    return {
        "status": status,
        "verdict": verdict,
        "state": state or {"tpot_p90": "Plateau", "ttft_p90": "Plateau"},
        "window": {"super_pass_start": start, "super_pass_end": end, "duration_s": 1300.0},
    }


def test_steady_state_vocabulary(root):
    edit(
        root,
        CURVE / "r4/point.yaml",
        lambda d: d.update(steady_state=_steady(status="great", verdict="ok", state={"tpot_p90": "Flat"})),
    )
    edit(root, CURVE / "r8/point.yaml", lambda d: d.update(steady_state="windowable"))
    report = check(root)
    (err,) = found(report, "steady-state-valid", point="r4")
    assert (
        "status 'great'" in err.message and "verdict 'ok'" in err.message and "state[tpot_p90]" in err.message
    )
    # a steady_state that is no mapping fails point.yaml's official schema, as in the official checker
    assert found(report, "point-config-valid", point="r8")
    assert found(report, "point-rules-skipped", "warning", point="r8")


def test_steady_state_status_consistent_with_its_window(root):
    edit(root, CURVE / "r4/point.yaml", lambda d: d.update(steady_state=_steady()))
    edit(root, CURVE / "r8/point.yaml", lambda d: d.update(steady_state=_steady(end=1)))
    edit(
        root,
        CURVE / "r16/point.yaml",
        lambda d: d.update(steady_state=_steady(state={"tpot_p90": "Drifting Up", "ttft_p90": "Plateau"})),
    )
    edit(
        root,
        CURVE / "r32/point.yaml",
        lambda d: d.update(steady_state=_steady(status="insufficient_passes", end=5)),
    )
    report = check(root)
    assert found(report, "steady-state-consistency", "info", "r4") and found(
        report, "steady-state-valid", "info", "r4"
    )
    assert "over 2 super-pass(es)" in found(report, "steady-state-consistency", point="r8")[0].message
    assert "tpot_p90" in found(report, "steady-state-consistency", point="r16")[0].message
    assert "meets the" in found(report, "steady-state-consistency", point="r32")[0].message


# ---------------------------------------------------------------- agentic accuracy


def _agentic(root: Path, *, inline: float | None = 0.6, swe: bool = True) -> None:
    edit_points(
        root,
        "point.yaml",
        lambda d: (d["runtime_settings"].update(load_pattern="agentic_inference"), d.pop("offline", None)),
    )
    edit_points(root, "config.yaml", lambda d: d["settings"]["load_pattern"].update(type="agentic_inference"))
    for c in POINTS:
        path = root / CURVE / f"r{c}" / "accuracy_results.json"
        data = json.loads(path.read_text()) if path.exists() else {"accuracy_scores": []}
        for entry in data["accuracy_scores"]:
            if swe:
                entry["dataset_name"] = "swe_bench"
        if inline is not None:
            data["accuracy_scores"].append(
                {
                    "dataset_name": "performance",
                    "dataset_type": "performance",
                    "score": inline,
                    "total_samples": 10,
                }
            )
        if data["accuracy_scores"]:
            path.write_text(json.dumps(data))


AGENTIC_RULES = {"inline_min": 55.0, "swebench_min": 90.0, "osl_range": [100, 200]}


def _agentic_ruleset(targets=AGENTIC_RULES):
    return ruleset_with(lambda raw: raw["models"]["llama3_1-8b"].update(agentic_accuracy=dict(targets)))


def test_agentic_curve_without_published_thresholds_warns(root):
    _agentic(root)
    (warn,) = found(check(root), "agentic-accuracy", "warning", None)
    assert "no agentic accuracy gate" in warn.message
    report = check(root, _agentic_ruleset({"inline_min": None, "swebench_min": None}))
    assert "TBD" in found(report, "agentic-accuracy", "warning", None)[0].message


def test_agentic_inline_swebench_and_osl_gates(root):
    _agentic(root, inline=0.6)
    edit(root, CURVE / "r8/accuracy_results.json", lambda d: d["accuracy_scores"][-1].update(score=0.5))
    edit(
        root,
        CURVE / "r16/result_summary.json",
        lambda d: d.update(output_sequence_lengths_full_run={"output_sequence_lengths": {"avg": 150.0}}),
    )
    edit(
        root,
        CURVE / "r32/result_summary.json",
        lambda d: d.update(output_sequence_lengths_full_run={"output_sequence_lengths": {"avg": 250.0}}),
    )
    report = check(root, _agentic_ruleset())
    assert len(found(report, "agentic-accuracy-inline", "info")) == 6
    (err,) = found(report, "agentic-accuracy-inline", point="r8")
    assert "50.00 < 55.0" in err.message
    (swe,) = found(report, "agentic-accuracy-swebench", "info", None)
    assert "mean of 4 band(s) = 100.00" in swe.message
    assert found(report, "agentic-osl-range", "info", "r16")
    assert "250.0 outside 100\u2013200" in found(report, "agentic-osl-range", point="r32")[0].message
    (warn,) = found(report, "agentic-osl-range", "warning", None)
    assert "r1, r2, r4, r8, r64" in warn.message
    # the single-turn gate does not apply to an agentic curve with its own targets
    assert not found(report, "accuracy-sample-count") and not found(report, "accuracy-gate", "warning")
    # inline-only results fill no accuracy band
    assert not found(report, "accuracy-coverage")


def test_agentic_missing_inline_and_failing_swebench(root):
    _agentic(root, inline=None)
    edit(root, CURVE / "r4/accuracy_results.json", lambda d: d["accuracy_scores"][0].update(score=0.2))
    report = check(root, _agentic_ruleset())
    (err,) = found(report, "agentic-accuracy-inline", point=None)
    assert "r1, r2, r4, r8, r16, r32, r64" in err.message
    (err,) = found(report, "agentic-accuracy-swebench", point=None)
    assert "80.00 < 90.0" in err.message
    edit(root, CURVE / "r4/accuracy_results.json", lambda d: d["accuracy_scores"][0].update(score=20))
    (err,) = found(check(root, _agentic_ruleset()), "agentic-accuracy-swebench", point="r4")
    assert "not a fraction" in err.message


# ---------------------------------------------------------------- Appendix D defaults, estimated power


def test_absent_tdps_take_appendix_d_defaults_and_tag_the_power_estimated(root):
    def defaults(d):
        comp = d["node_sets"][0]["components"]
        comp["cpu"].pop("tdp_per_unit")  # "Acme X86 64-core": D.2 x86 <= 64 cores, 350 W
        comp["accelerator"] = {"model": "NVIDIA B200", "count_per_node": 8}  # D.3, 1000 W
        d.pop("computed")
        d.pop("provisioned_power_kw")

    edit(root, POWER, defaults)
    report = check(root)
    (warn,) = found(report, "power-estimated", "warning", None)
    assert (
        "D.2" in warn.message
        and "D.3" in warn.message
        and warn.file == "results/Acme_AX-8000/system_power.json"
    )
    pr = {p.key: p for p in report.points}[f"{KEY}/r8"]
    assert pr.extra["power"]["provisioned_kw"] == pytest.approx((2 * 350 + 8 * 1000 + 4 * 250) * 1.5 / 1000)
    assert not found(report, "power-descriptor")


def test_mlc_default_sources_and_models_without_a_default(root):
    def mlc(d):
        d["node_sets"][0]["components"]["accelerator"]["tdp_per_unit"] = {
            "value_w": 700,
            "source_type": "mlc_default",
            "source": "D.3",
        }

    edit(root, POWER, mlc)
    assert "(D.3 default)" in found(check(root), "power-estimated", "warning", None)[0].message
    edit(
        root,
        POWER,
        lambda d: d["node_sets"][0]["components"]["accelerator"]["tdp_per_unit"].update(source="D.9"),
    )
    assert any("D.9" in f.message for f in found(check(root), "power-descriptor", point=None))
    edit(root, POWER, lambda d: d["node_sets"][0]["components"]["accelerator"].pop("tdp_per_unit"))
    (err,) = [f for f in found(check(root), "power-descriptor", point=None) if "accelerator" in f.message]
    assert "Appendix D has no default" in err.message  # "Acme A1" is not a D.3 model


# ---------------------------------------------------------------- warmup against the raw log


def _events(c: int, dest: Path) -> Path:
    with tarfile.open(ARCHIVES / f"AX-8000_c{c}.tar.gz") as tar:
        member = next(m for m in tar.getmembers() if m.name.endswith(f"c{c}/events.jsonl"))
        dest.write_bytes(tar.extractfile(member).read())
    return dest


def test_replay_counts_warmup_issues_before_tracking(tmp_path):
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(FIXTURES / "tokenizer" / "tokenizer.json"))
    summary = recompute_point(
        _events(4, tmp_path / "events.jsonl"), tokenizer=tok, findings=Findings(), display="events.jsonl"
    )
    assert summary["warmup"] == {"issued": 4}
    assert summary["n_samples_issued"] > 4  # warmup issues are not tracked samples


def test_warmup_declaration_cross_checked_against_the_log(root):
    def with_log(issued: int) -> Report:
        report = Report()
        report.points.append(
            PointResult(
                system="Acme_AX-8000",
                model="llama3_1-8b",
                concurrency=4,
                source="bundle",
                recomputed={"warmup": {"issued": issued}},
            )
        )
        return check(root, report=report)

    assert not found(with_log(4), "warmup-log-mismatch", "warning")
    (warn,) = found(with_log(7), "warmup-log-mismatch", "warning", "r4")
    assert (
        "declares 4" in warn.message
        and "issues 7" in warn.message
        and warn.pointer == "/warmup/requests_issued"
    )
