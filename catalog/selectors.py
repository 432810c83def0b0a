"""Reads of the benchmark catalog (public information)."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.db.models import QuerySet

from catalog.models import Benchmark
from catalog.tokenizer_packages import packaged, read_packaged


def benchmark_list(*, active_only: bool = True) -> QuerySet[Benchmark]:
    """The benchmark catalog; public information."""
    benchmarks = Benchmark.objects.all()
    if active_only:
        benchmarks = benchmarks.filter(is_active=True)
    return benchmarks.order_by("model_id")


def benchmark_tokenizer_json(benchmark: Benchmark) -> str:
    """The text of the benchmark's tokenizer.json (uploaded file first, else the pinned package file of a
    `package:` path, else the shipped one), for tokenizers.Tokenizer.from_str; works whatever the storage
    backend. A packaged tokenizer not installed or not matching its SHA-256 raises TokenizerUnavailable."""
    if benchmark.tokenizer_file:
        with benchmark.tokenizer_file.open("rb") as handle:
            return handle.read().decode("utf-8")
    spec = packaged(benchmark.tokenizer_path or "")
    if spec is not None:
        return read_packaged(spec)
    root = Path(settings.PORTAL_TOKENIZERS_DIR).resolve()
    path = (root / benchmark.tokenizer_path).resolve()
    if root not in path.parents:
        raise ValueError(f"Tokenizer path {benchmark.tokenizer_path!r} leaves {root}.")
    return path.read_text(encoding="utf-8")
