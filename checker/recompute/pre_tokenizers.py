"""The two pre-tokenizers the fast paths of the token count know, recognised from their serialized state: GPT-2's
ByteLevel regex and Llama 3's Split-then-ByteLevel. Both the clean cut of a text (checker.recompute.tokens) and
tiktoken's counting (checker.recompute.fastcount) start from this one recognition, so they can never disagree on
which tokenizer they speak for; anything else gets None and the plain `tokenizers` path."""

from __future__ import annotations

GPT2_PATTERN = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"
LLAMA3_SPLIT_PATTERN = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
    r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)


def pre_tokenizer_pattern(pre: dict | None) -> str | None:
    """The regex that splits a text into pieces as the pre-tokenizer `pre` (its JSON state) does, or None."""
    if pre is None:
        return None
    if pre.get("type") == "ByteLevel":
        if pre.get("use_regex", True) and not pre.get("add_prefix_space"):
            return GPT2_PATTERN
        return None
    if pre.get("type") == "Sequence":
        parts = pre.get("pretokenizers") or []
        if (
            len(parts) == 2
            and parts[0].get("type") == "Split"
            and parts[0].get("pattern") == {"Regex": LLAMA3_SPLIT_PATTERN}
            and parts[0].get("behavior") == "Isolated"
            and not parts[0].get("invert")
            and parts[1].get("type") == "ByteLevel"
            and not parts[1].get("use_regex", True)
            and not parts[1].get("add_prefix_space")
        ):
            return LLAMA3_SPLIT_PATTERN
    return None
