"""Cross-check with the official checker: its verdict in the report, disagreements as info findings."""

from __future__ import annotations

import json
import os

import pytest

from checker.cli import official_cross_check as official
from checker.cli.official_cross_check import compare, cross_check, official_command, point_of
from checker.judge.rules import run_rules
from checker.report import Report
from tests.checker.bundle_layout import BUNDLE, OFFICIAL_VERDICT, layout_of


def test_point_of_official_paths():
    assert (
        point_of("/x/results/y/AcmeCompute/s/results/Acme_AX-4000/llama3_1-8b/r16/point.yaml")
        == "Acme_AX-4000/llama3_1-8b/r16"
    )
    assert point_of("bundle/AcmeCompute/s/results/Acme_AX-4000/llama3_1-8b") is None


def test_absence_is_reported_as_info(monkeypatch):
    monkeypatch.setattr(official, "official_command", lambda: None)
    report = Report()
    cross_check(layout_of(BUNDLE), report)
    assert report.official == {"available": False, "package": "endpoints-submission-cli"}
    assert [(f.rule, f.severity) for f in report.findings] == [("official-checker-unavailable", "info")]


def test_disagreements_name_both_verdicts():
    report = Report()
    run_rules(layout_of(BUNDLE), report, ruleset="endpoints-v1.0-preview")
    compare(report, json.loads(OFFICIAL_VERDICT.read_text())["results"])
    msgs = [f.message for f in report.findings if f.rule == "official-checker-disagreement"]
    assert all(f.severity == "info" for f in report.findings if f.rule == "official-checker-disagreement")
    # the portal reports accuracy-sample-count at r4 too; the official checker names only r1
    assert any(m.startswith("Portal: error accuracy-sample-count") for m in msgs)
    assert not any(m.startswith("Official checker:") for m in msgs)


def test_real_official_checker_on_the_sample_bundle(tmp_path):
    if official_command() is None:
        # `make test` installs the `official` extra; only a hand-made environment may lack it.
        if os.environ.get("CI", "").lower() in ("1", "true"):
            pytest.fail("endpoints-submission-cli is not installed (pip install -e '.[official]')")
        pytest.skip("endpoints-submission-cli is not installed")
    report = Report()
    run_rules(layout_of(BUNDLE), report, ruleset="endpoints-v1.0-preview")
    cross_check(layout_of(BUNDLE), report)
    assert report.official["ran"] is True
    assert (report.official["errors"], report.official["warnings"]) == (8, 28)  # as in the stored verdict
    assert report.official["exit_code"] == 1
    assert "official" in json.loads(report.to_json())
    stored = {(r["rule"], r["severity"]) for r in json.loads(OFFICIAL_VERDICT.read_text())["results"]}
    assert {(r["rule"], r["severity"]) for r in report.official["results"]} == stored
    assert any(f.rule == "official-checker-disagreement" for f in report.findings)


def test_a_rule_the_official_checker_files_on_the_model_folder_is_paired_there():
    """agentic-accuracy-inline: the official checker files it on the model folder, the portal on each point; the same
    finding is not reported as two disagreements (real Zephyr ZX-2 bundle and its real official verdict)."""
    agentic = BUNDLE.parents[2] / "agentic"
    report = Report()
    run_rules(
        layout_of(agentic / "bundle" / "Zephyr_Silicon" / "zephyr-2026-12-C0-endpoints-001"),
        report,
        ruleset="endpoints-v1.0",
    )
    assert {
        f.point for f in report.findings if f.rule == "agentic-accuracy-inline" and f.severity == "error"
    } >= {"Zephyr_ZX-2/qwen3_6-35b-a3b/r1"}
    compare(
        report, json.loads((agentic / "checker" / "official-checker-verdict.json").read_text())["results"]
    )
    msgs = [f.message for f in report.findings if f.rule == "official-checker-disagreement"]
    assert not [m for m in msgs if "agentic-accuracy-inline" in m]


def test_a_bundle_judged_again_byte_for_byte_gets_the_same_verdict_without_a_second_run(
    tmp_path, monkeypatch
):
    """The official CLI costs a new interpreter per bundle; a re-check of the same bytes (copied elsewhere, as a
    re-check's sandbox is) reads the verdict this process already has, naming its own folder, and a bundle that
    differs by one byte is judged afresh."""
    import shutil
    import subprocess

    if official_command() is None:
        if os.environ.get("CI", "").lower() in ("1", "true"):
            pytest.fail("endpoints-submission-cli is not installed (pip install -e '.[official]')")
        pytest.skip("endpoints-submission-cli is not installed")
    monkeypatch.setattr(official, "_verdicts", type(official._verdicts)())
    runs = []
    real_run = subprocess.run

    def counted(*args, **kwargs):
        runs.append(args[0])
        return real_run(*args, **kwargs)

    monkeypatch.setattr(official.subprocess, "run", counted)
    first_root = shutil.copytree(BUNDLE, tmp_path / "first" / BUNDLE.name)
    second_root = shutil.copytree(BUNDLE, tmp_path / "second" / BUNDLE.name)
    first, problem = official.run_official(first_root)
    assert problem == "" and len(runs) == 1
    second, problem = official.run_official(second_root)
    assert problem == "" and len(runs) == 1  # the same bytes: no second interpreter
    assert second["exit_code"] == first["exit_code"] == 1
    paths = [r.get("path") for r in second["results"] if r.get("path")]
    assert paths and not [p for p in paths if "first" in p]
    assert [{**r, "path": str(r.get("path")).replace("second", "first")} for r in second["results"]] == [
        {**r, "path": str(r.get("path"))} for r in first["results"]
    ]
    # One byte more in a descriptor: judged again.
    descriptor = next(second_root.rglob("*.json"))
    descriptor.write_bytes(descriptor.read_bytes() + b" ")
    official.run_official(second_root)
    assert len(runs) == 2
