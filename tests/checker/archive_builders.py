"""Builds archives for the input-layer tests: real fixture points re-packed, and hostile members."""

from __future__ import annotations

import io
import tarfile
import zipfile
from pathlib import Path

import zstandard

FIXTURES = Path(__file__).parent / "fixtures"
RUN_ARCHIVES = sorted((FIXTURES / "run_archives").glob("AX-8000_c*.tar.gz"))
BUNDLE_PARENT = FIXTURES / "bundle"
BUNDLE_ROOT = BUNDLE_PARENT / "AcmeCompute" / "acme-2026-12-C0-endpoints-001"


def run_members(concurrency: int = 1) -> dict[str, bytes]:
    """The regular files of one official run archive, name -> content (they are small)."""
    out: dict[str, bytes] = {}
    with tarfile.open(FIXTURES / "run_archives" / f"AX-8000_c{concurrency}.tar.gz") as tf:
        for member in tf.getmembers():
            if member.isreg():
                out[member.name] = tf.extractfile(member).read()
    return out


def write_tar_gz(
    path: Path, files: dict[str, bytes], extra: list[tuple[tarfile.TarInfo, bytes | None]] = ()
) -> Path:
    with tarfile.open(path, "w:gz") as tf:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
        for info, data in extra:
            tf.addfile(info, io.BytesIO(data) if data is not None else None)
    return path


def tar_bytes_of_folder(root: Path, arc_prefix: str) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tf:
        tf.add(root, arcname=arc_prefix)
    return buf.getvalue()


def bundle_tar_zst(path: Path) -> Path:
    data = tar_bytes_of_folder(BUNDLE_ROOT, "AcmeCompute/acme-2026-12-C0-endpoints-001")
    path.write_bytes(zstandard.ZstdCompressor().compress(data))
    return path


def bundle_zip(path: Path) -> Path:
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for file in sorted(BUNDLE_ROOT.rglob("*")):
            if file.is_file():
                zf.write(file, "AcmeCompute/" + file.relative_to(BUNDLE_ROOT.parent).as_posix())
    return path


def snapshot(root: Path, skip: Path) -> set[str]:
    """Every path under root, except under `skip` (the sandbox)."""
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if skip not in p.parents and p != skip}


def relabelled_run_archive(path: Path, *, concurrency: int, as_concurrency: int) -> Path:
    """The real run archive of `concurrency` relabelled as `as_concurrency` in every file that declares it (the
    folder name, point.yaml, config.yaml, report.txt and result_summary.json's run_config), its events.jsonl
    left as the client wrote it: the lie the physical-consistency rules must catch (checker.judge.rules.physical)."""
    import json
    import re

    old, new = f"c{concurrency}/", f"c{as_concurrency}/"
    files: dict[str, bytes] = {}
    for name, data in run_members(concurrency).items():
        if name.endswith("point.yaml"):
            data = re.sub(rb"(?m)^(\s*concurrency:) %d$" % concurrency, rb"\1 %d" % as_concurrency, data)
        elif name.endswith("config.yaml"):
            data = data.replace(
                b"target_concurrency: %d\n" % concurrency, b"target_concurrency: %d\n" % as_concurrency
            )
        elif name.endswith("report.txt"):
            data = data.replace(
                b"target_concurrency=%d" % concurrency, b"target_concurrency=%d" % as_concurrency
            )
        elif name.endswith("result_summary.json"):
            summary = json.loads(data)
            summary["run_config"]["load_pattern"]["target_concurrency"] = as_concurrency
            data = json.dumps(summary, indent=2).encode()
        files[new + name[len(old) :] if name.startswith(old) else name] = data
    return write_tar_gz(path, files)
