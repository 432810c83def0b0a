"""Policy is rule-set data: editing checker/rulesets/endpoints-v1.0.yaml changes the verdict, no code change."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.checker.broken_bundles import base_copy
from tests.checker.test_official_rules import CURVE, POINTS, check, edit, found, ruleset_with


@pytest.fixture
def root(tmp_path) -> Path:
    return base_copy(tmp_path)


def test_warmup_limit_is_ruleset_data(root):
    assert not found(check(root), "warmup-present")
    strict = ruleset_with(lambda raw: raw.update(warmup={"max_duration_s": 1}))
    assert found(check(root, strict), "warmup-present", point="r8")  # the samples warm up for ~2 s


def test_mixed_cooling_is_ruleset_data(root):
    for c in POINTS:  # top level says liquid, the node type air: mixed
        edit(root, CURVE / f"r{c}/system_desc.json", lambda d: d.update(cooling="liquid"))
    cooling_mismatch = [f for f in found(check(root), "power-descriptor") if "cooling" in f.message]
    assert not cooling_mismatch  # counted as air, as system_power.json declares
    as_liquid = ruleset_with(lambda raw: raw["power"].update(mixed_cooling="liquid"))
    assert [f for f in found(check(root, as_liquid), "power-descriptor") if "cooling" in f.message]


def test_fraction_scores_are_ruleset_data(root):
    def gate_rouge1(raw):
        raw["models"]["llama3_1-8b"]["accuracy"]["targets"] = {
            "score": {"reference": 90.0, "min_fraction": 1.0}
        }
        raw["models"]["llama3_1-8b"]["accuracy"]["gated_metrics"] = {"*": ["score"]}

    # the samples score 1.0: read as a fraction it is 100 % and passes a 90 % gate ...
    assert not found(check(root, ruleset_with(gate_rouge1)), "accuracy-gate")

    def as_is(raw):
        gate_rouge1(raw)
        raw["accuracy_scores"] = {"fractions": False}

    # ... read as it stands it is 1.0 < 90
    assert found(check(root, ruleset_with(as_is)), "accuracy-gate")


def test_gated_metrics_per_dataset_are_ruleset_data(root):
    """models.<m>.accuracy.gated_metrics: which metrics of which accuracy dataset reach the gate."""
    accuracy_points = (1, 4, 16, 64)
    for c in accuracy_points:  # the acc_probe_32 entries also report rouge1 0.30: 30 % < 38.39 %, the gate
        edit(
            root, CURVE / f"r{c}/accuracy_results.json", lambda d: d["accuracy_scores"][0].update(rouge1=0.30)
        )
    assert found(check(root), "accuracy-gate")  # "*" gates rouge1 from every dataset

    def not_from_the_probe(raw):
        raw["models"]["llama3_1-8b"]["accuracy"]["gated_metrics"] = {
            "cnn_dailymail": ["rouge1", "rouge2", "rougel", "rougelsum", "gen_len"]
        }

    report = check(root, ruleset_with(not_from_the_probe))
    assert not found(report, "accuracy-gate")  # acc_probe_32 is not a gated dataset any more ...
    assert found(report, "accuracy-gate", severity="warning")  # ... so no gated metric is reported

    def only_rouge2(raw):
        raw["models"]["llama3_1-8b"]["accuracy"]["gated_metrics"] = {"acc_probe_32": ["rouge2"]}

    assert not found(check(root, ruleset_with(only_rouge2)), "accuracy-gate")


def test_gated_metrics_must_name_a_target():
    from checker.judge.ruleset import RulesetError

    def unknown(raw):
        raw["models"]["llama3_1-8b"]["accuracy"]["gated_metrics"] = {"*": ["bleu"]}

    with pytest.raises(RulesetError, match="gated_metrics"):
        ruleset_with(unknown)


def test_unnamed_score_key_is_ruleset_data(root):
    def one_target(raw):
        raw["models"]["llama3_1-8b"]["accuracy"]["targets"] = {
            "rouge1": {"reference": 90.0, "min_fraction": 1.0}
        }
        raw["models"]["llama3_1-8b"]["accuracy"].pop("gated_metrics")

    # the samples' unnamed `score` 1.0 stands in for the only target: 100 % >= 90 %, gated and passing
    report = check(root, ruleset_with(one_target))
    assert not found(report, "accuracy-gate") and not found(report, "accuracy-gate", severity="warning")

    def renamed(raw):
        one_target(raw)
        raw["accuracy_scores"]["unnamed_score"] = "primary"

    # with another name for the unnamed score, `score` is no metric: nothing is gated
    assert found(check(root, ruleset_with(renamed)), "accuracy-gate", severity="warning")
