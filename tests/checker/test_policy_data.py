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

    # the samples score 1.0: read as a fraction it is 100 % and passes a 90 % gate ...
    assert not found(check(root, ruleset_with(gate_rouge1)), "accuracy-gate")

    def as_is(raw):
        gate_rouge1(raw)
        raw["accuracy_scores"] = {"fractions": False}

    # ... read as it stands it is 1.0 < 90
    assert found(check(root, ruleset_with(as_is)), "accuracy-gate")
