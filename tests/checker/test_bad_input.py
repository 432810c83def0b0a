"""DESIGN.md "Bad input", item by item, through `checker.check`: each gets its stable finding, never an exception."""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import tarfile
from pathlib import Path

import pytest
import zstandard

from checker import check
from checker.read.inputs import Limits

FIXTURES = Path(__file__).parent / "fixtures"
TOKENIZER = FIXTURES / "tokenizer" / "tokenizer.json"
C1 = FIXTURES / "run_archives" / "AX-8000_c1.tar.gz"
BUNDLE = FIXTURES / "bundle" / "AcmeCompute" / "acme-2026-12-C0-endpoints-001"


@pytest.fixture
def run_folder(tmp_path) -> Path:
    with tarfile.open(C1) as tar:
        tar.extractall(tmp_path / "unpacked", filter="data")
    return tmp_path / "unpacked" / "c1"


def _tar_of(folder: Path, dest: Path, extra=None) -> Path:
    with tarfile.open(dest, "w:gz") as tar:
        tar.add(folder, arcname=folder.name)
        for info, data in extra or []:
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return dest


def _run(paths, **kwargs):
    kwargs.setdefault("ruleset", "endpoints-v1.0-preview")  # short sample runs (docs/rules.md, "Rule sets")
    return check([str(p) for p in paths], tokenizer=TOKENIZER, **kwargs)


def _one(report, rule: str):
    found = [f for f in report.findings if f.rule == rule]
    assert found, f"no {rule} finding; got {sorted({f.rule for f in report.findings})}"
    for f in found:
        assert f.message and f.file, f
    return found[0]


def _member(name: str, kind=tarfile.REGTYPE, data: bytes = b"x", linkname: str = ""):
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = linkname
    info.size = len(data) if kind == tarfile.REGTYPE else 0
    return info, data if kind == tarfile.REGTYPE else None


@pytest.mark.parametrize(
    ("member", "rule"),
    [
        (_member("c1/../../escape.txt"), "archive-path-traversal"),
        (_member("/etc/escape.txt"), "archive-absolute-path"),
        (_member("c1/link", tarfile.SYMTYPE, linkname="/etc/passwd"), "archive-link"),
        (_member("c1/hard", tarfile.LNKTYPE, linkname="c1/point.yaml"), "archive-link"),
        (_member("c1/dev", tarfile.CHRTYPE), "archive-special-file"),
    ],
)
def test_hostile_archive_members(tmp_path, run_folder, member, rule):
    archive = _tar_of(run_folder, tmp_path / "AX-8000_c1.tar.gz", extra=[member])
    report = _run([archive], workdir=tmp_path / "work")
    finding = _one(report, rule)
    assert "AX-8000_c1.tar.gz" in finding.file
    assert not (tmp_path / "escape.txt").exists() and not Path("/etc/escape.txt").exists()
    assert report.points and report.points[0].recomputed is not None  # the rest is still checked


def test_archive_bomb_is_capped(tmp_path, run_folder):
    (run_folder / "padding.bin").write_bytes(b"\0" * (8 * 1024 * 1024))
    archive = _tar_of(run_folder, tmp_path / "bomb.tar.gz")
    report = _run([archive], limits=Limits(max_total_bytes=4 * 1024 * 1024, max_member_ratio=50))
    assert {f.rule for f in report.findings} & {"archive-ratio", "archive-too-large"}


def test_too_many_members(tmp_path, run_folder):
    for i in range(40):
        (run_folder / f"extra{i}.md").write_text("x")
    report = _run([_tar_of(run_folder, tmp_path / "many.tar.gz")], limits=Limits(max_members=20))
    _one(report, "archive-too-many-members")


def test_truncated_archive(tmp_path, run_folder):
    archive = _tar_of(run_folder, tmp_path / "cut.tar.gz")
    archive.write_bytes(archive.read_bytes()[: archive.stat().st_size // 2])
    report = _run([archive])
    _one(report, "archive-corrupt")


def test_truncated_zstd_raw_log(run_folder):
    raw = (run_folder / "events.jsonl").read_bytes()
    packed = zstandard.ZstdCompressor().compress(raw)
    (run_folder / "events.jsonl.zst").write_bytes(packed[: len(packed) // 2])
    (run_folder / "events.jsonl").unlink()
    report = _run([run_folder])
    assert {f.rule for f in report.findings} & {"raw-log-corrupt", "events-corrupt-compression"}
    assert report.verdict == "fail"


def _edit_events(folder: Path, edit) -> None:
    path = folder / "events.jsonl"
    lines = path.read_bytes().split(b"\n")
    path.write_bytes(b"\n".join(edit(lines)))


def test_huge_line_in_raw_log(run_folder):
    _edit_events(
        run_folder, lambda lines: lines[:3] + [b'{"event_type":"x","pad":"' + b"a" * 5000 + b'"}'] + lines[3:]
    )
    report = _run([run_folder], limits=Limits(max_line_bytes=4096))
    assert _one(report, "raw-log-line-too-long").line == 4


def test_invalid_utf8_in_raw_log_and_descriptor(run_folder):
    _edit_events(run_folder, lambda lines: lines[:2] + [b"\xff\xfe garbage"] + lines[2:])
    (run_folder / "point.yaml").write_bytes((run_folder / "point.yaml").read_bytes() + b"\nnotes: \xff\xfe\n")
    report = _run([run_folder])
    assert _one(report, "raw-log-invalid-utf8").line == 3
    assert _one(report, "invalid-utf8").line is not None


def test_nan_and_infinity(run_folder):
    summary = run_folder / "performance" / "result_summary.json"
    summary.write_text(summary.read_text().replace('"qps": ', '"qps": NaN, "qps_x": ', 1))
    _edit_events(
        run_folder,
        lambda lines: lines[:2] + [b'{"event_type":"sample.recv_first","timestamp_ns":Infinity}'] + lines[2:],
    )
    report = _run([run_folder])
    assert _one(report, "json-nonfinite").pointer == "/qps"
    assert _one(report, "raw-log-nonfinite").line == 3


def test_non_monotonic_timestamps(run_folder):
    def swap(lines):
        events = [json.loads(x) for x in lines if x.strip()]
        main = [i for i, e in enumerate(events) if e["event_type"] == "sample.issued"]
        events[main[5]]["timestamp_ns"] = events[main[4]]["timestamp_ns"] - 10**9
        return [json.dumps(e).encode() for e in events] + [b""]

    _edit_events(run_folder, swap)
    report = _run([run_folder])
    assert _one(report, "raw-log-non-monotonic").line is not None
    assert report.verdict == "fail"


def test_duplicate_events(run_folder):
    def dup(lines):
        issued = next(i for i, x in enumerate(lines) if b"sample.complete" in x)
        return lines[: issued + 1] + [lines[issued]] + lines[issued + 1 :]

    _edit_events(run_folder, dup)
    report = _run([run_folder])
    assert _one(report, "raw-log-duplicate-event").line is not None


def test_wrong_checksums(tmp_path):
    bundle = tmp_path / "AcmeCompute" / BUNDLE.name
    shutil.copytree(BUNDLE, bundle)
    summary = bundle / "results" / "Acme_AX-8000" / "llama3_1-8b" / "r1" / "result_summary.json"
    good = hashlib.sha256(summary.read_bytes()).hexdigest()
    (bundle / "SHA256SUMS").write_text(
        f"{good}  results/Acme_AX-8000/llama3_1-8b/r1/result_summary.json\n"
        f"{'0' * 64}  results/Acme_AX-8000/llama3_1-8b/r2/result_summary.json\n"
        f"{'1' * 64}  results/nowhere.json\n"
        f"{'2' * 64}  ../../etc/passwd\n"
        "not a checksum line\n"
    )
    report = _run([bundle])
    mismatch = _one(report, "checksum-mismatch")
    assert mismatch.line == 2 and "r2/result_summary.json" in mismatch.file
    assert _one(report, "checksum-missing-file").line == 3
    assert _one(report, "checksum-path").line == 4
    assert _one(report, "checksum-malformed").line == 5
    assert not [f for f in report.findings if f.rule.startswith("checksum") and "r1/" in (f.file or "")]


def test_missing_files(tmp_path, run_folder):
    (run_folder / "performance" / "result_summary.json").unlink()
    (run_folder / "system_desc.json").unlink()
    report = _run([run_folder])
    # reported once, under the official checker's ids
    missing = [
        f for f in report.findings if f.rule in ("result-summary-present", "system-description-present")
    ]
    assert {Path(f.file).name for f in missing} == {"result_summary.json", "system_desc.json"}
    assert not [f for f in report.findings if f.rule == "required-file"]
    assert report.verdict == "fail"


def test_everything_at_once_never_raises(tmp_path, run_folder):
    _edit_events(run_folder, lambda lines: [b"\xff", b"{", b"[]", b'{"event_type": 5}'] + lines[::-1])
    (run_folder / "point.yaml").write_text("concurrency: [1, 2\n")
    (run_folder / "system_desc.json").write_text('{"a": NaN, "a": 1}')
    report = _run([run_folder, tmp_path / "does-not-exist.tar.gz"])
    json.loads(report.to_json())
    assert report.verdict == "fail"


def test_run_archives_with_differing_system_power_copies(tmp_path):
    folders = []
    for name in ("AX-8000_c1.tar.gz", "AX-8000_c2.tar.gz"):
        with tarfile.open(FIXTURES / "run_archives" / name) as tar:
            tar.extractall(tmp_path / name, filter="data")
        folders.append(next((tmp_path / name).iterdir()))
    power = folders[1] / "system_power.json"
    data = json.loads(power.read_text())
    data["provisioned_power_kw"] = 5.0
    power.write_text(json.dumps(data))
    report = _run(folders)
    finding = _one(report, "system-power-consistency")
    assert finding.point == "Acme_AX-8000/llama3_1-8b/r2" and "provisioned_power_kw" in finding.message
    assert report.verdict == "fail"
    # identical copies (the real archives) are fine
    assert not [
        f
        for f in _run(
            [FIXTURES / "run_archives" / "AX-8000_c1.tar.gz", FIXTURES / "run_archives" / "AX-8000_c2.tar.gz"]
        ).findings
        if f.rule == "system-power-consistency"
    ]
