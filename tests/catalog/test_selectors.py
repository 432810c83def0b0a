"""The benchmark catalog: preloaded by migration, with a tokenizer per benchmark."""

import pytest
import tokenizers
from django.core.files.base import ContentFile

from catalog.models import Benchmark
from catalog.selectors import benchmark_list, benchmark_tokenizer_json

pytestmark = pytest.mark.django_db


def test_catalog_is_preloaded_by_migration():
    catalog = {b.model_id: b for b in benchmark_list()}
    assert set(catalog) == {
        "llama3_1-8b",
        "llama3_1-405b",
        "deepseek-r1",
        "gpt-oss-120b",
        "qwen3-coder-480b",
        "deepseek-v4-pro",
        "kimi-k3",
        "qwen3.6",
    }
    assert {m for m, b in catalog.items() if b.workload == "agentic_coding"} == {
        "deepseek-v4-pro",
        "kimi-k3",
        "qwen3.6",
    }
    # llama3_1-8b: the sample BPE its sample runs were counted with; llama3_1-405b: the pinned Llama 3 package
    real = {"llama3_1-8b", "llama3_1-405b"}
    assert not any(catalog[m].tokenizer_is_placeholder for m in real)
    assert all(b.tokenizer_is_placeholder and b.tokenizer_note for m, b in catalog.items() if m not in real)
    assert all(b.ruleset_version == "endpoints-v1.0" for b in catalog.values())


def test_shipped_tokenizer_loads_and_counts_tokens():
    tokenizer = tokenizers.Tokenizer.from_str(
        benchmark_tokenizer_json(Benchmark.objects.get(model_id="llama3_1-8b"))
    )
    assert tokenizer.get_vocab_size() == 4096
    assert len(tokenizer.encode("Summarise this article.", add_special_tokens=False).ids) > 0


def test_uploaded_tokenizer_takes_precedence(storage_dir):
    benchmark = Benchmark.objects.get(model_id="kimi-k3")
    benchmark.tokenizer_file.save("tokenizer.json", ContentFile(b'{"version": "real"}'))
    assert benchmark_tokenizer_json(benchmark) == '{"version": "real"}'
