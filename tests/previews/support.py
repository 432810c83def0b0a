"""Previews of the real tool outputs in tests/fixtures/importers/ (made by the tools themselves, run.sh beside)."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "importers"
VLLM = [FIXTURES / "vllm_bench" / f"c{c}.json" for c in (1, 4, 8)]
VLLM_ERRORS = FIXTURES / "vllm_bench" / "errors-c4.json"
GUIDELLM = FIXTURES / "guidellm" / "benchmarks.json"


def files_of(paths: list[Path]) -> list[tuple[str, bytes]]:
    return [(p.name, p.read_bytes()) for p in paths]


def folder_tar(folder: Path) -> tuple[str, bytes]:
    """A .tar.gz of one tool's output folder, as `portal preview` packs it."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        tar.add(folder, arcname=folder.name)
    return f"{folder.name}.tar.gz", buffer.getvalue()
