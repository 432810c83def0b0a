"""The model's chat template, rendered as the client renders it, and the structured texts the client counts with it.

The client (mlcommons/endpoints at ea33275, src/inference_endpoint/async_utils/services/metrics_aggregator/
token_metrics.py) counts a message prompt as `len(apply_chat_template(messages, tools=..., tool_choice=...,
**chat_template_kwargs, add_generation_prompt=True))` and an assistant output carrying reasoning or tool calls as
the tokens of `[{"role": "user", "content": ""}, assistant]` minus those of the user prefix and of the empty
assistant frame. transformers renders the template with a sandboxed Jinja2 environment (trim_blocks,
lstrip_blocks, loop controls, `tojson`, `raise_exception`, `strftime_now`, the special tokens as variables) and
tokenizes the result without special tokens; this module does the same with jinja2 alone, so the portal's worker
needs no transformers (docs/agentic.md, "Templating"). When the template is missing or fails, the client counts
the JSON text of the prompt or the newline-joined parts of the answer instead (its fallback); so does the portal,
with a finding saying so.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from pathlib import Path
from typing import Any

import jinja2
from jinja2 import nodes
from jinja2.ext import Extension
from jinja2.sandbox import ImmutableSandboxedEnvironment

SPECIAL_TOKENS = (
    "bos_token",
    "eos_token",
    "unk_token",
    "sep_token",
    "pad_token",
    "cls_token",
    "mask_token",
)
PREFIX_USER = {"role": "user", "content": ""}  # the client's _PREFIX_USER_MSG
MAX_TEMPLATE_BYTES = 1024 * 1024


class ChatTemplateError(Exception):
    """The tokenizer folder's chat template cannot be read or compiled."""


class _Generation(Extension):
    """transformers' `{% generation %}...{% endgeneration %}` (marks assistant text for masks): renders its body."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return nodes.Scope(body, lineno=lineno)


def _tojson(value, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(
        value, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys
    )


def _raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def _strftime_now(format):  # noqa: A002 - the name templates call
    return datetime.now().strftime(format)


@lru_cache(maxsize=8)
def compile_template(source: str) -> jinja2.Template:
    env = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[_Generation, jinja2.ext.loopcontrols]
    )
    env.filters["tojson"] = _tojson
    env.globals["raise_exception"] = _raise_exception
    env.globals["strftime_now"] = _strftime_now
    return env.from_string(source)


def _token_text(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and isinstance(value.get("content"), str):
        return value["content"]
    return None


@dataclass(frozen=True)
class ChatTemplate:
    """A tokenizer folder's chat template(s) and special tokens."""

    templates: dict[str, str]  # name -> source; "default" unless the folder names several
    special_tokens: dict[str, str]

    @classmethod
    def from_folder(cls, folder: Path) -> ChatTemplate | None:
        """As transformers finds it: chat_template.jinja, else tokenizer_config.json's chat_template; None without."""
        config: dict = {}
        config_path = folder / "tokenizer_config.json"
        try:
            if config_path.is_file():
                config = json.loads(config_path.read_text(encoding="utf-8"))
            if not isinstance(config, dict):
                raise ChatTemplateError(f"{config_path} is not a JSON object")
            jinja_path = folder / "chat_template.jinja"
            if jinja_path.is_file():
                if jinja_path.stat().st_size > MAX_TEMPLATE_BYTES:
                    raise ChatTemplateError(f"{jinja_path} is over {MAX_TEMPLATE_BYTES:,} bytes")
                templates = {"default": jinja_path.read_text(encoding="utf-8")}
            else:
                raw = config.get("chat_template")
                if isinstance(raw, str):
                    templates = {"default": raw}
                elif isinstance(raw, list):
                    templates = {
                        t["name"]: t["template"]
                        for t in raw
                        if isinstance(t, dict)
                        and isinstance(t.get("name"), str)
                        and isinstance(t.get("template"), str)
                    }
                else:
                    return None
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            raise ChatTemplateError(f"cannot read the chat template in {folder}: {exc}") from exc
        special = {
            name: text for name in SPECIAL_TOKENS if (text := _token_text(config.get(name))) is not None
        }
        template = cls(templates=templates, special_tokens=special)
        for source in templates.values():
            try:
                compile_template(source)
            except jinja2.TemplateSyntaxError as exc:
                raise ChatTemplateError(f"the chat template in {folder} does not compile: {exc}") from exc
        return template

    def source(self, tools: Any) -> str:
        if tools and "tool_use" in self.templates:
            return self.templates["tool_use"]
        if "default" in self.templates:
            return self.templates["default"]
        return next(iter(self.templates.values()))

    def render(
        self,
        messages: list,
        *,
        tools: Any = None,
        add_generation_prompt: bool,
        override: str | None = None,
        **kwargs: Any,
    ) -> str:
        """The text apply_chat_template tokenizes; raises on a template error (the caller falls back)."""
        variables = {**self.special_tokens, **kwargs}
        return compile_template(override if override is not None else self.source(tools)).render(
            messages=messages,
            tools=tools,
            documents=None,
            add_generation_prompt=add_generation_prompt,
            **variables,
        )


# -- the structured inputs of the client (core/types.py, tokenization.py) --------------------------------------


def merge_tool_calls(tool_calls: Any) -> list[dict] | None:
    """Streamed tool-call deltas merged into whole calls, as the client's merge_tool_calls (core/types.py)."""
    if not tool_calls or not isinstance(tool_calls, list | tuple):
        return None
    if not isinstance(tool_calls[0], list | tuple):
        return [c for c in tool_calls if isinstance(c, dict)]
    merged: dict[Any, dict] = {}
    for chunk in tool_calls:
        if not isinstance(chunk, list | tuple):
            continue
        for partial in chunk:
            if not isinstance(partial, dict):
                continue
            call = merged.setdefault(
                partial.get("index", 0), {"type": "function", "function": {"arguments": ""}}
            )
            if partial.get("id"):
                call["id"] = partial["id"]
            if partial.get("type"):
                call["type"] = partial["type"]
            fn = partial.get("function") or {}
            if isinstance(fn, dict):
                if fn.get("name"):
                    call["function"]["name"] = fn["name"]
                if isinstance(fn.get("arguments"), str) and fn["arguments"]:
                    call["function"]["arguments"] += fn["arguments"]
    try:
        order = sorted(merged)
    except TypeError:
        order = list(merged)
    return [merged[i] for i in order]


def normalize_tool_calls(tool_calls: Iterable) -> list:
    """`function.arguments` given as a JSON string becomes the object it encodes (the client's
    _normalize_tool_calls_for_template), so templates that iterate the arguments can."""
    out = []
    for call in tool_calls:
        fn = call.get("function") if isinstance(call, dict) else None
        args = fn.get("arguments") if isinstance(fn, dict) else None
        if isinstance(fn, dict) and isinstance(args, str):
            try:
                parsed = json.loads(args)
            except ValueError:
                parsed = None
            if isinstance(parsed, dict):
                out.append({**call, "function": {**fn, "arguments": parsed}})
                continue
        out.append(call)
    return out


def normalize_messages(messages: Sequence) -> list:
    out = []
    for message in messages:
        calls = message.get("tool_calls") if isinstance(message, dict) else None
        if isinstance(calls, list | tuple) and calls:
            out.append({**message, "tool_calls": normalize_tool_calls(calls)})
        else:
            out.append(message)
    return out


def compact_json(value: Any) -> str:
    """msgspec.json.encode as the client writes it: no spaces, non-ASCII kept."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


@dataclass(frozen=True)
class AssistantParts:
    """An answer as the client hands it to the chat template (MessageInput): content, reasoning, tool calls."""

    content: str
    reasoning: str | None
    tool_calls: list[dict] | None

    def message(self) -> dict:
        msg: dict[str, Any] = {"role": "assistant", "content": self.content or ""}
        if self.reasoning:
            msg["reasoning_content"] = self.reasoning
        if self.tool_calls:
            msg["tool_calls"] = normalize_tool_calls(self.tool_calls)
        return msg

    def fallback_text(self) -> str:
        calls = compact_json(self.tool_calls) if self.tool_calls else None
        return "\n".join(p for p in (self.content or None, self.reasoning or None, calls) if p)


def _joined(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list | tuple):
        return "".join(s for s in value if isinstance(s, str))
    return ""


def structured_output(data: Any) -> tuple[AssistantParts, AssistantParts] | None:
    """(whole answer, answer after its first streamed chunk) when a TextModelOutput carries reasoning or tool calls
    (the client's OslTrigger/TpotTrigger then use the chat template); None for a plain text answer."""
    if not isinstance(data, list) or len(data) < 2:
        return None
    output = data[1]
    reasoning = data[2] if len(data) > 2 else None
    tool_calls = data[3] if len(data) > 3 else None
    if not (reasoning or tool_calls):
        return None
    whole = AssistantParts(
        _joined(output), _joined(reasoning) if reasoning else None, merge_tool_calls(tool_calls)
    )
    # as_message_parts_after_first_chunk
    reasoning_after = _joined(reasoning[1:]) if isinstance(reasoning, list) and len(reasoning) > 1 else None
    content_after = ""
    if output:
        if isinstance(output, str):
            if reasoning_after is not None or (reasoning and isinstance(reasoning, list)):
                content_after = output
        elif isinstance(output, list):
            if reasoning_after is not None or reasoning:
                content_after = _joined(output)
            elif len(output) > 1:
                content_after = _joined(output[1:])
    rest = tool_calls
    if rest and isinstance(rest, list) and isinstance(rest[0], list | tuple) and not (output or reasoning):
        rest = rest[1:]
    after = AssistantParts(content_after, reasoning_after, merge_tool_calls(rest))
    return whole, after


@dataclass(frozen=True)
class MessagePrompt:
    """A PromptData with messages (the client's PromptInput)."""

    messages: list
    tools: Any
    kwargs: dict
    template: str | None
    tool_choice: Any

    def fallback_text(self) -> str:
        prompt: dict[str, Any] = {"messages": normalize_messages(self.messages)}
        if self.tools is not None:
            prompt["tools"] = list(self.tools)
        return compact_json(prompt)


def message_prompt(data: Any) -> MessagePrompt | None:
    """The message prompt of a sample.issued payload
    ["PromptData", text, token_ids, messages, tools, chat_template_kwargs, chat_template, tool_choice]."""
    if not isinstance(data, list) or len(data) < 4 or not isinstance(data[3], list):
        return None
    tools = data[4] if len(data) > 4 and isinstance(data[4], list) else None
    kwargs = data[5] if len(data) > 5 and isinstance(data[5], dict) else {}
    template = data[6] if len(data) > 6 and isinstance(data[6], str) else None
    tool_choice = data[7] if len(data) > 7 else None
    return MessagePrompt(data[3], tools, kwargs, template, tool_choice)
