"""open_inputs on the real samples: grouping into curves, display paths, bundle archives, missing files."""

from __future__ import annotations

from pathlib import Path

from checker.read.inputs import Limits, open_inputs
from checker.report import Findings
from tests.checker.archive_builders import (
    BUNDLE_PARENT,
    BUNDLE_ROOT,
    RUN_ARCHIVES,
    bundle_tar_zst,
    bundle_zip,
    run_members,
    write_tar_gz,
)

CONCURRENCIES = [1, 2, 4, 8, 16, 32, 64]


def _open(paths, tmp_path: Path, limits: Limits | None = None):
    findings = Findings()
    layout = open_inputs(list(paths), workdir=tmp_path / "work", limits=limits or Limits(), findings=findings)
    return layout, findings


def test_seven_run_archives_form_one_curve(tmp_path):
    layout, findings = _open(RUN_ARCHIVES, tmp_path)
    assert list(findings) == []
    assert layout.kind == "run_archives"
    assert layout.readable_inputs == 7
    curves = layout.curves()
    assert list(curves) == [("Acme_AX-8000", "llama3_1-8b")]
    assert [p.concurrency for p in curves[("Acme_AX-8000", "llama3_1-8b")]] == CONCURRENCIES
    assert set(layout.system_power) == {"Acme_AX-8000"}


def test_run_archive_files_and_display_paths(tmp_path):
    layout, _ = _open(RUN_ARCHIVES[:1], tmp_path)
    (point,) = layout.points
    assert point.key == "Acme_AX-8000/llama3_1-8b/r1"
    assert point.source == "run-archive"
    assert point.display == "AX-8000_c1.tar.gz:c1/"
    assert point.display_of("result_summary.json") == "AX-8000_c1.tar.gz:c1/performance/result_summary.json"
    assert point.display_of("events") == "AX-8000_c1.tar.gz:c1/events.jsonl"
    assert set(point.files) == {
        "point.yaml",
        "system_desc.json",
        "result_summary.json",
        "accuracy_results.json",
        "config.yaml",
        "report.txt",
        "sample_idx_map.json",
        "final_snapshot.json",
        "system_power.json",
        "events",
    }
    work = (tmp_path / "work").resolve()
    for path in point.files.values():
        assert work in path.resolve().parents
        assert (
            layout.display_for(path) == point.displays[next(k for k, v in point.files.items() if v == path)]
        )


def test_bundle_folder_gives_two_curves_of_seven_points(tmp_path):
    for given in (BUNDLE_PARENT, BUNDLE_ROOT):
        layout, findings = _open([given], tmp_path / given.name)
        assert list(findings) == []
        assert layout.kind == "bundle"
        assert layout.organisation == "AcmeCompute"
        assert layout.submission_id == "acme-2026-12-C0-endpoints-001"
        assert layout.root_display == "AcmeCompute/acme-2026-12-C0-endpoints-001/"
        curves = layout.curves()
        assert sorted(curves) == [("Acme_AX-4000", "llama3_1-8b"), ("Acme_AX-8000", "llama3_1-8b")]
        assert all([p.concurrency for p in pts] == CONCURRENCIES for pts in curves.values())
        point = curves[("Acme_AX-8000", "llama3_1-8b")][0]
        assert point.display_of("point.yaml") == (
            "AcmeCompute/acme-2026-12-C0-endpoints-001/results/Acme_AX-8000/llama3_1-8b/r1/point.yaml"
        )
        assert point.display_of("system_power.json") == (
            "AcmeCompute/acme-2026-12-C0-endpoints-001/results/Acme_AX-8000/system_power.json"
        )
        assert "events" not in point.files  # the official bundle carries no raw log
        assert len(layout.docs) == 2 and len(layout.src_readmes) == 1


def test_bundle_tar_zst_and_zip_read_like_the_folder(tmp_path):
    for archive in (bundle_tar_zst(tmp_path / "bundle.tar.zst"), bundle_zip(tmp_path / "bundle.zip")):
        layout, findings = _open([archive], tmp_path / ("w-" + archive.name))
        assert list(findings) == [], archive.name
        assert layout.kind == "bundle"
        assert len(layout.points) == 14
        assert layout.submission_id == "acme-2026-12-C0-endpoints-001"
        point = layout.curves()[("Acme_AX-4000", "llama3_1-8b")][-1]
        assert point.concurrency == 64
        assert point.display_of("result_summary.json") == (
            f"{archive.name}:AcmeCompute/acme-2026-12-C0-endpoints-001/results/Acme_AX-4000/llama3_1-8b/r64/"
            "result_summary.json"
        )


def test_unpacked_run_folder_and_zst_events(tmp_path):
    import zstandard

    folder = tmp_path / "runs" / "c2"
    for name, data in run_members(2).items():
        target = tmp_path / "runs" / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if name.endswith("events.jsonl"):
            target = target.with_name("events.jsonl.zst")
            data = zstandard.ZstdCompressor().compress(data)
        target.write_bytes(data)
    (folder / "power").mkdir()
    layout, findings = _open([folder], tmp_path)
    assert list(findings) == []
    (point,) = layout.points
    assert point.source == "run-folder" and point.key == "Acme_AX-8000/llama3_1-8b/r2"
    assert point.files["events"].name == "events.jsonl.zst"
    assert point.display_of("power") == "c2/power/"
    assert point.dir == folder  # read in place


def test_concurrency_falls_back_to_config_then_folder_name(tmp_path):
    files = run_members(4)
    files["c4/point.yaml"] = files["c4/point.yaml"].replace(b"concurrency: 4\n", b"", 1)
    write_tar_gz(tmp_path / "a.tar.gz", files)
    layout, _ = _open([tmp_path / "a.tar.gz"], tmp_path)
    assert layout.points[0].concurrency == 4
    files["c4/config.yaml"] = files["c4/config.yaml"].replace(
        b"target_concurrency: 4", b"target_concurrency: x"
    )
    files = {k.replace("c4/", "r4/"): v for k, v in files.items()}
    write_tar_gz(tmp_path / "b.tar.gz", files)
    layout, _ = _open([tmp_path / "b.tar.gz"], tmp_path / "b")
    assert layout.points[0].concurrency == 4


def test_missing_required_files_are_named(tmp_path):
    files = {
        k: v for k, v in run_members(1).items() if not k.endswith(("config.yaml", "final_snapshot.json"))
    }
    archive = write_tar_gz(tmp_path / "AX-8000_c1.tar.gz", files)
    layout, findings = _open([archive], tmp_path)
    missing = {(f.rule, f.file, f.point) for f in findings}
    # config.yaml is config-file-present's (the rules report it under the official id)
    assert missing == {
        ("required-file", "AX-8000_c1.tar.gz:c1/metrics/final_snapshot.json", "Acme_AX-8000/llama3_1-8b/r1"),
    }
    assert len(layout.points) == 1


def test_duplicate_point_is_reported_once_and_first_kept(tmp_path):
    copy = tmp_path / "again.tar.gz"
    copy.write_bytes(RUN_ARCHIVES[0].read_bytes())
    layout, findings = _open([RUN_ARCHIVES[0], copy], tmp_path)
    assert [f.rule for f in findings] == ["duplicate-point"]
    assert findings[0].point == "Acme_AX-8000/llama3_1-8b/r1"
    assert "again.tar.gz:c1/" in findings[0].message
    assert [p.display for p in layout.points] == ["AX-8000_c1.tar.gz:c1/"]


def test_mixed_bundle_and_run_archives(tmp_path):
    layout, findings = _open([BUNDLE_ROOT, RUN_ARCHIVES[0]], tmp_path)
    assert layout.kind == "mixed"
    assert [f.rule for f in findings] == ["duplicate-point"]  # the bundle already holds AX-8000 r1


def test_unreadable_and_unrecognised_inputs(tmp_path):
    junk = tmp_path / "notes.tar.gz"
    junk.write_text("not an archive")
    empty_dir = tmp_path / "empty"
    empty_dir.mkdir()
    layout, findings = _open([tmp_path / "missing.zip", junk, empty_dir], tmp_path)
    assert [f.rule for f in findings] == ["input-unreadable"] * 3
    assert [f.file for f in findings] == ["missing.zip", "notes.tar.gz", "empty"]
    assert layout.readable_inputs == 0
    assert layout.kind == "empty"
