"""The one check pipeline: open a version, list its points, check one point, judge the whole version.

`checker.check()` (the `portal check` command) runs these steps in one process; the portal's Celery
worker runs each step as its own task (one task per load point) on the same stored files. Same steps,
same files, same findings: a submitter gets the same answer from their laptop and from the portal.

    open_version(paths)        read every input into a private sandbox (hostile-archive rules apply);
                               the findings of reading belong to the version, not to any point
    list_points(layout)        the load-point keys "<system>/<model>/r<C>", sorted
    check_point(layout, key)   recompute one point from its raw log and compare with its summary
    judge_version(...)         schemas, checksums, every rule over the whole curve, the portal's own rules
                               (when a submission scope is given), curves, the official cross-check;
                               findings de-duplicated and sorted, here and nowhere else
    judge_extension(...)       judge_version over the union of an extension's points and the published
                               revisions' points (checker.judge.extension), plus the extension's own rules

A point step may open only the files that hold its point (the worker downloads just those): its
findings are the recompute's alone, so they never depend on which other files were opened.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from checker.cli.official_cross_check import cross_check
from checker.judge.claimed_vs_recomputed import report_differences
from checker.judge.extension import (
    ExtensionScope,
    check_extension,
    finding_identity,
    inherited_result,
    merge_layouts,
)
from checker.judge.portal_rules import (
    SubmissionScope,
    check_raw_log_reuse,
    check_raw_logs_published,
    check_registered_description,
    check_submission_scope,
)
from checker.judge.rules import run_rules
from checker.judge.ruleset import RulesetError, load_ruleset
from checker.read.checksums import verify_bundle_checksums
from checker.read.inputs import Layout, Limits, PointInput, open_inputs
from checker.read.loaders import load_json
from checker.read.schema_check import check_layout_descriptors
from checker.recompute.curve import build_curves
from checker.recompute.goodput import SampleSeries
from checker.recompute.replay import derive_official, recompute_point
from checker.recompute.tokens import TokenCounter
from checker.report import Finding, Findings, PointResult, Report
from checker.version import __version__

DEFAULT_RULESET = "endpoints-v1.0"

# progress(stage, done, total, message) lets a worker or a terminal show where a long check is.
Progress = Callable[[str, int, int, str], None]


def _silent(stage: str, done: int, total: int, message: str) -> None:
    return None


@dataclass
class OpenedVersion:
    """The inputs of one version read into a sandbox: the layout found and the findings of reading it."""

    layout: Layout
    findings: Findings
    inputs: list[str]  # the file names as given (what findings call them)


@dataclass
class PointOutcome:
    """What checking one load point produced: its claimed and recomputed metrics and its own findings."""

    result: PointResult
    findings: Findings = field(default_factory=Findings)
    # the tracked samples' per-request numbers (checker.recompute.goodput), when the raw log was replayed
    samples: SampleSeries | None = None


@contextmanager
def open_version(
    paths: Iterable[str | Path], *, limits: Limits, workdir: str | Path | None = None, raw_logs: bool = True
) -> Iterator[OpenedVersion]:
    """Read `paths` into a private temporary folder (removed on exit); never raises on bad input.

    raw_logs=False for the steps that never read a raw log (list_points, judge_version on stored point outcomes):
    raw logs inside archives are read through but not written (checker.read.inputs.open_inputs)."""
    paths = [Path(p) for p in paths]
    if workdir is not None:
        Path(workdir).mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="portal-check-", dir=workdir) as sandbox:
        findings = Findings()
        layout = open_inputs(
            paths, workdir=Path(sandbox), limits=limits, findings=findings, raw_logs=raw_logs
        )
        yield OpenedVersion(layout=layout, findings=findings, inputs=[str(p) for p in paths])


def list_points(layout: Layout) -> list[str]:
    """The keys of the version's load points, in curve order (system, model, concurrency)."""
    return [point.key for point in _sorted_points(layout.points)]


def _sorted_points(points: Iterable[PointInput]) -> list[PointInput]:
    return sorted(points, key=lambda point: (point.system, point.model, point.concurrency))


def _load_summary(point: PointInput, *, findings: Findings, limits: Limits) -> dict | None:
    path = point.files.get("result_summary.json")
    if path is None:
        return None
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
    layout: Layout,
    key: str,
    *,
    token_counter: TokenCounter | None,
    limits: Limits,
    rel_tol: float = 1e-9,
    progress: Progress | None = None,
) -> PointOutcome:
    """Claimed and recomputed metrics of the load point `key`, with its consistency findings.

    Raises KeyError when the layout holds no such point (the caller listed the points of other files).
    """
    point = next((candidate for candidate in layout.points if candidate.key == key), None)
    if point is None:
        raise KeyError(f"the inputs hold no load point {key}")
    findings = Findings()
    result = PointResult(
        system=point.system, model=point.model, concurrency=point.concurrency, source=point.source
    )
    outcome = PointOutcome(result=result, findings=findings)
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
        return outcome
    if token_counter is None:
        findings.error(
            "raw-log-no-tokenizer",
            "No tokenizer was given, so token counts cannot be recomputed.",
            file=point.display_of("events"),
            point=point.key,
            fix="Pass --tokenizer PATH/tokenizer.json of the benchmark model.",
        )
        return outcome
    _recompute_and_compare(
        point, events, outcome, token_counter, limits=limits, rel_tol=rel_tol, progress=progress
    )
    return outcome


def _recompute_and_compare(
    point: PointInput,
    events: Path,
    outcome: PointOutcome,
    token_counter: TokenCounter,
    *,
    limits: Limits,
    rel_tol: float,
    progress: Progress | None,
) -> None:
    """Recomputes the point from its raw log into `outcome` and reports where the claimed summary differs."""
    result, findings = outcome.result, outcome.findings
    started = time.perf_counter()
    lines_read = None
    if progress is not None:
        report_progress = progress

        def lines_read(lines: int) -> None:
            report_progress("recompute-point", lines, 0, f"{point.key}: {lines:,} lines")

    recomputed = recompute_point(
        events,
        tokenizer=token_counter,
        findings=findings,
        display=point.display_of("events"),
        point=point.key,
        max_line_bytes=limits.max_line_bytes,
        progress=lines_read,
        declared_concurrency=point.concurrency,
        on_samples=lambda samples: setattr(outcome, "samples", samples),
    )
    result.extra["recompute_seconds"] = round(time.perf_counter() - started, 3)
    if recomputed is None:
        return
    recomputed.update(derive_official(recomputed, concurrency=point.concurrency))
    result.recomputed = recomputed
    if result.claimed is not None:
        report_differences(
            result.claimed,
            recomputed,
            findings=findings,
            file=point.display_of("result_summary.json"),
            point=point.key,
            rel_tol=rel_tol,
        )


def judge_version(
    opened: OpenedVersion,
    outcomes: Iterable[PointOutcome],
    *,
    ruleset: str = DEFAULT_RULESET,
    limits: Limits,
    official: bool = False,
    scope: SubmissionScope | None = None,
    sandbox: str | Path | None = None,
    progress: Progress | None = None,
) -> Report:
    """The whole version's Report: reading findings, schemas, checksums, every point's outcome, the rules
    over the whole curve, the portal's own rules when `scope` is given, curves and (optionally) the
    official checker's verdict; findings de-duplicated and sorted."""
    notify = progress or _silent
    layout = opened.layout
    report = Report(checker_version=__version__, ruleset=ruleset, inputs=list(opened.inputs))
    report.unreadable = layout.readable_inputs == 0
    findings = report.findings
    findings.extend(opened.findings)
    notify("schemas", 0, 1, "validating descriptors")
    check_layout_descriptors(layout, findings=findings, limits=limits)
    verify_bundle_checksums(
        layout.root,
        root_display=layout.root_display,
        cli_metadata=layout.cli_metadata,
        findings=findings,
        known=layout.raw_log_digests,
    )
    ordered = sorted(outcomes, key=lambda outcome: outcome.result.key)
    by_key = {outcome.result.key: outcome for outcome in ordered}
    for point in _sorted_points(layout.points):
        outcome = by_key.get(point.key)
        if outcome is None:
            raise ValueError(f"load point {point.key} was not checked")
        report.points.append(outcome.result)
        findings.extend(outcome.findings)
    notify("rules", 0, 1, "checking rules")
    run_rules(layout, report, ruleset=ruleset)
    report.curves = build_curves(report, ruleset=ruleset)
    if official:
        notify("official", 0, 1, "running the official checker")
        with tempfile.TemporaryDirectory(prefix="portal-official-", dir=sandbox) as official_dir:
            cross_check(layout, report, workdir=Path(official_dir))
    # After the cross-check: the official checker is compared with what `portal check` finds, and the
    # portal-only rules are not disagreements with it.
    if scope is not None:
        check_submission_scope(layout, scope=scope, findings=findings)
        check_registered_description(layout, scope=scope, ruleset=ruleset, findings=findings)
        check_raw_log_reuse(layout, scope=scope, findings=findings)
        check_raw_logs_published(layout, scope=scope, findings=findings)
    report.findings[:] = unique_sorted(report.findings)
    return report


def judge_extension(
    opened: OpenedVersion,
    outcomes: Iterable[PointOutcome],
    *,
    extension: ExtensionScope,
    ruleset: str = DEFAULT_RULESET,
    limits: Limits,
    official: bool = False,
    scope: SubmissionScope | None = None,
    sandbox: str | Path | None = None,
    progress: Progress | None = None,
) -> Report:
    """judge_version over the curve an extension would make (checker.judge.extension): its own points and, for every
    other concurrency, the newest published revision's point (stored results, not recomputed again). Findings a
    published revision already carried on its own points are left out; points carry their revision and stack.
    The curve consistency of system descriptions is judged among the extension's own points (a declared software
    stack may differ from the published one; hardware may not: extension-hardware-change)."""
    outcomes = list(outcomes)
    merged, inherited = merge_layouts(opened.layout, extension.revisions)
    by_number = {revision.number: revision for revision in extension.revisions}
    for outcome in outcomes:
        outcome.result.extra = {**outcome.result.extra, "revision": None, "stack": extension.stack}
    for key, number in inherited.items():
        revision = by_number[number]
        outcomes.append(PointOutcome(result=inherited_result(revision.results[key], revision=revision)))
    combined = OpenedVersion(layout=merged, findings=opened.findings, inputs=opened.inputs)
    report = judge_version(
        combined,
        outcomes,
        ruleset=ruleset,
        limits=limits,
        official=official,
        scope=scope,
        sandbox=sandbox,
        progress=progress,
    )
    judged = {number: revision.judged for number, revision in by_number.items()}
    newest = extension.revisions[0].judged if extension.revisions else set()

    def already_judged(finding: Finding) -> bool:
        identity = finding_identity(finding.rule, finding.severity, finding.point, finding.message)
        if finding.point in inherited:
            return identity in judged[inherited[finding.point]]
        return finding.point is None and identity in newest

    kept = Findings(
        finding
        for finding in report.findings
        if finding.rule != "system-description-consistency" and not already_judged(finding)
    )
    try:
        per_point = set(load_ruleset(ruleset).get("disclosure", "system_desc_per_point", default=[]) or [])
    except RulesetError:
        per_point = set()
    check_extension(opened.layout, scope=extension, findings=kept, per_point_keys=per_point)
    report.findings[:] = unique_sorted(kept)
    return report


_SEVERITY_ORDER = {"error": 0, "warning": 1, "info": 2}


def finding_order(finding: Finding) -> tuple:
    """How every report lists its findings: errors first, then by point, file, line and rule."""
    return (
        _SEVERITY_ORDER[finding.severity],
        finding.point or "",
        finding.file or "",
        finding.line or 0,
        finding.rule,
    )


def unique_sorted(findings: Iterable[Finding]) -> list[Finding]:
    """Each finding once (several steps read the same descriptor through the same safe loader), in order."""
    unique: dict[tuple, Finding] = {}
    for finding in findings:
        identity = (
            finding.rule,
            finding.severity,
            finding.file,
            finding.line,
            finding.pointer,
            finding.point,
            finding.message,
        )
        unique.setdefault(identity, finding)
    return sorted(unique.values(), key=finding_order)


def findings_from_dicts(rows: Iterable[dict[str, Any]]) -> Findings:
    """Findings back from their stored form (Finding.to_dict(), empty strings as None)."""
    out = Findings()
    for row in rows:
        out.append(
            Finding(
                rule=row["rule"],
                severity=row["severity"],
                message=row["message"],
                file=row.get("file") or None,
                line=row.get("line"),
                pointer=row.get("pointer") or None,
                point=row.get("point") or None,
                fix=row.get("fix") or None,
            )
        )
    return out
