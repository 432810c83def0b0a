"""`check(paths, tokenizer=...)`: read inputs safely, recompute every point, compare, run the rules."""

from __future__ import annotations

import importlib
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from checker import __version__
from checker.checksums import verify_bundle_checksums
from checker.compare import report_differences
from checker.events import derive_official, recompute_point
from checker.inputs import Layout, Limits, PointInput, open_inputs
from checker.report import Findings, PointResult, Report
from checker.tokens import TokenCounter

DEFAULT_RULESET = "endpoints-v1.0"

# progress(stage, done, total, message) lets a worker or a terminal show where a long check is.
Progress = Callable[[str, int, int, str], None]


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


def _optional(module: str, name: str):
    """An entry point of a part of the checker that may not be installed in this build."""
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError):
        return None


def _load_summary(point: PointInput, *, findings: Findings, limits: Limits) -> dict | None:
    path = point.files.get("result_summary.json")
    if path is None:
        return None
    from checker.loaders import load_json

    display = point.display_of("result_summary.json")
    data = load_json(path, display=display, findings=findings, limits=limits)
    if data is not None and not isinstance(data, dict):
        findings.error(
            "schema-result-summary",
            "result_summary.json must hold a JSON object.",
            file=display,
            point=point.key,
        )
        return None
    return data


def check_point(
    point: PointInput,
    *,
    counter: TokenCounter | None,
    findings: Findings,
    limits: Limits,
    rel_tol: float,
    progress: Progress | None = None,
) -> PointResult:
    """Claimed and recomputed metrics of one load point, with the consistency findings."""
    result = PointResult(
        system=point.system, model=point.model, concurrency=point.concurrency, source=point.source
    )
    claimed = _load_summary(point, findings=findings, limits=limits)
    if claimed is not None:
        derived = derive_official(claimed, concurrency=point.concurrency)
        # Stored official keys win in `claimed`; the derived ones fill what the client never writes.
        result.claimed = {**claimed, **{k: v for k, v in derived.items() if k not in claimed}}
        result.extra["claimed_stored_keys"] = sorted(k for k in derived if k in claimed)
    events = point.files.get("events")
    if events is None:
        findings.error(
            "raw-log-missing",
            "This point has no events.jsonl, so its metrics cannot be recomputed and it cannot pass.",
            file=point.display,
            point=point.key,
            fix="Add the client's events.jsonl (or events.jsonl.zst) to the point folder, or upload the "
            "official run archive, which carries it.",
        )
        return result
    if counter is None:
        findings.error(
            "raw-log-no-tokenizer",
            "No tokenizer was given, so token counts cannot be recomputed.",
            file=point.display_of("events"),
            point=point.key,
            fix="Pass --tokenizer PATH/tokenizer.json of the benchmark model.",
        )
        return result
    started = time.perf_counter()
    lines_read = None
    if progress is not None:

        def lines_read(lines: int) -> None:
            progress("recompute-point", lines, 0, f"{point.key}: {lines:,} lines")

    recomputed = recompute_point(
        events,
        tokenizer=counter,
        findings=findings,
        display=point.display_of("events"),
        point=point.key,
        max_line_bytes=limits.max_line_bytes,
        progress=lines_read,
    )
    result.extra["recompute_seconds"] = round(time.perf_counter() - started, 3)
    if recomputed is None:
        return result
    recomputed.update(derive_official(recomputed, concurrency=point.concurrency))
    result.recomputed = recomputed
    if claimed is not None:
        report_differences(
            result.claimed,
            recomputed,
            findings=findings,
            file=point.display_of("result_summary.json"),
            point=point.key,
            rel_tol=rel_tol,
        )
    return result


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
    only_points: set[str] | None = None,
) -> Report:
    """Check any mix of bundles, bundle archives, run archives and run folders; never raises on input.

    `only_points` (keys "<system>/<model>/r<C>") restricts recomputation to those points, so a
    worker can fan a submission out one point per task.
    """
    paths = [Path(p) for p in paths]
    limits = limits or Limits()
    report = Report(checker_version=__version__, ruleset=ruleset, inputs=[str(p) for p in paths])
    findings = report.findings
    tok = load_tokenizer(tokenizer)
    counter = TokenCounter(tok) if tok is not None else None
    notify = progress or (lambda *args: None)
    if workdir is not None:
        Path(workdir).mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="portal-check-", dir=workdir) as sandbox:
        notify("read", 0, len(paths), "reading inputs")
        layout: Layout = open_inputs(paths, workdir=Path(sandbox), limits=limits, findings=findings)
        report.unreadable = layout.readable_inputs == 0
        check_descriptors = _optional("checker.schema_check", "check_layout_descriptors")
        if check_descriptors is not None and only_points is None:
            notify("schemas", 0, 1, "validating descriptors")
            check_descriptors(layout, findings=findings, limits=limits)
            verify_bundle_checksums(
                layout.root,
                root_display=layout.root_display,
                cli_metadata=layout.cli_metadata,
                findings=findings,
            )
        selected = [p for p in layout.points if only_points is None or p.key in only_points]
        selected.sort(key=lambda p: (p.system, p.model, p.concurrency))
        for index, point in enumerate(selected):
            notify("recompute", index, len(selected), point.key)
            report.points.append(
                check_point(
                    point,
                    counter=counter,
                    findings=findings,
                    limits=limits,
                    rel_tol=rel_tol,
                    progress=progress,
                )
            )
        notify("recompute", len(selected), len(selected), "done")
        run_rules = _optional("checker.rules", "run_rules")
        if run_rules is not None and only_points is None:
            notify("rules", 0, 1, "checking rules")
            run_rules(layout, report, ruleset=ruleset)
        build_curves = _optional("checker.curve", "build_curves")
        if build_curves is not None:
            report.curves = build_curves(report, ruleset=ruleset)
        if official:
            cross_check = _optional("checker.official", "cross_check")
            if cross_check is not None:
                cross_check(layout, report, workdir=Path(sandbox))
    # Several stages read the same descriptor through the same safe loader: say each thing once.
    unique: dict[tuple, object] = {}
    for f in report.findings:
        unique.setdefault((f.rule, f.severity, f.file, f.line, f.pointer, f.point, f.message), f)
    report.findings[:] = sorted(unique.values(), key=_finding_order)
    return report


_SEVERITY_ORDER = {"error": 0, "warning": 1, "info": 2}


def _finding_order(f) -> tuple:
    return (_SEVERITY_ORDER[f.severity], f.point or "", f.file or "", f.line or 0, f.rule)
