"""Token counting for the recompute: batched tokenizer calls and the exact split of a count at a cut."""

from __future__ import annotations

import json
import logging
import re

from checker.read.event_log import output_texts
from checker.recompute.chat_template import (
    PREFIX_USER,
    AssistantParts,
    ChatTemplate,
    MessagePrompt,
    normalize_messages,
    structured_output,
)
from checker.recompute.fastcount import FastCounter, build
from checker.recompute.pre_tokenizers import GPT2_PATTERN, LLAMA3_SPLIT_PATTERN, pre_tokenizer_pattern

logger = logging.getLogger(__name__)

# -- exact split of a token count at the first streamed chunk ---------------------------------
# OSL needs count(first + rest) and TPOT needs count(rest). When the tokenizer provably cuts
# first + rest at len(first) -- no normalizer, no added token across the cut, and a
# pre-tokenizer that always starts a new piece there and splits the prefix alone the same way --
# then count(first + rest) == count(first) + count(rest), because the model (BPE) works on each
# pre-tokenized piece alone. first is a short chunk with few distinct values (cached), so a
# sample costs one encode of rest instead of two encodes. Where the cut is not provably clean,
# first + rest is encoded whole. docs/performance.md gives the argument in full.
_ASCII_SPACE = frozenset(" \t\n\v\f\r")  # \s of the tokenizers' regex engines, ASCII part
# A space preceded by anything but whitespace starts a new piece under both patterns above, and
# the prefix before it is split alone the same way; this is a superset of every regex engine's \s.
_UNSAFE_SPACE = re.compile("[\\s\u180e\u200b\u2060\ufeff] ")
_SAFE_POST_PROCESSORS = {"ByteLevel", "TemplateProcessing", "RobertaProcessing", "BertProcessing"}


def _ascii_class(ch: str) -> str | None:
    """L(etter), N(umber), S(pace) or O(ther) for an ASCII character; None beyond ASCII."""
    if not ch.isascii():
        return None
    if ch.isalpha():
        return "L"
    if ch.isdigit():
        return "N"
    return "S" if ch in _ASCII_SPACE else "O"


def _gpt2_cut(a: str, b: str) -> bool:
    r"""ByteLevel(use_regex) pattern 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+.

    No match holds a non-space a followed by a space b, nor two characters of different classes
    (except a contraction: ' then s, t, r, v, m, l, d); with a not a space, the lookahead
    (?!\S) is never evaluated at the cut, so the prefix alone is split the same way.
    """
    ca, cb = _ascii_class(a), _ascii_class(b)
    if ca is None or cb is None or ca == "S":
        return False
    if cb == "S":
        return True
    return ca != cb and not (a == "'" and b in "strvmldSTRVMLD")


def _llama3_cut(a: str, b: str) -> bool:
    """Llama-3 Split pattern: a letter or digit followed by a character of another class."""
    ca, cb = _ascii_class(a), _ascii_class(b)
    return ca in ("L", "N") and cb is not None and cb != ca


def _fast_counter(tokenizer) -> tuple[FastCounter | None, str]:
    """checker.recompute.fastcount's counter for this tokenizer, when its pipeline around the model adds nothing."""
    if split_rule(tokenizer) is None:
        return None, "the tokenizer's normalizer, pre-tokenizer, post-processor or added tokens are not plain"
    pre = _state(tokenizer.pre_tokenizer)
    added = [t.content for t in tokenizer.get_added_tokens_decoder().values() if t.content]
    return build(tokenizer, pre, added)


def _state(component) -> dict | None:
    return None if component is None else json.loads(component.__getstate__())


def split_rule(tokenizer):
    """The boundary rule of this tokenizer (a, b) -> bool, or None when no cut is provably clean."""
    try:
        if (
            tokenizer.normalizer is not None
            or tokenizer.truncation is not None
            or tokenizer.padding is not None
        ):
            return None
        pre = _state(tokenizer.pre_tokenizer)
        post = _state(tokenizer.post_processor)
        added = list(tokenizer.get_added_tokens_decoder().values())
    except Exception:  # not a tokenizers.Tokenizer (a stub): never cut
        return None
    if any(t.lstrip or t.rstrip or t.single_word for t in added):
        return None
    if post is not None:
        kinds = (
            [p.get("type") for p in post.get("processors", [post])]
            if post.get("type") == "Sequence"
            else [post.get("type")]
        )
        if not set(kinds) <= _SAFE_POST_PROCESSORS:  # these only add specials, and we add none
            return None
    return {GPT2_PATTERN: _gpt2_cut, LLAMA3_SPLIT_PATTERN: _llama3_cut}.get(pre_tokenizer_pattern(pre) or "")


class TokenCounter:
    """Counts tokens of many texts with few tokenizer calls: batched, prompt counts cached.

    With fast (the default), texts are counted by checker.recompute.fastcount's tiktoken table where that provably
    gives the tokenizer's own counts; `engine` says which counts ("tiktoken" or "tokenizers") and
    `fast_reason` why the fast counter is not used for this tokenizer.
    """

    def __init__(self, tokenizer, *, fast: bool = True, chat: ChatTemplate | None = None) -> None:
        self.tokenizer = tokenizer
        self.chat = (
            chat  # the model's chat template: message prompts and structured answers (docs/agentic.md)
        )
        self._frame: int | None = None
        self._encode = getattr(tokenizer, "encode_batch_fast", None) or tokenizer.encode_batch
        self.calls = 0
        self.texts = 0
        self.fast_texts = 0  # of self.texts, those counted by the fast counter
        self.fast: FastCounter | None = None
        self.fast_reason = "turned off" if not fast else ""
        if fast:
            self.fast, self.fast_reason = _fast_counter(tokenizer)
            if self.fast is None:
                logger.info("token counts by tokenizers, not tiktoken: %s", self.fast_reason)
        self.rule = split_rule(tokenizer)
        self._added: list[str] = []
        self._added_re = None
        if self.rule is not None:
            self._added = [t.content for t in tokenizer.get_added_tokens_decoder().values() if t.content]
            self._added_reach = max((len(c) for c in self._added), default=1)
            if self._added:
                self._added_re = re.compile(
                    "|".join(re.escape(c) for c in sorted(self._added, key=len, reverse=True))
                )

    def count(self, texts: list[str]) -> list[int]:
        if not texts:
            return []
        self.calls += 1
        self.texts += len(texts)
        fast = self.fast
        if fast is None:
            return [len(e) for e in self._encode(texts, add_special_tokens=False)]
        flags = list(map(fast.accepts, texts))
        if all(flags):
            self.fast_texts += len(texts)
            return fast.counts(texts)
        mine = [t for t, ok in zip(texts, flags, strict=True) if ok]
        rest = [t for t, ok in zip(texts, flags, strict=True) if not ok]
        self.fast_texts += len(mine)
        fast_counts = iter(fast.counts(mine))
        slow_counts = iter([len(e) for e in self._encode(rest, add_special_tokens=False)] if rest else [])
        return [next(fast_counts) if ok else next(slow_counts) for ok in flags]

    # -- structured texts (checker.recompute.chat_template) --------------------------------------------------
    def prompt_text(self, prompt: MessagePrompt) -> tuple[str, str | None]:
        """(the text whose tokens are the ISL of a message prompt, why the client's fallback was used or None)."""
        if self.chat is None:
            return prompt.fallback_text(), "the tokenizer has no chat template"
        kwargs = dict(prompt.kwargs)
        if prompt.tool_choice is not None:
            kwargs["tool_choice"] = prompt.tool_choice
        try:
            text = self.chat.render(
                normalize_messages(prompt.messages),
                tools=list(prompt.tools) if prompt.tools is not None else None,
                add_generation_prompt=True,
                override=prompt.template,
                **kwargs,
            )
        except (
            Exception
        ) as exc:  # a template's own error (raise_exception, bad data): the client falls back too
            return (
                prompt.fallback_text(),
                f"the chat template failed ({type(exc).__name__}: {str(exc)[:200]})",
            )
        return text, None

    def answer_text(self, parts: AssistantParts) -> tuple[str, int, str | None]:
        """(text, tokens to subtract, fallback reason) of an answer with reasoning or tool calls: the assistant
        message rendered after an empty user message, minus that prefix and the empty assistant frame."""
        if self.chat is None:
            return parts.fallback_text(), 0, "the tokenizer has no chat template"
        try:
            text = self.chat.render([PREFIX_USER, parts.message()], add_generation_prompt=False)
        except Exception as exc:
            return (
                parts.fallback_text(),
                0,
                f"the chat template failed ({type(exc).__name__}: {str(exc)[:200]})",
            )
        return text, self.frame_tokens(), None

    def output_tokens(self, data) -> int:
        """One answer's OSL, counted alone as the replay counts it: through the chat template minus the assistant
        frame when it carries reasoning or tool calls, else the tokens of its text (docs/agentic.md)."""
        structured = structured_output(data)
        if structured is not None:
            text, frame, _ = self.answer_text(structured[0])
            return max(0, self.count([text])[0] - frame)
        full, _after = output_texts(data)
        return self.count([full])[0] if full else 0

    def frame_tokens(self) -> int:
        """Tokens of [empty user] plus those of an empty assistant turn after it (the client's _prefix_len +
        _baseline); 0 when the template cannot render them, as in the client."""
        if self._frame is None:
            try:
                assert self.chat is not None
                self.chat.render(
                    [PREFIX_USER], add_generation_prompt=False
                )  # the client needs both to render
                framed = self.chat.render(
                    [PREFIX_USER, {"role": "assistant", "content": ""}], add_generation_prompt=False
                )
                self._frame = self.count([framed])[0]  # prefix + (framed - prefix)
            except Exception:
                self._frame = 0
        return self._frame

    @property
    def engine(self) -> str:
        return "tiktoken" if self.fast is not None else "tokenizers"

    def splits_at(self, text: str, cut: int) -> bool:
        """True when count(text) == count(text[:cut]) + count(text[cut:]) provably holds."""
        if cut <= 0 or cut >= len(text):
            return False
        if self.rule is None or not self.rule(text[cut - 1], text[cut]):
            return False
        if self._added:
            window = text[max(0, cut - self._added_reach + 1) : cut + self._added_reach - 1]
            if any(c in window for c in self._added):  # an added token might straddle the cut
                return False
        return True

    def pieces(self, text: str) -> list[str] | None:
        """text.split(" ") when count(text) == count(parts[0]) + sum(count(" " + part)) provably holds.

        Every space that is preceded by a non-whitespace character is a clean cut (see _gpt2_cut and
        _llama3_cut; it holds for any non-whitespace character, not only ASCII). None when some space
        follows whitespace (a run of spaces, an indent) or the text holds an added token.
        """
        if self.rule is None or _UNSAFE_SPACE.search(text) is not None:
            return None
        if self._added_re is not None and self._added_re.search(text) is not None:
            return None
        return text.split(" ")
