"""checker.cli.assemble: the 7 AX-8000 run archives give the official builder's bundle, the checker agrees on
both forms, the official checker runs on run archives, and `portal assemble` shows the bundle."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from checker.cli.assemble import INJECTION_HEADER, AssemblyError, assemble, assemble_bundle
from checker.cli.local_check import check
from checker.cli.official_cross_check import official_command, verdict_keys
from checker.read.inputs import Limits, open_inputs
from checker.report import Findings
from tests.checker.bundle_layout import ARCHIVES, BUNDLE, OFFICIAL_VERDICT

RUN_ARCHIVES = sorted(ARCHIVES.glob("AX-8000_c*.tar.gz"))
TOKENIZER = ARCHIVES.parent / "tokenizer" / "tokenizer.json"
PREVIEW = "endpoints-v1.0-preview"  # the sample runs are ~20 s (docs/rules.md, "Rule sets")
ORG, SID = "AcmeCompute", "acme-2026-12-C0-endpoints-001"
CONCURRENCIES = (1, 2, 4, 8, 16, 32, 64)


def _layout(paths, tmp: Path):
    findings = Findings()
    layout = open_inputs(paths, workdir=tmp / "sandbox", limits=Limits(), findings=findings)
    return layout, findings


@pytest.fixture(scope="module")
def assembled(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("assembled")
    layout, findings = _layout(RUN_ARCHIVES, tmp)
    assert not findings
    out = Findings()
    root = assemble_bundle(layout, tmp / "out", organisation=ORG, submission_id=SID, findings=out)
    assert root == tmp / "out" / ORG / SID
    assert not out
    return root


def _official_ax8000_files() -> list[Path]:
    return sorted(
        p.relative_to(BUNDLE)
        for p in BUNDLE.rglob("*")
        if p.is_file()
        and (p.parts[len(BUNDLE.parts)] in ("src", "docs") or "Acme_AX-8000" in p.relative_to(BUNDLE).parts)
    )


def test_every_file_of_the_official_builder_is_reproduced(assembled):
    files = _official_ax8000_files()
    assert len(files) == 1 + 2 + 1 + 7 * 7 + 4  # README, 2 docs, system_power, 7 files per point, 4 accuracy
    for rel in files:
        ours, theirs = assembled / rel, BUNDLE / rel
        assert ours.is_file(), rel
        if rel.name != "system_desc.json":
            # byte-identical, point.yaml included (the builder's block is appended the same way)
            assert ours.read_bytes() == theirs.read_bytes(), rel
            continue
        # system_desc.json: identical parsed JSON, except the nulls the official schema dump adds for
        # optional fields the submitter left out (and its key order); tps_utilization is exactly equal
        mine, official = json.loads(ours.read_text()), json.loads(theirs.read_text())
        assert mine == {k: v for k, v in official.items() if not (v is None and k not in mine)}, rel
        assert mine["tps_utilization"] == official["tps_utilization"]
    point_yaml = (assembled / "results/Acme_AX-8000/llama3_1-8b/r1/point.yaml").read_text()
    assert point_yaml.endswith(f"{INJECTION_HEADER}\nshared_docs: docs\nshared_src: src/acme-serve\n")


def test_only_the_raw_logs_are_added(assembled):
    extra = sorted(
        p.relative_to(assembled).as_posix()
        for p in assembled.rglob("*")
        if p.is_file() and not (BUNDLE / p.relative_to(assembled)).is_file()
    )
    assert extra == sorted(f"results/Acme_AX-8000/llama3_1-8b/r{c}/events.jsonl" for c in CONCURRENCIES)
    with tarfile.open(ARCHIVES / "AX-8000_c8.tar.gz") as tf:
        raw = tf.extractfile("c8/events.jsonl").read()
    assert (assembled / "results/Acme_AX-8000/llama3_1-8b/r8/events.jsonl").read_bytes() == raw


def test_without_raw_logs(tmp_path):
    layout, _ = _layout(RUN_ARCHIVES, tmp_path)
    root = assemble_bundle(
        layout, tmp_path / "out", organisation=ORG, submission_id=SID, include_raw_logs=False
    )
    assert not list(root.rglob("events.jsonl*"))
    assert sorted(p.relative_to(root) for p in root.rglob("*") if p.is_file()) == _official_ax8000_files()


def test_check_agrees_on_run_archives_and_the_assembled_bundle(assembled):
    on_archives = check(RUN_ARCHIVES, tokenizer=TOKENIZER, ruleset=PREVIEW)
    on_bundle = check([assembled], tokenizer=TOKENIZER, ruleset=PREVIEW)
    by_point = lambda r: {(p.system, p.model, p.concurrency): p for p in r.points}  # noqa: E731
    a, b = by_point(on_archives), by_point(on_bundle)
    assert sorted(a) == sorted(b) and len(a) == 7
    for key in a:
        assert a[key].recomputed is not None and a[key].recomputed == b[key].recomputed, key
        assert a[key].claimed == b[key].claimed, key
    keys = lambda r: {(f.rule, f.severity, f.point) for f in r.findings}  # noqa: E731
    # documented difference (docs/assembly.md): the bundle-structure info `required-dir` is only
    # reported for a bundle; errors and warnings are the same set
    assert keys(on_archives) - keys(on_bundle) == set()
    assert keys(on_bundle) - keys(on_archives) == {("required-dir", "info", None)}
    assert on_archives.verdict == on_bundle.verdict


def _run_folders(tmp: Path, *concurrencies: int) -> Path:
    parent = tmp / "runs"
    parent.mkdir()
    for c in concurrencies:
        with tarfile.open(ARCHIVES / f"AX-8000_c{c}.tar.gz") as tf:
            tf.extractall(parent, filter="data")
    return parent


def test_identical_shared_files_are_written_once_and_differing_ones_reported(tmp_path):
    runs = _run_folders(tmp_path, 1, 2, 4)
    (runs / "c2/documentation/calibration.md").write_text("another calibration\n")
    power = json.loads((runs / "c4/system_power.json").read_text())
    power["note"] = "changed"
    (runs / "c4/system_power.json").write_text(json.dumps(power))
    (runs / "c4/src/acme-serve/extra.md").write_text("only in c4\n")
    layout, _ = _layout([runs], tmp_path)
    findings = Findings()
    root = assemble_bundle(layout, tmp_path / "out", organisation=ORG, submission_id=SID, findings=findings)
    conflicts = [(f.rule, f.severity, f.file, f.point) for f in findings]
    assert conflicts == [
        ("assembly-conflict", "warning", "c2/documentation/calibration.md", "Acme_AX-8000/llama3_1-8b/r2"),
        ("assembly-conflict", "warning", "c4/system_power.json", "Acme_AX-8000/llama3_1-8b/r4"),
    ]
    assert (
        "the assembled bundle keeps docs/calibration.md from c1/documentation/calibration.md"
        in findings[0].message
    )
    assert (root / "docs/calibration.md").read_bytes() == (
        runs / "c1/documentation/calibration.md"
    ).read_bytes()
    assert (root / "results/Acme_AX-8000/system_power.json").read_bytes() == (
        runs / "c1/system_power.json"
    ).read_bytes()
    assert (root / "src/acme-serve/extra.md").read_text() == "only in c4\n"
    assert sorted(p.name for p in (root / "src/acme-serve").iterdir()) == ["README.md", "extra.md"]


def test_links_are_not_followed_and_nothing_is_written_outside(tmp_path):
    runs = _run_folders(tmp_path, 1, 2)
    secret = tmp_path / "secret.txt"
    secret.write_text("not for the bundle\n")
    os.symlink(secret, runs / "c1/src/acme-serve/leak.md")
    os.symlink(tmp_path, runs / "c1/documentation/up")
    power = json.loads((runs / "c2/system_power.json").read_text())
    power["system_desc_id"] = ".."  # a system name that must never become a path
    (runs / "c2/system_power.json").write_text(json.dumps(power))
    layout, _ = _layout([runs], tmp_path)
    findings = Findings()
    out = tmp_path / "out"
    root = assemble_bundle(layout, out, organisation=ORG, submission_id=SID, findings=findings)
    assert [(f.rule, f.severity, f.point) for f in findings] == [
        ("assembly-skipped-point", "error", "../llama3_1-8b/r2")
    ]
    assert not (root / "src/acme-serve/leak.md").exists() and not (root / "docs/up").exists()
    assert sorted(p.name for p in (root / "results").iterdir()) == ["Acme_AX-8000"]
    assert [p.name for p in out.iterdir()] == [ORG] and [p.name for p in (out / ORG).iterdir()] == [SID]


def test_caller_errors_raise(tmp_path):
    layout, _ = _layout(RUN_ARCHIVES[:1], tmp_path)
    for org, sid in (("../x", SID), (ORG, ".."), (ORG, "a/b"), ("", SID)):
        with pytest.raises(AssemblyError):
            assemble(layout, tmp_path / "out", organisation=org, submission_id=sid)
    assemble(layout, tmp_path / "out", organisation=ORG, submission_id=SID)
    with pytest.raises(AssemblyError, match="already exists"):
        assemble(layout, tmp_path / "out", organisation=ORG, submission_id=SID)


def test_official_checker_runs_on_run_archives():
    if official_command() is None:
        if os.environ.get("CI", "").lower() in ("1", "true"):
            pytest.fail("endpoints-submission-cli is not installed (pip install -e '.[official]')")
        pytest.skip("endpoints-submission-cli is not installed")
    report = check(RUN_ARCHIVES, tokenizer=TOKENIZER, ruleset=PREVIEW, official=True)
    assert report.official["ran"] is True
    assert report.official["assembled"] == "AcmeCompute/pending-submission-id/"
    assert not any(
        f.rule in ("official-checker-unavailable",) or f.rule.startswith("assembly-") for f in report.findings
    )
    stored = json.loads(OFFICIAL_VERDICT.read_text())["results"]
    expected = {k for k in verdict_keys(stored) if k[2] is None or k[2].startswith("Acme_AX-8000/")}
    got = {
        (r["rule"], r["severity"], r["point"])
        for r in report.official["results"]
        if r["severity"] in ("error", "warning")
    }
    assert got == expected
    assert (report.official["errors"], report.official["warnings"]) == (4, 14)
    # the same deliberate differences as on the official bundle (docs/rules.md), now at the input points
    disagreements = {f.point for f in report.findings if f.rule == "official-checker-disagreement"}
    assert disagreements <= {f"Acme_AX-8000/llama3_1-8b/r{c}" for c in CONCURRENCIES}


def test_portal_assemble_command(tmp_path):
    def portal(*args):
        return subprocess.run(
            [sys.executable, "-m", "checker.cli.main", "assemble", *args],
            capture_output=True,
            text=True,
            cwd=Path(__file__).parents[2],
            timeout=300,
        )

    out = tmp_path / "bundle"
    result = portal(*map(str, RUN_ARCHIVES), "--out", str(out), "--submission-id", SID)
    assert result.returncode == 0, result.stderr
    root = out / ORG / SID
    assert result.stdout.startswith(f"{root}: 7 point(s), 64 files")
    assert "results/Acme_AX-8000/llama3_1-8b/r64/" in result.stdout
    assert (root / "results/Acme_AX-8000/llama3_1-8b/r64/events.jsonl").is_file()
    again = portal(*map(str, RUN_ARCHIVES), "--out", str(out), "--submission-id", SID)
    assert again.returncode == 2 and "already exists" in again.stderr
    plain = portal(*map(str, RUN_ARCHIVES), "--out", str(out), "--organisation", "Acme", "--no-raw-logs")
    assert plain.returncode == 0, plain.stderr
    assert (out / "Acme" / "pending-submission-id" / "docs/calibration.md").is_file()
    assert not list((out / "Acme").rglob("events.jsonl"))
    assert portal("nowhere.tar.gz", "--out", str(out)).returncode == 2


def test_official_checker_on_a_bundle_plus_run_archives_sees_every_point(tmp_path):
    if official_command() is None:
        pytest.skip("endpoints-submission-cli is not installed")
    runs = _run_folders(tmp_path, 1)
    power = json.loads((runs / "c1/system_power.json").read_text())
    power["system_desc_id"] = "Acme_AX-9000"  # an extra system only the run folder brings
    (runs / "c1/system_power.json").write_text(json.dumps(power))
    report = check([BUNDLE, runs / "c1"], tokenizer=TOKENIZER, ruleset=PREVIEW, official=True)
    assert report.official["ran"] is True
    assert report.official["assembled"] == "AcmeCompute/acme-2026-12-C0-endpoints-001/"
    points = {r["point"] for r in report.official["results"] if r["point"]}
    assert {p.split("/")[0] for p in points} == {"Acme_AX-4000", "Acme_AX-8000", "Acme_AX-9000"}
