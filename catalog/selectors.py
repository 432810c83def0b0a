"""Reads of the benchmark catalog (public information)."""

from __future__ import annotations

import functools
from pathlib import Path

from django.conf import settings
from django.db.models import QuerySet

from catalog.models import Benchmark
from catalog.tokenizer_packages import packaged, read_packaged
from checker.recompute.chat_template import ChatTemplate


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
    path = _shipped_path(benchmark)
    return (path / "tokenizer.json" if path.is_dir() else path).read_text(encoding="utf-8")


def _shipped_path(benchmark: Benchmark) -> Path:
    """The tokenizer folder, or tokenizer.json, that `tokenizer_path` names under portal_data/tokenizers/."""
    root = Path(settings.PORTAL_TOKENIZERS_DIR).resolve()
    path = (root / benchmark.tokenizer_path).resolve()
    if root not in path.parents:
        raise ValueError(f"Tokenizer path {benchmark.tokenizer_path!r} leaves {root}.")
    return path


def benchmark_chat_template(benchmark: Benchmark) -> ChatTemplate | None:
    """The chat template of the benchmark's tokenizer folder (docs/agentic.md): the folder `tokenizer_path` names
    under portal_data/tokenizers/, or the folder holding its tokenizer.json; None for an uploaded tokenizer.json or
    a packaged one (neither carries a template), and message prompts are then counted by the client's fallback with
    a finding. Raises checker.recompute.chat_template.ChatTemplateError for a template that does not compile."""
    if benchmark.tokenizer_file or packaged(benchmark.tokenizer_path or "") is not None:
        return None
    path = _shipped_path(benchmark)
    return _chat_template(path if path.is_dir() else path.parent)


@functools.lru_cache(maxsize=8)
def _chat_template(folder: Path) -> ChatTemplate | None:
    return ChatTemplate.from_folder(folder)
