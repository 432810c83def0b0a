"""Test helper: a Layout for an unpacked bundle folder, built directly (no archive handling)."""

from __future__ import annotations

import re
import shutil
import tarfile
from pathlib import Path

from checker.read.inputs import Layout, PointInput

FIXTURES = Path(__file__).parent / "fixtures"
BUNDLE = FIXTURES / "bundle" / "AcmeCompute" / "acme-2026-12-C0-endpoints-001"
ARCHIVES = FIXTURES / "run_archives"
OFFICIAL_VERDICT = FIXTURES / "official" / "official-checker-verdict.json"
_NAMES = {
    "point.yaml": "point.yaml",
    "system_desc.json": "system_desc.json",
    "result_summary.json": "result_summary.json",
    "accuracy_results.json": "accuracy_results.json",
    "config.yaml": "config.yaml",
    "report.txt": "report.txt",
    "sample_idx_map.json": "sample_idx_map.json",
    "metrics/final_snapshot.json": "final_snapshot.json",
    "system_power.json": "system_power.json",
}


def layout_of(root: Path) -> Layout:
    layout = Layout(kind="bundle", root=root, root_display="", readable_inputs=1)
    results = root / "results"
    for system_dir in sorted(p for p in results.iterdir() if p.is_dir()):
        if (system_dir / "system_power.json").is_file():
            layout.system_power[system_dir.name] = system_dir / "system_power.json"
            layout.displays[system_dir / "system_power.json"] = f"results/{system_dir.name}/system_power.json"
        for model_dir in sorted(p for p in system_dir.iterdir() if p.is_dir()):
            for point_dir in sorted(model_dir.iterdir()):
                m = re.fullmatch(r"r(\d+)", point_dir.name)
                if not m:
                    continue
                display = f"results/{system_dir.name}/{model_dir.name}/{point_dir.name}/"
                pin = PointInput(
                    system=system_dir.name,
                    model=model_dir.name,
                    concurrency=int(m.group(1)),
                    source="bundle",
                    display=display,
                    dir=point_dir,
                )
                for rel, name in _NAMES.items():
                    if (point_dir / rel).is_file():
                        pin.files[name] = point_dir / rel
                        pin.displays[name] = display + rel
                for ev in ("events.jsonl", "events.jsonl.zst"):
                    if (point_dir / ev).is_file():
                        pin.files["events"] = point_dir / ev
                        pin.displays["events"] = display + ev
                if (point_dir / "power").is_dir():
                    pin.files["power"] = point_dir / "power"
                    pin.displays["power"] = display + "power/"
                layout.points.append(pin)
    layout.src_readmes = sorted(root.glob("src/*/README.md"))
    layout.docs = sorted(root.glob("docs/*.md"))
    return layout


def bundle_with_raw_logs(tmp: Path) -> Path:
    """The sample bundle with each AX-8000 archive's c<C>/events.jsonl copied into its r<C>/ folder."""
    root = tmp / "AcmeCompute" / "acme-2026-12-C0-endpoints-001"
    shutil.copytree(BUNDLE, root)
    for archive in sorted(ARCHIVES.glob("AX-8000_c*.tar.gz")):
        c = re.search(r"_c(\d+)\.tar\.gz$", archive.name).group(1)
        with tarfile.open(archive) as tar:
            member = next(m for m in tar.getmembers() if m.name.endswith(f"c{c}/events.jsonl"))
            data = tar.extractfile(member).read()
        (root / "results" / "Acme_AX-8000" / "llama3_1-8b" / f"r{c}" / "events.jsonl").write_bytes(data)
    return root
