"""Physical consistency on the real sample runs: in flight, implied concurrency, one raw log per point, one
declared concurrency, and durations per rule set, through `portal check` (checker.cli.main) and checker.check."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from checker.cli.local_check import check
from tests.checker.archive_builders import RUN_ARCHIVES, relabelled_run_archive, run_members, write_tar_gz

FIXTURES = Path(__file__).parent / "fixtures"
TOKENIZER = FIXTURES / "tokenizer" / "tokenizer.json"
PREVIEW = "endpoints-v1.0-preview"
PHYSICAL_RULES = {
    "in-flight-max",
    "in-flight-mean",
    "implied-concurrency",
    "raw-log-duplicate",
    "concurrency-declared",
}


def archive(concurrency: int) -> Path:
    return FIXTURES / "run_archives" / f"AX-8000_c{concurrency}.tar.gz"


def portal_check(*paths: Path, out: Path, ruleset: str = PREVIEW) -> tuple[int, dict]:
    result = subprocess.run(
        [sys.executable, "-m", "checker.cli.main", "check", *map(str, paths), "--tokenizer", str(TOKENIZER)]
        + ["--ruleset", ruleset, "--json", str(out)],
        capture_output=True,
        text=True,
        cwd=Path(__file__).parents[2],
        timeout=300,
    )
    return result.returncode, json.loads(out.read_text())


def errors(report: dict, rule: str) -> list[dict]:
    return [f for f in report["findings"] if f["rule"] == rule and f["severity"] == "error"]


@pytest.fixture(scope="module")
def genuine(tmp_path_factory) -> dict:
    """`portal check` of the seven real AX-8000 run archives (JSON report)."""
    _, report = portal_check(*RUN_ARCHIVES, out=tmp_path_factory.mktemp("genuine") / "report.json")
    return report


def test_real_runs_are_physically_consistent_and_report_their_figures(genuine):
    assert not [f for f in genuine["findings"] if f["rule"] in PHYSICAL_RULES]
    for point in genuine["points"]:
        concurrency, physical, recomputed = point["concurrency"], point["physical"], point["recomputed"]
        claimed = point["claimed"]
        assert physical["declared_concurrency"] == concurrency
        # The client's own latency total over its own duration (result_summary.json): the time-weighted mean.
        assert physical["mean_in_flight"] == pytest.approx(
            claimed["latency"]["total"] / claimed["duration_ns"], rel=1e-12
        )
        assert physical["max_in_flight"] == concurrency  # every sample run filled its slots, never more
        assert physical["mean_in_flight_min"] <= physical["mean_in_flight"] <= concurrency
        assert physical["implied_concurrency"] == pytest.approx(claimed["tps"] / claimed["tps_per_user"])
        assert physical["implied_concurrency"] <= physical["implied_concurrency_max"]
        assert len(recomputed["raw_log_sha256"]) == 64
    by_c = {p["concurrency"]: p["physical"] for p in genuine["points"]}
    # The real c32 run: 30.05 in flight on average (ramp and drain of a 20 s run), implied 29.9 users.
    assert by_c[32]["mean_in_flight"] == pytest.approx(30.05, abs=0.01)
    assert by_c[32]["implied_concurrency"] == pytest.approx(29.89, abs=0.01)


def test_the_raw_log_digest_is_the_sha256_of_events_jsonl(genuine):
    import hashlib

    members = run_members(8)
    (events,) = [data for name, data in members.items() if name.endswith("events.jsonl")]
    (point,) = [p for p in genuine["points"] if p["concurrency"] == 8]
    assert point["recomputed"]["raw_log_sha256"] == hashlib.sha256(events).hexdigest()


def test_a_run_relabelled_in_every_file_fails_on_its_point(tmp_path):
    relabelled = relabelled_run_archive(tmp_path / "AX-8000_c16.tar.gz", concurrency=32, as_concurrency=16)
    others = [archive(c) for c in (1, 2, 4, 8, 64)]
    code, report = portal_check(*others, relabelled, out=tmp_path / "report.json")
    assert code == 1 and report["verdict"] == "fail"
    point = "Acme_AX-8000/llama3_1-8b/r16"
    (peak,) = errors(report, "in-flight-max")
    assert peak["point"] == point and peak["file"].endswith("c16/events.jsonl") and peak["line"] > 0
    assert "up to 32 tracked requests" in peak["message"] and peak["fix"]
    (implied,) = errors(report, "implied-concurrency")
    assert implied["point"] == point and "29.9 users" in implied["message"]
    # Every declared file was relabelled consistently, so nothing but the raw log tells.
    assert not errors(report, "concurrency-declared")
    assert not errors(report, "raw-log-duplicate")
    (r16,) = [p for p in report["points"] if p["concurrency"] == 16]
    assert r16["physical"]["max_in_flight"] == 32


def test_one_run_under_two_points_fails_naming_both(tmp_path):
    copy = relabelled_run_archive(tmp_path / "AX-8000_c32.tar.gz", concurrency=16, as_concurrency=32)
    code, report = portal_check(archive(16), copy, out=tmp_path / "report.json")
    assert code == 1
    (duplicate,) = errors(report, "raw-log-duplicate")
    assert duplicate["point"] == "Acme_AX-8000/llama3_1-8b/r32"
    assert "c16/events.jsonl" in duplicate["message"] and "c32/events.jsonl" in duplicate["message"]
    assert "r16" in duplicate["message"] and "r32" in duplicate["message"]
    # The c16 run keeps ~15 in flight: far from the 32 its copy declares.
    (mean,) = errors(report, "in-flight-mean")
    assert mean["point"] == "Acme_AX-8000/llama3_1-8b/r32" and "15.26" in mean["message"]


def test_the_same_tracked_sequence_in_a_rewritten_log_is_a_duplicate(tmp_path):
    members = run_members(4)
    (name,) = [n for n in members if n.endswith("events.jsonl")]
    changed = dict(members)
    # One more blank line at the end: another file (another SHA-256), the same tracked samples in the same order.
    changed[name] = members[name] + b"\n"
    folder = {n.replace("c4/", "c8/", 1): d for n, d in changed.items()}
    for n in list(folder):
        if n.endswith("point.yaml"):
            folder[n] = folder[n].replace(b"concurrency: 4\n", b"concurrency: 8\n")
    copy = write_tar_gz(tmp_path / "AX-8000_c8.tar.gz", folder)
    report = check([archive(4), copy], tokenizer=TOKENIZER, ruleset=PREVIEW)
    (duplicate,) = [f for f in report.findings if f.rule == "raw-log-duplicate"]
    assert "the same tracked sample sequence" in duplicate.message and duplicate.point.endswith("/r8")


def test_files_declaring_different_concurrencies_are_named(tmp_path):
    members = run_members(8)
    partly = {}
    for name, data in members.items():
        if name.endswith("point.yaml"):
            data = data.replace(b"concurrency: 8\n", b"concurrency: 4\n", 1)
        partly["c4/" + name.split("/", 1)[1]] = data
    code, report = portal_check(write_tar_gz(tmp_path / "AX-8000_c4.tar.gz", partly), out=tmp_path / "r.json")
    assert code == 1
    (mismatch,) = errors(report, "concurrency-declared")
    assert mismatch["point"] == "Acme_AX-8000/llama3_1-8b/r4" and mismatch["file"].endswith("point.yaml")
    assert "point.yaml concurrency = 4" in mismatch["message"]
    assert "config.yaml settings.load_pattern.target_concurrency = 8" in mismatch["message"]
    assert "result_summary.json run_config.load_pattern.target_concurrency = 8" in mismatch["message"]


def test_short_runs_are_errors_under_the_official_rule_set_and_warnings_under_the_preview(tmp_path):
    official = check([archive(16)], tokenizer=TOKENIZER, ruleset="endpoints-v1.0")
    preview = check([archive(16)], tokenizer=TOKENIZER, ruleset=PREVIEW)
    (short,) = [f for f in official.findings if f.rule == "point-duration"]
    assert (
        short.severity == "error" and short.point.endswith("/r16") and "< minimum 600000 ms" in short.message
    )
    assert [f.severity for f in preview.findings if f.rule == "point-duration"] == ["warning"]
    assert official.ruleset == "endpoints-v1.0" and preview.ruleset == PREVIEW


def test_portal_check_defaults_to_the_official_rule_set(tmp_path):
    folder = tmp_path / "c16"
    shutil.copy(archive(16), tmp_path / "AX-8000_c16.tar.gz")
    result = subprocess.run(
        [sys.executable, "-m", "checker.cli.main", "check", str(tmp_path / "AX-8000_c16.tar.gz")]
        + ["--tokenizer", str(TOKENIZER), "--json", str(folder.with_suffix(".json"))],
        capture_output=True,
        text=True,
        cwd=Path(__file__).parents[2],
        timeout=300,
    )
    report = json.loads(folder.with_suffix(".json").read_text())
    assert result.returncode == 1 and report["ruleset"] == "endpoints-v1.0"
    assert errors(report, "point-duration")
