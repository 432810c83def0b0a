"""`check(paths, tokenizer=...)`: the whole pipeline of checker.cli.pipeline in one process (`portal check`)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from checker.cli.pipeline import (
    DEFAULT_RULESET,
    Progress,
    check_point,
    judge_version,
    list_points,
    open_version,
)
from checker.read.inputs import Limits
from checker.recompute.chat_template import ChatTemplate, ChatTemplateError
from checker.recompute.goodput import SloTarget, evaluate
from checker.recompute.tokens import TokenCounter
from checker.report import Report


class TokenizerError(Exception):
    """The tokenizer file cannot be loaded (a usage error, not a finding about the submission)."""


def load_tokenizer(tokenizer: Any):
    """A `tokenizers.Tokenizer` from a path to tokenizer.json (or its folder), or the object itself."""
    if tokenizer is None:
        return None
    if isinstance(tokenizer, str | Path):
        from tokenizers import Tokenizer

        path = Path(tokenizer)
        if path.is_dir():
            path = path / "tokenizer.json"
        try:
            return Tokenizer.from_file(str(path))
        except Exception as exc:  # tokenizers raises its own Exception type for bad files
            raise TokenizerError(f"cannot load tokenizer {path}: {exc}") from exc
    return tokenizer


def load_chat_template(tokenizer: Any) -> ChatTemplate | None:
    """The chat template of a tokenizer folder (chat_template.jinja or tokenizer_config.json's chat_template),
    or of the folder holding a tokenizer.json; None when there is none (message prompts then use the client's
    fallback, with a finding)."""
    if not isinstance(tokenizer, str | Path):
        return None
    path = Path(tokenizer)
    try:
        return ChatTemplate.from_folder(path if path.is_dir() else path.parent)
    except ChatTemplateError as exc:
        raise TokenizerError(str(exc)) from exc


def token_counter(tokenizer: Any) -> TokenCounter | None:
    """The counter of `portal check --tokenizer PATH`: the tokenizer and, in its folder, the chat template."""
    loaded = load_tokenizer(tokenizer)
    return TokenCounter(loaded, chat=load_chat_template(tokenizer)) if loaded is not None else None


def check(
    paths: Iterable[str | Path],
    *,
    tokenizer: Any,
    ruleset: str = DEFAULT_RULESET,
    limits: Limits | None = None,
    rel_tol: float = 1e-9,
    workdir: str | Path | None = None,
    official: bool = False,
    progress: Progress | None = None,
    slo: SloTarget | None = None,
) -> Report:
    """Check any mix of bundles, bundle archives, run archives and run folders; never raises on input.

    Exactly the portal worker's steps (checker.cli.pipeline), run one after the other in this process.
    With `slo`, every recomputed point also carries its goodput and attainment for that target
    ("slo" in the point's JSON, checker.recompute.goodput); a point without a raw log carries "slo": null.
    """
    limits = limits or Limits()
    notify = progress or (lambda *args: None)
    counter = token_counter(tokenizer)
    paths = [Path(p) for p in paths]
    notify("read", 0, len(paths), "reading inputs")
    with open_version(paths, limits=limits, workdir=workdir) as opened:
        keys = list_points(opened.layout)
        outcomes = []
        for index, key in enumerate(keys):
            notify("recompute", index, len(keys), key)
            outcomes.append(
                check_point(
                    opened.layout,
                    key,
                    token_counter=counter,
                    limits=limits,
                    rel_tol=rel_tol,
                    progress=progress,
                )
            )
        notify("recompute", len(keys), len(keys), "done")
        report = judge_version(
            opened,
            outcomes,
            ruleset=ruleset,
            limits=limits,
            official=official,
            sandbox=workdir,
            progress=progress,
        )
    if slo is not None:
        by_key = {outcome.result.key: outcome for outcome in outcomes}
        for point in report.points:
            outcome = by_key.get(point.key)
            samples = outcome.samples if outcome is not None else None
            point.extra["slo"] = evaluate(samples, slo) if samples is not None else None
    return report
