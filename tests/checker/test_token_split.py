"""The exact token-count split at the first streamed chunk (checker.recompute.tokens.TokenCounter.splits_at).

Where splits_at says yes, count(text) must equal count(text[:cut]) + count(text[cut:]) exactly,
for the sample tokenizer (ByteLevel, GPT-2 pattern) and for the Llama-3 Split pattern. The
alphabet is chosen to hit every character class, contractions, runs of spaces, newlines,
non-ASCII letters and digits, and an added token that can straddle the cut.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
import tokenizers
from tokenizers import Regex, pre_tokenizers

from checker.recompute.pre_tokenizers import LLAMA3_SPLIT_PATTERN
from checker.recompute.tokens import TokenCounter, _gpt2_cut, _llama3_cut, split_rule

FIXTURES = Path(__file__).parent / "fixtures"
PIECES = [
    "the",
    " the",
    "Score",
    " each",
    "s",
    "re",
    "'",
    "'s",
    "'re",
    "'ll",
    " ",
    "  ",
    "   ",
    "\n",
    "\n\n",
    " \n",
    "\t",
    "\r\n",
    "7",
    "42",
    " 1999",
    "1234567",
    ".",
    ",",
    "!?",
    " (",
    ")",
    "-",
    "é",
    "café",
    "ü",
    "一",
    "١٢",
    "\u00a0",
    "\u2028",
    "\x1c",
    "<|endoftext|>",
    "<|endof",
    "text|>",
    "<|user|>",
    "self",
    "_",
]


def _fixture() -> tokenizers.Tokenizer:
    return tokenizers.Tokenizer.from_file(str(FIXTURES / "tokenizer" / "tokenizer.json"))


def _llama3() -> tokenizers.Tokenizer:
    tok = _fixture()
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(LLAMA3_SPLIT_PATTERN), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    return tok


def _texts(seed: int, n: int) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choice(PIECES) for _ in range(rng.randrange(2, 12))) for _ in range(n)]


@pytest.mark.parametrize(
    "make, rule", [(_fixture, _gpt2_cut), (_llama3, _llama3_cut)], ids=["gpt2", "llama3"]
)
def test_split_is_exact_wherever_it_is_taken(make, rule):
    tok = make()
    counter = TokenCounter(tok)
    assert counter.rule is rule
    taken = refused_but_different = 0
    for text in _texts(7, 3000):
        cuts = range(1, len(text))
        full = counter.count([text])[0]
        parts = counter.count([p for c in cuts for p in (text[:c], text[c:])])
        for i, cut in enumerate(cuts):
            additive = parts[2 * i] + parts[2 * i + 1] == full
            if counter.splits_at(text, cut):
                taken += 1
                assert additive, (text, cut)
            elif not additive:
                refused_but_different += 1
    assert taken > 2000  # the rule is not vacuous
    assert refused_but_different > 100  # and the alphabet does reach cuts that are not additive


def test_no_rule_for_tokenizers_it_cannot_vouch_for():
    tok = _fixture()
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True)
    assert split_rule(tok) is None
    tok = _fixture()
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    assert split_rule(tok) is None
    tok = _fixture()
    tok.enable_truncation(16)
    assert split_rule(tok) is None
    assert split_rule(object()) is None


def test_trivial_and_refused_cuts():
    counter = TokenCounter(_fixture())
    assert not counter.splits_at("abc", 0)
    assert not counter.splits_at("abc", 3)
    assert counter.splits_at("Score each", 5)
    assert not counter.splits_at("Sco re", 2)  # inside a word
    assert not counter.splits_at("a  b", 2)  # after a space
    assert not counter.splits_at("x<|endoftext|>", 5)  # inside an added token


@pytest.mark.parametrize("make", [_fixture, _llama3], ids=["gpt2", "llama3"])
def test_pieces_add_up_exactly(make):
    counter = TokenCounter(make())
    taken = 0
    for text in _texts(11, 3000) + [t.replace("'", " ") for t in _texts(12, 500)]:
        parts = counter.pieces(text)
        if parts is None:
            continue
        taken += 1
        pieces = [parts[0]] + [" " + p for p in parts[1:]]
        counts = counter.count([text] + [p for p in pieces if p])
        assert counts[0] == sum(counts[1:]), (text, pieces)
    assert taken > 300
    assert (
        counter.pieces("a  b") is None
        and counter.pieces("x\n y") is None
        and counter.pieces("a\u3000 b") is None
    )
    assert counter.pieces("é b") == ["é", "b"]
    assert counter.pieces("a <|user|>") is None
