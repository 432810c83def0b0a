"""`portal check` end to end on the real samples: exit codes, JSON contract, text form."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import jsonschema
import pytest

FIXTURES = Path(__file__).parent / "fixtures"
ARCHIVES = sorted((FIXTURES / "run_archives").glob("AX-8000_c*.tar.gz"))
TOKENIZER = FIXTURES / "tokenizer" / "tokenizer.json"
SCHEMA = json.loads((Path(__file__).parents[2] / "checker" / "schemas" / "report.schema.json").read_text())


def portal(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    if args and args[0] == "check" and "--ruleset" not in args:
        # The sample runs are ~20 s: checked under the preview rule set (test_physical.py checks the default).
        args = (*args, "--ruleset", "endpoints-v1.0-preview")
    return subprocess.run(
        [sys.executable, "-m", "checker.cli.main", *args],
        capture_output=True,
        text=True,
        cwd=cwd or Path(__file__).parents[2],
        timeout=300,
    )


@pytest.fixture(scope="module")
def archives_report(tmp_path_factory) -> tuple[subprocess.CompletedProcess, dict]:
    out = tmp_path_factory.mktemp("cli") / "report.json"
    result = portal("check", *map(str, ARCHIVES), "--tokenizer", str(TOKENIZER), "--json", str(out))
    return result, json.loads(out.read_text())


def test_run_archives_recompute_without_consistency_errors(archives_report):
    result, report = archives_report
    jsonschema.Draft202012Validator(SCHEMA).validate(report)
    assert [p["concurrency"] for p in report["points"]] == [1, 2, 4, 8, 16, 32, 64]
    assert {p["system"] for p in report["points"]} == {"Acme_AX-8000"}
    for point in report["points"]:
        assert point["recomputed"] is not None
        assert point["recomputed"]["n_samples_completed"] == point["claimed"]["n_samples_completed"]
    rules = {f["rule"] for f in report["findings"]}
    assert "raw-log-consistency" not in rules
    assert "raw-log-missing" not in rules
    # the exit code follows the verdict (short sample runs do break duration rules)
    assert result.returncode == (1 if report["verdict"] == "fail" else 0), result.stderr


def test_text_form_shows_the_point_table(archives_report):
    result, _ = archives_report
    assert "Verdict:" in result.stdout
    assert "Acme_AX-8000 / llama3_1-8b" in result.stdout
    assert "recomputed" in result.stdout
    # the rule suite's region, provisioned power and the Pareto front are in the text form too
    assert "low_latency" in result.stdout and "tps/kW" in result.stdout
    assert "Pareto front Acme_AX-8000 / llama3_1-8b" in result.stdout


def test_tampered_archive_fails_with_consistency_finding(tmp_path):
    source = next(a for a in ARCHIVES if a.name == "AX-8000_c8.tar.gz")
    with tarfile.open(source) as tar:
        tar.extractall(tmp_path / "x", filter="data")
    folder = tmp_path / "x" / "c8"
    summary_path = folder / "performance" / "result_summary.json"
    summary = json.loads(summary_path.read_text())
    summary["tps"] *= 1.2
    for key in ("total", "avg", "min", "max", "median", "std_dev"):
        summary["output_sequence_lengths"][key] *= 1.2
    summary_path.write_text(json.dumps(summary))
    result = portal("check", str(folder), "--tokenizer", str(TOKENIZER), "--format", "json")
    assert result.returncode == 1
    report = json.loads(result.stdout)
    consistency = [f for f in report["findings"] if f["rule"] == "raw-log-consistency"]
    assert {f["pointer"] for f in consistency} >= {"/tps", "/output_sequence_lengths/total"}
    assert all(f["point"] == "Acme_AX-8000/llama3_1-8b/r8" for f in consistency)


def test_bundle_without_raw_logs_cannot_pass(tmp_path):
    bundle = FIXTURES / "bundle"
    result = portal("check", str(bundle), "--tokenizer", str(TOKENIZER), "--format", "json")
    report = json.loads(result.stdout)
    assert result.returncode == 1
    missing = [f for f in report["findings"] if f["rule"] == "raw-log-missing"]
    assert len(missing) == 14


def test_usage_errors_exit_2(tmp_path):
    assert portal("check", str(tmp_path / "nope.tar.gz"), "--tokenizer", str(TOKENIZER)).returncode == 2
    assert portal("check", str(ARCHIVES[0])).returncode == 2  # --tokenizer is required
    bad_tok = tmp_path / "tokenizer.json"
    bad_tok.write_text("{}")
    assert portal("check", str(ARCHIVES[0]), "--tokenizer", str(bad_tok)).returncode == 2


def test_unreadable_input_exits_2(tmp_path):
    junk = tmp_path / "junk.tar.gz"
    junk.write_bytes(b"this is not an archive")
    result = portal("check", str(junk), "--tokenizer", str(TOKENIZER), "--format", "json")
    assert result.returncode == 2
    assert json.loads(result.stdout)["findings"]


def test_command_line_imports_no_django(tmp_path):
    code = (
        "import sys, checker.cli.main, checker.cli.local_check, checker.recompute.replay; "
        "sys.exit(1 if any(m == 'django' or m.startswith('django.') for m in sys.modules) else 0)"
    )
    assert subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).parents[2]).returncode == 0


def test_zst_point_folder_is_read(tmp_path):
    zstd = shutil.which("zstd")
    source = next(a for a in ARCHIVES if a.name == "AX-8000_c2.tar.gz")
    with tarfile.open(source) as tar:
        tar.extractall(tmp_path / "x", filter="data")
    folder = tmp_path / "x" / "c2"
    import zstandard

    raw = (folder / "events.jsonl").read_bytes()
    (folder / "events.jsonl.zst").write_bytes(zstandard.ZstdCompressor().compress(raw))
    (folder / "events.jsonl").unlink()
    result = portal("check", str(folder), "--tokenizer", str(TOKENIZER), "--format", "json")
    report = json.loads(result.stdout)
    assert report["points"][0]["recomputed"] is not None, zstd
    assert not [f for f in report["findings"] if f["rule"].startswith("raw-log")]


@pytest.mark.parametrize("value", ["1e999", "10" + "0" * 400, '"fast"', "null", "-5", "[1, 2]"])
def test_hostile_claimed_values_become_findings(tmp_path, value):
    source = next(a for a in ARCHIVES if a.name == "AX-8000_c1.tar.gz")
    with tarfile.open(source) as tar:
        tar.extractall(tmp_path / "x", filter="data")
    folder = tmp_path / "x" / "c1"
    summary_path = folder / "performance" / "result_summary.json"
    text = summary_path.read_text()
    summary = json.loads(text)
    summary["tps"] = "__TPS__"
    summary["n_samples_issued"] = "__ISSUED__"
    summary_path.write_text(json.dumps(summary).replace('"__TPS__"', value).replace('"__ISSUED__"', value))
    result = portal("check", str(folder), "--tokenizer", str(TOKENIZER), "--format", "json")
    assert result.returncode == 1, result.stderr
    report = json.loads(result.stdout)
    assert "Traceback" not in result.stderr
    assert any(
        f["severity"] == "error" and f["point"] == "Acme_AX-8000/llama3_1-8b/r1" for f in report["findings"]
    )


def test_official_cross_check_accepts_a_relative_bundle_path():
    if (
        shutil.which("endpoints-submission-cli") is None
        and not Path(sys.executable).with_name("endpoints-submission-cli").exists()
    ):
        if os.environ.get("CI", "").lower() in ("1", "true"):
            pytest.fail("endpoints-submission-cli is not installed (pip install -e '.[official]')")
        pytest.skip("endpoints-submission-cli is not installed")
    result = portal(
        "check",
        "tests/checker/fixtures/bundle",
        "--tokenizer",
        str(TOKENIZER),
        "--official",
        "--format",
        "json",
    )
    official = json.loads(result.stdout)["official"]
    assert official["ran"] is True
    assert (official["errors"], official["warnings"]) == (8, 28)  # the stored official verdict
    text = portal(
        "check", "tests/checker/fixtures/bundle", "--tokenizer", str(TOKENIZER), "--official"
    ).stdout
    assert "Official checker 1.5.3.0: 8 errors, 28 warnings on the same files (fails)" in text
