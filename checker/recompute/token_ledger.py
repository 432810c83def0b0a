"""Exact token counts of a replay's texts, batched: each text is queued with where its count goes (an index of one
of the replay's series), encoded on a helper thread in batches while the next lines are parsed, and added when its
batch returns; prompts, first chunks and the pieces of texts are counted once and kept in bounded caches
(docs/performance.md, "The clean cut, argued": a text's count is the sum of its pieces' where the cut is exact)."""

from __future__ import annotations

from array import array
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

from checker.recompute.tokens import TokenCounter

TOKENIZE_BATCH_CHARS = 1024 * 1024  # ~60 MB of tokenizer Encodings per batch at most
TOKENIZE_BATCH_REFS = 16_384  # counts waiting on one batch: a small batch early fills the piece cache
PROMPT_CACHE_ENTRIES = 200_000
TEXT_CACHE_CHARS = 32 * 1024 * 1024  # bound on the characters kept as keys of the count caches
PIECE_CACHE_ENTRIES = 500_000
PROBE_CHARS = 256  # while texts stay novel, a text's head is probed before its whole is scanned
MAX_LEARN_EVERY = 1024  # of the texts whose pieces are mostly unseen, at least one in this many is learned


@dataclass
class _Pending:
    """Texts waiting for one batched tokenizer call, with where each count goes."""

    texts: list[str] = field(default_factory=list)
    # per text: (cache, key) its count is kept under, or None
    caches: list[tuple[dict[str, int], str] | None] = field(default_factory=list)
    # per text: [(array, index), ...] its count is added to
    targets: list[list[tuple[array, int]]] = field(default_factory=list)
    keys: dict = field(default_factory=dict)  # (cache id, key) -> position, so each is encoded once a batch
    chars: int = 0
    refs: int = 0  # count targets waiting on this batch (a cache is filled only once it is encoded)


class TokenLedger:
    """The counts a replay is waiting for, and the caches that spare the tokenizer texts it has counted."""

    def __init__(self, counter: TokenCounter) -> None:
        self.counter = counter
        self.prompt_cache: dict[str, int] = {}
        self.first_cache: dict[str, int] = {}  # counts of first streamed chunks and of text heads
        self.piece_cache: dict[str, int] = {}  # part -> count(" " + part)
        self._cached_chars = 0
        self._novel = 0  # texts met whose pieces were mostly unseen
        self._learn_at = 0  # the next of those counted piece by piece (its pieces learned)
        self._learn_every = 1
        self.pending = _Pending()
        self._inflight_batch: tuple[Future, _Pending] | None = None
        self._executor: ThreadPoolExecutor | None = None

    # Batches are encoded on a helper thread (encode_batch releases the GIL and uses the
    # tokenizers' own thread pool) while the next batch is parsed; at most two batches are alive.
    def queue_many(self, text: str, targets: list) -> None:
        pending = self.pending
        pending.texts.append(text)
        pending.caches.append(None)
        pending.targets.append(targets)
        pending.chars += len(text)
        pending.refs += len(targets)
        if pending.chars >= TOKENIZE_BATCH_CHARS or pending.refs >= TOKENIZE_BATCH_REFS:
            self.flush(wait=False)

    def queue_cached(self, cache: dict, key: str, text: str, targets: list) -> None:
        """A text whose count is cached under key (prompts, chunks, pieces): encoded once a batch."""
        pending = self.pending
        slot = (id(cache), key)
        at = pending.keys.get(slot)
        if at is not None:
            pending.targets[at].extend(targets)
            pending.refs += len(targets)
            if pending.refs >= TOKENIZE_BATCH_REFS:
                self.flush(wait=False)
            return
        pending.keys[slot] = len(pending.texts)
        pending.texts.append(text)
        pending.caches.append((cache, key))
        pending.targets.append(list(targets))
        pending.chars += len(text)
        pending.refs += len(targets)
        if pending.chars >= TOKENIZE_BATCH_CHARS or pending.refs >= TOKENIZE_BATCH_REFS:
            self.flush(wait=False)

    def count_into(self, text: str, targets: list) -> None:
        """Add count(text) to every (array, index) target, from cached pieces where exact.

        The pieces are looked up in one C-level pass. A text most of whose pieces are unseen (new words,
        texts that do not repeat) is encoded whole in the batch: one text costs the tokenizer far less
        than its words one by one. Some of these still go piece by piece, so that a vocabulary that does
        repeat fills the piece cache and later texts are counted without the tokenizer: the 1st, 2nd, 4th,
        8th, ... (at most every MAX_LEARN_EVERY-th) while texts stay novel, so words that never repeat are
        not learned in vain.
        """
        if self._learn_every > 1 and self._novel + 1 < self._learn_at and self._probably_novel(text):
            self._novel += 1  # texts stay novel: whole, without the exactness scan of pieces()
            self.queue_many(text, targets)
            return
        parts = self.counter.pieces(text)
        if parts is None:
            self.queue_many(text, targets)
            return
        head = parts[0]
        first = self.first_cache.get(head) if head else 0
        found: list[Any] = list(map(self.piece_cache.get, islice(parts, 1, None)))
        unseen = found.count(None)
        if not unseen and first is not None:
            known = first + sum(found)  # every piece known: no None among them
            for series, index in targets:
                series[index] += known
            return
        if unseen * 2 > len(found):
            self._novel += 1
            if self._novel < self._learn_at:
                self.queue_many(text, targets)
                return
            # learn this one piece by piece; the next lesson comes twice as late while texts stay novel
            self._learn_at = self._novel + self._learn_every
            # over 3/4 unseen: texts stay novel, back off; else the cache is filling, keep learning
            self._learn_every = (
                min(2 * self._learn_every, MAX_LEARN_EVERY) if unseen * 4 > 3 * len(found) else 1
            )
        else:
            self._learn_every = 1
        known = sum(n for n in found if n is not None)
        if first is None:
            self.queue_cached(self.first_cache, head, head, targets)
        else:
            known += first
        for series, index in targets:
            series[index] += known
        if unseen:  # from `found`: a flush while queueing may change the cache under this loop
            cache = self.piece_cache
            for part, n in zip(islice(parts, 1, None), found, strict=True):
                if n is None:
                    self.queue_cached(cache, part, " " + part, targets)

    def _probably_novel(self, text: str) -> bool:
        """Most words of the text's head unseen (only a guess: it decides the path, never a count)."""
        words = text[:PROBE_CHARS].split(" ")[1:-1]
        return len(words) > 2 and list(map(self.piece_cache.get, words)).count(None) * 2 > len(words)

    def flush(self, wait: bool = True) -> None:
        """Send the pending texts to the tokenizer; with wait, also apply every count."""
        if self._inflight_batch is not None:
            self._apply_counts(*self._inflight_batch)
            self._inflight_batch = None
        pending = self.pending
        if pending.texts:
            self.pending = _Pending()
            if wait:
                self._apply_counts(None, pending)
            else:
                if self._executor is None:
                    self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tokenize")
                self._inflight_batch = (self._executor.submit(self.counter.count, pending.texts), pending)
        if wait and self._executor is not None:
            self._executor.shutdown(wait=True)
            self._executor = None

    def _apply_counts(self, future: Future | None, pending: _Pending) -> None:
        counts = self.counter.count(pending.texts) if future is None else future.result()
        for slot, targets, n in zip(pending.caches, pending.targets, counts, strict=True):
            if slot is not None:
                cache, key = slot
                self._remember(cache, key, n)
            for series, index in targets:
                series[index] += n

    def _remember(self, cache: dict, key: str, n: int) -> None:
        # Bounded: past the caps every cache starts afresh (counts stay exact, only speed drops).
        if (
            len(cache) >= PIECE_CACHE_ENTRIES
            or len(self.prompt_cache) >= PROMPT_CACHE_ENTRIES
            or self._cached_chars >= TEXT_CACHE_CHARS
        ):
            self.prompt_cache.clear()
            self.first_cache.clear()
            self.piece_cache.clear()
            self._cached_chars = 0
        cache[key] = n
        self._cached_chars += len(key)
