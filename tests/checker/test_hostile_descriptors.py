"""Hostile or malformed descriptors give findings, never exceptions, when the rules run over them."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from checker.judge.rules import run_rules
from checker.report import Report
from tests.checker.bundle_layout import BUNDLE, layout_of

HOSTILE = [None, "abc", "", -1, 0, 10**400, 1e308, -1e308, [], {}, True, [[[]]], {"x": {"y": None}}, "NaN"]
POINT = Path("results/Acme_AX-8000/llama3_1-8b/r16")
KEYS = {
    POINT / "point.yaml": [
        "concurrency",
        "region",
        "offline",
        "runtime_settings",
        "warmup",
        "seed_set",
        "model_name",
        "max_supported_concurrency",
        "target_cohort",
        "shared_src",
        "nodes_used",
        "steady_state",
        "dataset",
    ],
    POINT / "system_desc.json": [
        "max_supported_concurrency",
        "node_types",
        "cooling",
        "tps_utilization",
        "division",
    ],
    Path("results/Acme_AX-8000/system_power.json"): [
        "cooling",
        "node_sets",
        "scale_out",
        "computed",
        "provisioned_power_kw",
        "declared_provisioned_power",
    ],
    POINT / "config.yaml": ["settings", "model_params"],
    POINT / "result_summary.json": [
        "n_samples_issued",
        "n_samples_completed",
        "n_samples_failed",
        "duration_ns",
        "tpot",
        "ttft",
        "output_sequence_lengths",
        "tps",
        "system_tps",
        "tps_per_user",
    ],
    POINT / "accuracy_results.json": ["accuracy_scores"],
}


@pytest.fixture(scope="module")
def pristine(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("bundle") / "sub"
    shutil.copytree(BUNDLE, root)
    shutil.rmtree(root / "results" / "Acme_AX-4000")
    return root


def _read(path: Path):
    return yaml.safe_load(path.read_text()) if path.suffix == ".yaml" else json.loads(path.read_text())


def _write(path: Path, data) -> None:
    if path.suffix == ".yaml":
        path.write_text(yaml.safe_dump(data))
    else:
        path.write_text(json.dumps(data))


def _run(root: Path) -> Report:
    report = Report()
    run_rules(layout_of(root), report, ruleset="endpoints-v1.0-preview")
    json.loads(report.to_json())  # the report still serialises
    return report


def _nested(data, key, value):
    """Also poison one level down (e.g. settings.load_pattern, tpot.percentiles)."""
    if isinstance(data.get(key), dict):
        for sub in list(data[key])[:3]:
            yield {**data, key: {**data[key], sub: value}}


@pytest.mark.parametrize("rel", list(KEYS), ids=lambda p: p.name)
def test_wrong_document_type_gives_findings(pristine, tmp_path, rel):
    for value in ([], "just text", 42, None):
        root = tmp_path / "b"
        shutil.rmtree(root, ignore_errors=True)
        shutil.copytree(pristine, root)
        (root / rel).write_text(json.dumps(value))
        report = _run(root)
        assert any(f.severity in ("error", "warning") for f in report.findings), (rel, value)


@pytest.mark.parametrize("rel", list(KEYS), ids=lambda p: p.name)
def test_hostile_values_never_raise(pristine, tmp_path, rel):
    original = _read(pristine / rel)
    root = tmp_path / "b"
    shutil.copytree(pristine, root)
    cases = []
    for key in KEYS[rel]:
        cases.append({k: v for k, v in original.items() if k != key})  # missing key
        for value in HOSTILE:
            cases.append({**original, key: value})
            cases.extend(_nested(original, key, value))
    for data in cases:
        _write(root / rel, data)
        _run(root)


def test_nan_and_infinity_in_json_are_findings(pristine, tmp_path):
    root = tmp_path / "b"
    shutil.copytree(pristine, root)
    path = root / POINT / "system_desc.json"
    path.write_text(
        path.read_text().replace('"max_supported_concurrency": 64', '"max_supported_concurrency": NaN')
    )
    report = _run(root)
    assert any(
        f.severity == "error" and f.file and f.file.endswith("r16/system_desc.json") for f in report.findings
    )


def test_every_copy_of_system_desc_is_compared(pristine, tmp_path):
    root = tmp_path / "b"
    shutil.copytree(pristine, root)
    path = root / "results/Acme_AX-8000/llama3_1-8b/r32/system_desc.json"
    data = json.loads(path.read_text())
    data["system_name"] = "Something else"
    path.write_text(json.dumps(data))
    report = _run(root)
    hits = [
        f for f in report.findings if f.rule == "system-description-consistency" and f.severity == "error"
    ]
    assert [f.point for f in hits] == ["Acme_AX-8000/llama3_1-8b/r32"]
    assert "system_name" in hits[0].message
