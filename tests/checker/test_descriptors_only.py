"""Reading for the steps that need only the descriptors (open_inputs(raw_logs=False)): the raw logs inside archives
are read through (every cap and check applies, their SHA-256 is taken) but never written to the sandbox; the layout,
the findings of reading and the checksum verdicts are those of a full read."""

from __future__ import annotations

import hashlib
import io
import shutil
import tarfile
from pathlib import Path

from checker.read.checksums import verify_bundle_checksums
from checker.read.inputs import Limits, open_inputs
from checker.report import Findings
from tests.checker.archive_builders import BUNDLE_ROOT, RUN_ARCHIVES, run_members

POINT = "results/Acme_AX-8000/llama3_1-8b/r1"


def _read(paths, workdir: Path, *, raw_logs: bool):
    findings = Findings()
    layout = open_inputs(paths, workdir=workdir, limits=Limits(), findings=findings, raw_logs=raw_logs)
    return layout, findings


def _sandbox_bytes(folder: Path) -> int:
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file())


def _shape(layout):
    """What the steps see of a layout, with the sandbox folder taken out of the paths."""
    return [
        (point.key, point.display, sorted(point.files), sorted(point.displays.items()))
        for point in layout.points
    ]


def test_run_archives_read_without_raw_logs_give_the_same_layout_and_write_no_raw_log(tmp_path):
    full, full_findings = _read(RUN_ARCHIVES, tmp_path / "full", raw_logs=True)
    light, light_findings = _read(RUN_ARCHIVES, tmp_path / "light", raw_logs=False)
    assert _shape(light) == _shape(full) and len(light.points) == 7
    assert [f.to_dict() for f in light_findings] == [f.to_dict() for f in full_findings]
    for point in light.points:
        events = point.files["events"]
        assert events.is_file() and events.stat().st_size == 0  # a placeholder: the layout still sees the log
        original = next(p for p in full.points if p.key == point.key).files["events"].read_bytes()
        assert light.raw_log_digests[events.resolve()] == (
            hashlib.sha256(original).hexdigest(),
            len(original),
        )
    written, skipped = _sandbox_bytes(tmp_path / "light"), _sandbox_bytes(tmp_path / "full")
    assert written * 5 < skipped, (written, skipped)  # the raw logs are most of every archive
    assert light.inflated_bytes == full.inflated_bytes  # read through all the same


def _bundle_with_listed_raw_log(tmp_path: Path, *, listed_sha256: str | None = None) -> Path:
    """The sample bundle with r1's raw log added and listed in SHA256SUMS (with its own hash, or `listed_sha256`)."""
    root = tmp_path / "src" / "AcmeCompute" / BUNDLE_ROOT.name
    shutil.copytree(BUNDLE_ROOT, root)
    events = run_members(1)["c1/events.jsonl"]
    (root / POINT / "events.jsonl").write_bytes(events)
    listed = listed_sha256 or hashlib.sha256(events).hexdigest()
    point_yaml = (root / POINT / "point.yaml").read_bytes()
    (root / "SHA256SUMS").write_text(
        f"{listed}  {POINT}/events.jsonl\n{hashlib.sha256(point_yaml).hexdigest()}  {POINT}/point.yaml\n"
    )
    archive = tmp_path / "bundle.tar.gz"
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        tar.add(root.parent, arcname="AcmeCompute")
    archive.write_bytes(buffer.getvalue())
    return archive


def _checksum_findings(layout) -> list[dict]:
    findings = Findings()
    checked = verify_bundle_checksums(
        layout.root,
        root_display=layout.root_display,
        cli_metadata=layout.cli_metadata,
        findings=findings,
        known=layout.raw_log_digests,
    )
    assert checked == 2
    return [f.to_dict() for f in findings]


def test_a_raw_log_listed_in_sha256sums_is_verified_from_the_bytes_read_through(tmp_path):
    good = _bundle_with_listed_raw_log(tmp_path / "good")
    light, _ = _read([good], tmp_path / "good" / "light", raw_logs=False)
    assert (light.root / POINT / "events.jsonl").stat().st_size == 0
    assert _checksum_findings(light) == []  # no false mismatch on the placeholder

    bad = _bundle_with_listed_raw_log(tmp_path / "bad", listed_sha256="0" * 64)
    full, _ = _read([bad], tmp_path / "bad" / "full", raw_logs=True)
    light, _ = _read([bad], tmp_path / "bad" / "light", raw_logs=False)
    verdict = _checksum_findings(light)
    assert [f["rule"] for f in verdict] == ["checksum-mismatch"]
    assert verdict == _checksum_findings(full)
