"""The shipped JSON Schemas accept every real sample and catch wrong types, missing keys, negative counts."""

from __future__ import annotations

import copy
import json

import pytest
import yaml

from checker.read.inputs import Limits, open_inputs
from checker.read.schema_check import SCHEMAS, check_layout_descriptors, validate, validator
from checker.report import Findings
from tests.checker.archive_builders import BUNDLE_ROOT, RUN_ARCHIVES

POINT = BUNDLE_ROOT / "results" / "Acme_AX-8000" / "llama3_1-8b" / "r1"


def test_schemas_are_valid_draft_2020_12():
    for name in SCHEMAS:
        assert validator(name).schema["$schema"].endswith("2020-12/schema")


def test_all_real_samples_pass(tmp_path):
    findings = Findings()
    layout = open_inputs([BUNDLE_ROOT, *RUN_ARCHIVES], workdir=tmp_path, limits=Limits(), findings=findings)
    assert [f.rule for f in findings] == [
        "duplicate-point"
    ] * 7  # AX-8000 is both in the bundle and the archives
    assert len(layout.points) == 14
    check_layout_descriptors(layout, findings=findings, limits=Limits())
    assert [f.rule for f in findings] == ["duplicate-point"] * 7

    findings = Findings()
    layout = open_inputs(RUN_ARCHIVES, workdir=tmp_path / "runs", limits=Limits(), findings=findings)
    check_layout_descriptors(layout, findings=findings, limits=Limits())
    assert list(findings) == [] and len(layout.points) == 7


def _sample(name: str):
    path = POINT / name if name != "system_power.json" else POINT.parent.parent / name
    text = path.read_text()
    return yaml.safe_load(text) if name.endswith(".yaml") else json.loads(text)


CASES = [
    ("point.yaml", "point", ["concurrency"], "4", "/concurrency"),
    ("point.yaml", "point", ["concurrency"], -1, "/concurrency"),
    (
        "point.yaml",
        "point",
        ["runtime_settings", "load_pattern"],
        {"type": "concurrency"},
        "/runtime_settings/load_pattern",
    ),
    ("point.yaml", "point", ["model_name"], None, ""),
    (
        "system_desc.json",
        "system_desc",
        ["node_types", 0, "accelerator_info", 0, "accelerators_per_node"],
        -8,
        "/node_types/0/accelerator_info/0/accelerators_per_node",
    ),
    ("system_desc.json", "system_desc", ["tensor_parallel"], "1", "/tensor_parallel"),
    ("system_desc.json", "system_desc", ["system_name"], None, ""),
    ("result_summary.json", "result_summary", ["n_samples_completed"], -3, "/n_samples_completed"),
    (
        "result_summary.json",
        "result_summary",
        ["ttft", "percentiles", "99.0"],
        "fast",
        "/ttft/percentiles/99.0",
    ),
    ("result_summary.json", "result_summary", ["duration_ns"], 1.5, "/duration_ns"),
    ("result_summary.json", "result_summary", ["tps"], None, ""),
    (
        "accuracy_results.json",
        "accuracy_results",
        ["accuracy_scores", 0, "response_counts", "scored"],
        -1,
        "/accuracy_scores/0/response_counts/scored",
    ),
    ("accuracy_results.json", "accuracy_results", ["accuracy_scores"], {"score": 1}, "/accuracy_scores"),
    (
        "system_power.json",
        "system_power",
        ["node_sets", 0, "components", "cpu", "tdp_per_unit", "value_w"],
        -350,
        "/node_sets/0/components/cpu/tdp_per_unit/value_w",
    ),
    ("system_power.json", "system_power", ["system_desc_id"], 7, "/system_desc_id"),
    ("system_power.json", "system_power", ["node_sets"], None, ""),
]


@pytest.mark.parametrize(("file", "schema", "path", "value", "pointer"), CASES)
def test_wrong_values_are_caught_with_pointer(file, schema, path, value, pointer):
    obj = copy.deepcopy(_sample(file))
    assert validate(obj, schema, display=file, findings=Findings())
    target = obj
    for key in path[:-1]:
        target = target[key]
    if value is None:
        del target[path[-1]]  # a missing required key
    else:
        target[path[-1]] = value
    findings = Findings()
    assert not validate(obj, schema, display=f"AcmeCompute/x/{file}", findings=findings, point="S/M/r1")
    assert len(findings) == 1
    (f,) = findings
    assert f.rule == "schema-" + schema.replace("_", "-")
    assert (f.severity, f.file, f.pointer, f.point) == ("error", f"AcmeCompute/x/{file}", pointer, "S/M/r1")
    if value is None:
        assert repr(path[-1]) in f.message and "required" in f.message


def test_cli_metadata_is_permissive_but_typed():
    good = {
        "submission_id": "acme-2026-12-C0-endpoints-001",
        "organisation": "AcmeCompute",
        "cli_version": "1.5.3.0",
        "created_at": "2026-11-30T05:40:00Z",
        "files": [{"path": "results/Acme_AX-8000/system_power.json", "sha256": "a" * 64, "size": 1434}],
        "something_new": {"any": "thing"},
    }
    assert validate(good, "cli_metadata", display="cli_metadata.json", findings=Findings())
    bad = copy.deepcopy(good)
    bad["files"][0]["sha256"] = "not-a-hash"
    bad["cli_version"] = 1.5
    findings = Findings()
    assert not validate(bad, "cli_metadata", display="cli_metadata.json", findings=findings)
    assert {f.pointer for f in findings} == {"/cli_version", "/files/0/sha256"}
    assert {f.rule for f in findings} == {"schema-cli-metadata"}
