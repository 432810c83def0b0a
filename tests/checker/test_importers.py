"""`portal import` on real outputs of other benchmark tools: each tool's summary reproduced from its own
per-request records, the portal's metrics beside it, and bad files turned into findings."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from checker.cli.import_pipeline import FIGURES, import_runs
from checker.read import kinds
from checker.recompute.imported import Slo

ROOT = Path(__file__).parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "importers"
GUIDELLM = FIXTURES / "guidellm"
AIPERF = FIXTURES / "aiperf"
INFERENCE_PERF = FIXTURES / "inference_perf"
VLLM = FIXTURES / "vllm_bench"


def portal(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "checker.cli.main", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )


def by_label(result) -> dict[tuple[str, str], dict]:
    return {(point["file"], point["label"]): point for point in result.points}


# ------------------------------------------------------------------------------------------------ registry


def test_every_kind_has_one_spelling_and_the_layout_asks_the_registry(tmp_path):
    names = [k.name for k in kinds.kinds()]
    assert names[:2] == ["bundle", "run_archives"]
    assert {"guidellm", "aiperf", "inference_perf", "vllm_bench"} <= {k.name for k in kinds.importers()}
    assert len(set(names)) == len(names)
    run = tmp_path / "c4"
    (run / "performance").mkdir(parents=True)
    (run / "point.yaml").write_text("concurrency: 4\n")
    (run / "performance" / "result_summary.json").write_text("{}")
    assert kinds.detect_folder(run).name == "run_archives"
    (tmp_path / "org" / "sub" / "results").mkdir(parents=True)
    assert kinds.detect_folder(tmp_path / "org" / "sub").name == "bundle"
    assert kinds.detect_folder(tmp_path / "org") is None
    assert kinds.importer_for(GUIDELLM / "benchmarks.json").name == "guidellm"
    assert kinds.importer_for(AIPERF / "c4" / "profile_export.jsonl").name == "aiperf"
    assert kinds.importer_for(AIPERF / "c4" / "profile_export_aiperf.json").name == "aiperf"
    assert (
        kinds.importer_for(INFERENCE_PERF / "c4" / "stage_0_lifecycle_metrics.json").name == "inference_perf"
    )
    assert kinds.importer_for(INFERENCE_PERF / "c4" / "config.yaml") is None
    assert kinds.importer_for(VLLM / "c4.json").name == "vllm_bench"


def test_the_raw_log_reader_gives_the_tracked_samples_as_the_recompute_counts_them(tmp_path):
    import numpy as np
    from tokenizers import Tokenizer

    from checker.read.inputs import Limits, open_inputs
    from checker.recompute.tokens import TokenCounter
    from checker.report import Findings
    from tests.checker.archive_builders import RUN_ARCHIVES

    layout = open_inputs([RUN_ARCHIVES[3]], workdir=tmp_path / "work", limits=Limits(), findings=Findings())
    point = layout.points[0]
    summary = json.loads(point.files["result_summary.json"].read_text())
    counter = TokenCounter(Tokenizer.from_file(str(ROOT / "tests/checker/fixtures/tokenizer/tokenizer.json")))
    records = list(kinds.kind(layout.kind).requests(point.files["events"], token_counter=counter))
    assert len(records) == summary["n_samples_completed"]
    assert sum(not r.ok for r in records) == summary["n_samples_failed"]
    assert sum(r.output_tokens for r in records if r.ok) == summary["output_sequence_lengths"]["total"]
    ttft_ns = np.array([round((r.first_token_s - r.issued_s) * 1e9) for r in records])
    assert abs(np.percentile(ttft_ns, 90, method="lower") - summary["ttft"]["percentiles"]["90.0"]) < 1e3


# ------------------------------------------------------------------------------------------------ GuideLLM


@pytest.fixture(scope="module")
def guidellm():
    return import_runs([GUIDELLM / "benchmarks.json", GUIDELLM / "benchmarks-errors.json"])


def test_guidellm_summary_is_reproduced_from_its_requests(guidellm):
    assert guidellm.tool == "guidellm" and guidellm.tool_version == "0.8.1"
    assert guidellm.findings == []
    assert [(p["concurrency"], p["file"]) for p in guidellm.points] == [
        (1, "benchmarks.json"),
        (4, "benchmarks-errors.json"),
        (4, "benchmarks.json"),
        (8, "benchmarks.json"),
    ]
    for point in guidellm.points:
        assert set(point["reported"]) == set(FIGURES)  # GuideLLM has every figure but tpot p90/p99
        assert point["reported"].keys() == point["recomputed"].keys()
        assert max(point["relative_difference"].values()) <= 1e-9
    assert guidellm.max_relative_difference <= 1e-9


def test_guidellm_run_with_server_errors_counts_them_as_guidellm_does(guidellm):
    errors = by_label(guidellm)[("benchmarks-errors.json", "concurrent@4")]
    assert errors["reported"]["requests_completed"] == errors["recomputed"]["requests_completed"] == 12
    assert errors["reported"]["requests_failed"] == errors["recomputed"]["requests_failed"] == 12
    portal_metrics = errors["portal"]
    # the portal counts every request of the point, failed ones as SLO violations
    assert portal_metrics["requests"] == 24 and portal_metrics["requests_ok"] == 12
    assert portal_metrics["attainment"] == pytest.approx(0.5)
    assert portal_metrics["goodput"] == pytest.approx(12 / errors["reported"]["duration_s"])


def test_portal_metrics_follow_the_portal_definitions(guidellm):
    point = by_label(guidellm)[("benchmarks.json", "concurrent@8")]
    portal_metrics = point["portal"]
    assert portal_metrics["concurrency"] == 8
    # system_tps = output tokens of the successful requests / the tool's window (GuideLLM's own tokens/s differs
    # only by the tokens it places outside the window, none here)
    assert portal_metrics["system_tps"] == pytest.approx(
        point["reported"]["output_token_throughput"], rel=1e-9
    )
    assert portal_metrics["tps_per_user"] == pytest.approx(1000 / portal_metrics["tpot_p90_ms"])
    strict = import_runs([GUIDELLM / "benchmarks.json"], slo=Slo(ttft_ms=80, tpot_ms=100))
    strict_point = by_label(strict)[("benchmarks.json", "concurrent@8")]["portal"]
    assert 0 < strict_point["attainment"] < 1
    assert strict_point["attainment"] == strict_point["attainment_ttft"]
    assert strict_point["goodput"] < portal_metrics["goodput"]


def test_an_edited_guidellm_summary_is_caught(tmp_path):
    report = json.loads((GUIDELLM / "benchmarks.json").read_text())
    block = report["benchmarks"][1]["metrics"]["time_to_first_token_ms"]["successful"]
    block["percentiles"]["p90"] *= 0.8  # a nicer TTFT P90 than the requests show
    edited = tmp_path / "benchmarks.json"
    edited.write_text(json.dumps(report))
    result = import_runs([edited])
    mismatches = [f for f in result.findings if f.rule == "import-summary-mismatch"]
    assert len(mismatches) == 1 and "ttft_ms_p90" in mismatches[0].message
    assert mismatches[0].file == "benchmarks.json" and mismatches[0].fix
    assert result.verdict == "fail"


# ------------------------------------------------------------------------------------------------ AIPerf, inference-perf

# (tool folder, figures that tool does not have, figures its files do not let anyone recompute)
SWEEPS = {
    "aiperf": (AIPERF, {"tpot_ms_mean", "tpot_ms_p50"}, set()),
    "inference_perf": (INFERENCE_PERF, set(), set()),
    "vllm_bench": (VLLM, set(), {"duration_s"}),  # vLLM's wall time around the run is only in its summary
}


@pytest.mark.parametrize("tool", sorted(SWEEPS))
def test_sweep_and_error_run_reproduced_from_the_per_request_records(tool):
    folder, absent, not_recomputable = SWEEPS[tool]
    result = import_runs([folder], tool=tool)
    assert result.tool == tool and result.findings == []
    assert [(p["concurrency"], Path(p["file"]).parts[0].removesuffix(".json")) for p in result.points] == [
        (1, "c1"),
        (4, "c4"),
        (4, "errors-c4"),
        (8, "c8"),
    ]
    for point in result.points:
        assert set(point["reported"]) == set(FIGURES) - absent
        assert set(point["recomputed"]) == set(point["reported"]) - not_recomputable
        for key, diff in point["relative_difference"].items():
            assert diff <= point["tolerance"].get(key, 1e-9), key
    errors = next(p for p in result.points if p["file"].startswith("errors-c4"))
    assert errors["reported"]["requests_completed"] == errors["recomputed"]["requests_completed"] == 12
    assert errors["reported"]["requests_failed"] == errors["recomputed"]["requests_failed"] == 12
    assert errors["portal"]["requests"] == 24 and errors["portal"]["requests_ok"] == 12
    assert errors["portal"]["attainment"] <= 0.5


def test_aiperf_throughputs_are_held_to_the_precision_of_its_window():
    result = import_runs([AIPERF / "c8"])
    point = result.points[0]
    # latencies agree to rounding; throughputs divide by a window written to the microsecond
    assert max(v for k, v in point["relative_difference"].items() if k not in point["tolerance"]) < 1e-12
    assert 1e-9 < point["relative_difference"]["request_throughput"] <= 1e-6
    assert point["tolerance"]["request_throughput"] == 1e-6


def test_an_inference_perf_request_dropped_from_the_per_request_report_is_caught(tmp_path):
    run = tmp_path / "c4"
    run.mkdir()
    for name in ("stage_0_lifecycle_metrics.json", "config.yaml"):
        (run / name).write_bytes((INFERENCE_PERF / "c4" / name).read_bytes())
    rows = json.loads((INFERENCE_PERF / "c4" / "per_request_lifecycle_metrics.json").read_text())
    slowest = max(rows, key=lambda row: row["end_time"] - row["start_time"])
    rows.remove(slowest)
    (run / "per_request_lifecycle_metrics.json").write_text(json.dumps(rows))
    result = import_runs([run])
    rules = {f.rule for f in result.findings}
    assert rules == {"import-summary-mismatch"}
    assert any("requests_completed" in f.message for f in result.findings)


def test_an_aiperf_folder_without_its_records_or_with_a_broken_line_gets_findings(tmp_path):
    alone = tmp_path / "alone"
    alone.mkdir()
    (alone / "profile_export_aiperf.json").write_bytes(
        (AIPERF / "c1" / "profile_export_aiperf.json").read_bytes()
    )
    result = import_runs([alone])
    assert [f.rule for f in result.findings] == [
        "import-schema"
    ] and "profile_export.jsonl" in result.findings[0].message
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "profile_export_aiperf.json").write_bytes(
        (AIPERF / "c1" / "profile_export_aiperf.json").read_bytes()
    )
    lines = (AIPERF / "c1" / "profile_export.jsonl").read_bytes().splitlines(keepends=True)
    lines[3] = lines[3].replace(b'"value":', b'"value":NaN,"x":', 1)
    (broken / "profile_export.jsonl").write_bytes(b"".join(lines))
    result = import_runs([broken])
    invalid = [f for f in result.findings if f.rule == "import-record-invalid"]
    assert len(invalid) == 1 and invalid[0].line == 4
    # the dropped record no longer matches the summary's count
    assert any(
        f.rule == "import-summary-mismatch" and "requests_completed" in f.message for f in result.findings
    )


def test_a_vllm_result_saved_without_its_per_request_details_is_refused_with_a_fix(tmp_path):
    # vLLM bench writes the per-request lists only with --save-detailed; the summary alone cannot be re-derived
    summary_only = tmp_path / "vllm-4.0qps-concurrency4-mock.json"
    summary_only.write_text(
        json.dumps(
            {
                "date": "20261202-013000",
                "endpoint_type": "openai-chat",
                "backend": "openai-chat",
                "label": None,
                "model_id": "mock-llama",
                "tokenizer_id": "tok",
                "num_prompts": 24,
                "request_rate": "inf",
                "burstiness": 1.0,
                "max_concurrency": 4,
                "duration": 2.0,
                "completed": 24,
                "failed": 0,
                "mean_ttft_ms": 80.0,
            }
        )
    )
    assert kinds.importer_for(summary_only).name == "vllm_bench"
    result = import_runs([summary_only])
    assert [f.rule for f in result.findings] == ["import-schema"]
    assert "--save-detailed" in result.findings[0].fix


# ------------------------------------------------------------------------------------------------ bad input


def test_hostile_or_foreign_files_get_findings_not_exceptions(tmp_path):
    nan = tmp_path / "benchmarks.json"
    nan.write_text('{"metadata": {"guidellm_version": "0.8.1"}, "benchmarks": [{"duration": NaN}]}')
    result = import_runs([nan])
    assert [f.rule for f in result.findings] == ["json-nonfinite"] and result.points == []
    truncated = tmp_path / "cut" / "benchmarks.json"
    truncated.parent.mkdir()
    truncated.write_bytes((GUIDELLM / "benchmarks-errors.json").read_bytes()[:5000])
    result = import_runs([truncated])
    assert [f.rule for f in result.findings] == ["json-syntax"]
    assert result.findings[0].line is not None
    no_benchmarks = tmp_path / "empty" / "benchmarks.json"
    no_benchmarks.parent.mkdir()
    no_benchmarks.write_text('{"metadata": {"guidellm_version": "0.8.1"}, "benchmarks": "none"}')
    assert [f.rule for f in import_runs([no_benchmarks]).findings] == ["import-schema"]
    huge = json.loads((GUIDELLM / "benchmarks-errors.json").read_text())
    huge["benchmarks"][0]["requests"]["successful"][0]["info"]["timings"]["token_iterations"] = 10**12
    hostile = tmp_path / "huge" / "benchmarks.json"
    hostile.parent.mkdir()
    hostile.write_text(json.dumps(huge))
    result = import_runs([hostile])  # an iteration count that would size a terabyte array is not trusted
    assert [(f.rule, f.severity, f.pointer) for f in result.findings] == [
        ("import-schema", "warning", "/benchmarks/0")
    ]
    other = tmp_path / "notes.txt"
    other.write_text("hello")
    assert [f.rule for f in import_runs([other]).findings] == ["import-unrecognised"]
    assert [f.rule for f in import_runs([tmp_path / "missing.json"]).findings] == ["import-no-file"]


# ------------------------------------------------------------------------------------------------ command


def test_portal_import_prints_both_columns_and_writes_the_json_contract(tmp_path):
    out = tmp_path / "import.json"
    result = portal("import", str(GUIDELLM), "--tool", "guidellm", "--json", str(out))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "reported" in result.stdout and "recomputed" in result.stdout and "concurrent@8" in result.stdout
    data = json.loads(out.read_text())
    assert data["tool"] == "guidellm" and data["tool_version"] == "0.8.1"
    point = data["points"][0]
    assert {"concurrency", "reported", "recomputed", "portal"} <= set(point)
    assert {"system_tps", "tps_per_user", "ttft_p90_ms", "goodput", "attainment"} <= set(point["portal"])
    unreadable = portal("import", str(tmp_path / "nothing-here"))
    assert unreadable.returncode == 2
