"""Exact token counts of a byte-level BPE tokenizer with tiktoken, where they provably equal the tokenizer's own.

`tokenizers` (HF) merges only the pairs of its merge list, lowest priority first; tiktoken merges any two
adjacent parts whose concatenation is in its table, lowest rank first, and takes a whole piece that is in
the table as one token. The two agree for every text when the table is built as below and the merge list
passes the checks of `build` (docs/performance.md, "The fast counter, argued"):

- the table holds the 256 bytes and the *self-reachable* merged tokens: those the tokenizer's own BPE (run
  by `tokenizers` itself, no whole-word shortcut) encodes to themselves. No other token ever appears while
  the tokenizer merges a word, so leaving them out changes nothing;
- a token's rank is the priority of the one merge of two table tokens that makes it (a token made by two
  such merges is refused: its rank would be ambiguous);
- with `ignore_merges` (a whole word in the vocabulary is one token), every vocabulary word must be in the
  table, else the shortcuts differ and the tokenizer is refused.

The pre-tokenizer must be one whose regex tiktoken runs as is (GPT-2's ByteLevel pattern, Llama 3's
Split), and the two regex engines must class the text's characters alike: ASCII always; any other character
only once its 256-character page was checked in both engines (`\\p{L}`, `\\p{N}`, `\\s` membership), lazily,
the first time a text holds it. A text holding an added token, a refused character or a lone surrogate is
counted by `tokenizers`, as is everything when `build` refuses the tokenizer (`reason` says why).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from checker.recompute.pre_tokenizers import GPT2_PATTERN, pre_tokenizer_pattern

# On an ASCII text with no two whitespace characters side by side, GPT2_PATTERN splits exactly as this
# lookahead-free pattern, which tiktoken runs ~1.5x faster (its `\s+(?!\S)` differs from `\s+` only on a
# whitespace run of two or more before a non-space; on ASCII, \p{L} and \p{N} are [A-Za-z] and [0-9]).
GPT2_ASCII_PATTERN = r"'s|'t|'re|'ve|'m|'ll|'d| ?[A-Za-z]+| ?[0-9]+| ?[^\sA-Za-z0-9]+|\s+"
_AS_SPACE = str.maketrans("\t\n\v\f\r", "     ")  # \s on ASCII is \t-\r and space: two side by side -> "  "
CLASS_PATTERNS = (r"\p{L}", r"\p{N}", r"\s")  # the character classes both patterns are written in
NEVER = "\U0010fffe\U0010fffeportal\U0010fffe"  # tiktoken's one special token; texts holding it are refused
SURROGATES = range(0xD800, 0xE000)
FAST_THREADS = 2
CHUNK_TEXTS = 64  # texts per task of the counting threads


def byte_level_alphabet() -> dict[str, int]:
    """The ByteLevel character of each byte (GPT-2's bytes_to_unicode), as character -> byte."""
    kept = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    chars = {b: b for b in kept}
    extra = 0
    for b in range(256):
        if b not in chars:
            chars[b] = 256 + extra
            extra += 1
    return {chr(c): b for b, c in chars.items()}


def _pattern(pre: dict | None) -> str | None:
    """The regex tiktoken must run to split a text as this pre-tokenizer does, or None."""
    return pre_tokenizer_pattern(pre)


def _merges(model: dict) -> list[tuple[str, str]]:
    out = []
    for m in model.get("merges") or []:
        if isinstance(m, str):
            left, _, right = m.partition(" ")
            out.append((left, right))
        else:
            out.append((m[0], m[1]))
    return out


def compatible_ranks(model: dict) -> tuple[dict[bytes, int] | None, str]:
    """(tiktoken table, "") when rank-order merging provably equals this BPE model's, else (None, why not)."""
    if model.get("type") != "BPE":
        return None, f"the model is {model.get('type')!r}, not BPE"
    for key in ("dropout", "continuing_subword_prefix", "end_of_word_suffix"):
        if model.get(key):
            return None, f"the BPE model sets {key}"
    if model.get("byte_fallback"):
        return None, "the BPE model sets byte_fallback"
    alphabet = byte_level_alphabet()
    vocab: dict[str, int] = model.get("vocab") or {}
    if any(ch not in vocab for ch in alphabet):
        return None, "not every byte is in the vocabulary"
    merges = _merges(model)
    for left, right in merges:
        if any(ch not in alphabet for ch in left + right):
            return None, "a merge holds characters outside the byte-level alphabet"
    early = _ambiguous_early(merges)
    if early is not None:
        return None, (
            f"tokens are made by more than one merge of reachable tokens (e.g. {early!r}), so no single rank "
            "per token orders the merges as the merge list does"
        )
    reach = _self_reachable(model, {left + right for left, right in merges})
    table = set(alphabet) | reach
    makers: Counter = Counter()
    rank: dict[str, int] = {}
    for priority, (left, right) in enumerate(merges):
        token = left + right
        if token in reach and left in table and right in table:
            makers[token] += 1
            rank.setdefault(token, priority)
    ambiguous = [t for t, n in makers.items() if n > 1]
    if ambiguous:
        return None, (
            f"{len(ambiguous):,} tokens are made by more than one merge of reachable tokens "
            f"(e.g. {ambiguous[0]!r}), so no single rank per token orders the merges as the merge list does"
        )
    if model.get("ignore_merges"):
        missing = [t for t in vocab if t not in table and all(ch in alphabet for ch in t)]
        if missing:
            return None, (
                f"ignore_merges is set and {len(missing):,} vocabulary tokens (e.g. {missing[0]!r}) are not what "
                "the merges make of them, so a word equal to one would count differently"
            )
    ranks = {bytes([b]): len(merges) + b for b in alphabet.values()}
    for token, priority in rank.items():
        ranks[bytes(alphabet[ch] for ch in token)] = priority
    return ranks, ""


def _bpe(word: str, priority: dict[tuple[str, str], int]) -> list[str]:
    """Merge-list BPE of one word (lowest priority first, leftmost on a tie), for the early refusal only."""
    parts = list(word)
    while len(parts) > 1:
        best = min(
            ((priority.get(pair, -1), i) for i, pair in enumerate(zip(parts, parts[1:], strict=False))),
            key=lambda x: (x[0] < 0, x),
        )
        if best[0] < 0:
            break
        i = best[1]
        parts[i : i + 2] = [parts[i] + parts[i + 1]]
    return parts


def _ambiguous_early(merges: list[tuple[str, str]], sample: int = 64) -> str | None:
    """A token made by two merges of self-reachable tokens, found among a few short candidates, or None.

    Only a quick refusal (a big merge list that fails, like Llama 3's, is refused without building a second
    tokenizer); acceptance always comes from the full check with `tokenizers` itself."""
    priority: dict[tuple[str, str], int] = {}
    makers: dict[str, list[tuple[str, str]]] = {}
    for i, pair in enumerate(merges):
        priority.setdefault(pair, i)
        makers.setdefault(pair[0] + pair[1], []).append(pair)
    several = sorted((t for t, m in makers.items() if len(m) > 1), key=len)[:sample]

    def whole(token: str) -> bool:
        return len(token) == 1 or _bpe(token, priority) == [token]

    for token in several:
        if whole(token) and sum(1 for a, b in makers[token] if whole(a) and whole(b)) > 1:
            return token
    return None


def _self_reachable(model: dict, tokens: set[str]) -> set[str]:
    """The merged tokens that the model's own BPE (run by `tokenizers`, no whole-word shortcut) makes whole."""
    import tokenizers

    plain = dict(model, ignore_merges=False)
    config: dict[str, Any] = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [],
        "normalizer": None,
        "pre_tokenizer": None,
        "post_processor": None,
        "decoder": None,
        "model": plain,
    }
    bpe = tokenizers.Tokenizer.from_str(json.dumps(config))
    words = sorted(tokens)
    encoded = bpe.encode_batch_fast(words, add_special_tokens=False)
    return {w for w, e in zip(words, encoded, strict=True) if len(e.ids) == 1}


class FastCounter:
    """Counts with tiktoken the texts it accepts (`accepts`), exactly as the HF tokenizer it was built from."""

    def __init__(self, ranks: dict[bytes, int], pattern: str, added: list[str]) -> None:
        import tiktoken

        # One special token that no accepted text holds (accepts() refuses it): with it, tiktoken's encode()
        # searches for specials with a plain literal, and returns its tokens as a buffer, built without the GIL,
        # instead of a list of Python ints. encode() with no allowed special splits and merges as encode_ordinary().
        special = {NEVER: max(ranks.values()) + 1}
        self._encoding = tiktoken.Encoding(
            "portal-fast-count", pat_str=pattern, mergeable_ranks=ranks, special_tokens=special
        )
        self._encode: Callable[[str], int] = _counter(self._encoding)
        self._encode_ascii = self._encode
        if pattern == GPT2_PATTERN:
            self._ascii_encoding = tiktoken.Encoding(
                "portal-fast-count-ascii",
                pat_str=GPT2_ASCII_PATTERN,
                mergeable_ranks=ranks,
                special_tokens=special,
            )
            self._encode_ascii = _counter(self._ascii_encoding)
        self.pattern = pattern
        self._added = added
        self._added_re = (
            re.compile("|".join(re.escape(c) for c in sorted(added, key=len, reverse=True)))
            if len(added) > 8
            else None
        )
        self._pages: set[int] = set()  # 256-character pages already checked in both engines
        self._agreed: list[int] = []  # non-ASCII code points both engines class alike
        self._unchecked = re.compile("[^\x00-\x7f]")
        self._pool: ThreadPoolExecutor | None = None
        self.verify = _ClassCheck(pattern)

    # -- which texts -------------------------------------------------------------------------
    def accepts(self, text: str) -> bool:
        if not text.isascii():
            if NEVER in text:
                return False
            start = 0
            while (m := self._unchecked.search(text, start)) is not None:
                page = ord(m.group()) >> 8
                if page in self._pages:
                    return False  # a character the engines do not class alike (or a surrogate)
                self._check_page(page)
                start = m.start()
        if self._added:
            if self._added_re is not None:
                return self._added_re.search(text) is None
            return not any(c in text for c in self._added)
        return True

    def _check_page(self, page: int) -> None:
        self._pages.add(page)
        chars = [cp for cp in range(page << 8, (page + 1) << 8) if cp not in SURROGATES and cp < 0x110000]
        self._agreed.extend(self.verify.agreeing(chars))
        self._agreed.sort()
        self._unchecked = re.compile("[^\x00-\x7f" + _ranges(self._agreed) + "]")

    # -- counting ----------------------------------------------------------------------------
    def counts(self, texts: list[str]) -> list[int]:
        """Token counts of texts it accepts (the caller checked `accepts`), on FAST_THREADS threads."""
        encode, ascii_encode, as_space = self._encode, self._encode_ascii, _AS_SPACE

        def chunk(part: list[str]) -> list[int]:
            return [
                ascii_encode(t) if t.isascii() and "  " not in t.translate(as_space) else encode(t)
                for t in part
            ]

        if len(texts) <= CHUNK_TEXTS:
            return chunk(texts)
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=FAST_THREADS, thread_name_prefix="fastcount")

        parts = [texts[i : i + CHUNK_TEXTS] for i in range(0, len(texts), CHUNK_TEXTS)]
        out: list[int] = []
        for got in self._pool.map(chunk, parts):
            out.extend(got)
        return out

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None


def _counter(encoding: Any) -> Callable[[str], int]:
    """The number of tokens tiktoken makes of a text, no special token allowed (so none is ever made)."""
    encode = encoding._core_bpe.encode_to_tiktoken_buffer
    none: frozenset[str] = frozenset()

    def count(text: str) -> int:
        return memoryview(encode(text, none)).nbytes >> 2

    return count


def _ranges(points: list[int]) -> str:
    out: list[str] = []
    i = 0
    while i < len(points):
        j = i
        while j + 1 < len(points) and points[j + 1] == points[j] + 1:
            j += 1
        a, b = points[i], points[j]
        out.append(f"\\U{a:08x}" if a == b else f"\\U{a:08x}-\\U{b:08x}")
        i = j + 1
    return "".join(out)


class _ClassCheck:
    """Which characters the tokenizer's regex engine (Oniguruma, in `tokenizers`) and tiktoken's
    (fancy-regex) class alike: the same membership in each of \\p{L}, \\p{N} and \\s."""

    def __init__(self, pattern: str) -> None:
        import tiktoken
        from tokenizers import Regex, pre_tokenizers

        ranks = {bytes([b]): b for b in range(256)}
        self._hf = [pre_tokenizers.Split(Regex(p), behavior="removed") for p in CLASS_PATTERNS]
        self._tt = [
            tiktoken.Encoding(f"portal-class-{i}", pat_str=p, mergeable_ranks=ranks, special_tokens={})
            for i, p in enumerate(CLASS_PATTERNS)
        ]
        # Llama 3's contractions are case-insensitive: a character whose case folding reaches an ASCII
        # letter (long s, the st ligatures, Kelvin sign) might match them in one engine and not the other.
        self._folds_to_ascii = "(?i:" in pattern

    def agreeing(self, points: list[int]) -> list[int]:
        text = "".join(map(chr, points))
        ok = set(points)
        for hf, tt in zip(self._hf, self._tt, strict=True):
            outside = {ord(c) for piece, _ in hf.pre_tokenize_str(text) for c in piece}
            inside_hf = set(points) - outside
            inside_tt = {ord(c) for c in bytes(tt._core_bpe.encode_ordinary(text)).decode("utf-8")}
            ok -= inside_hf ^ inside_tt
        if self._folds_to_ascii:
            ok = {
                cp
                for cp in ok
                if cp < 128 or not any(c.isascii() and c.isalpha() for c in chr(cp).casefold())
            }
        return sorted(ok)


_built: dict[str, tuple[FastCounter | None, str]] = {}


def build(tokenizer: Any, pre: dict | None, added: list[str]) -> tuple[FastCounter | None, str]:
    """(counter, "") for a tokenizer whose counts tiktoken provably reproduces, else (None, why not)."""
    try:
        import tiktoken  # noqa: F401
    except ImportError:
        return None, "tiktoken is not installed"
    pattern = _pattern(pre)
    if pattern is None:
        return None, "the pre-tokenizer is not one whose regex tiktoken runs as is"
    try:
        state = tokenizer.to_str()
    except Exception:  # not a tokenizers.Tokenizer
        return None, "not a tokenizers.Tokenizer"
    cached = _built.get(state)
    if cached is not None:
        return cached
    ranks, why = compatible_ranks(json.loads(state).get("model") or {})
    result: tuple[FastCounter | None, str] = (None, why)
    if ranks is not None:
        counter = FastCounter(ranks, pattern, added)
        # ASCII texts are never checked character by character: the engines must class all of ASCII alike.
        if counter.verify.agreeing(list(range(128))) == list(range(128)):
            result = (counter, "")
        else:
            result = (None, "the two regex engines class some ASCII character differently")
    if len(_built) >= 8:
        _built.clear()
    _built[state] = result
    return result
