"""`portal import`: read other benchmark tools' outputs through the registry's importers and compare.

For each load point: the tool's own summary as the tool wrote it (`reported`), the same figures recomputed
from the per-request records with that tool's definitions (`recomputed`), and the portal's own metrics and
goodput from the same records (`portal`, checker.recompute.imported). A reported figure that the records do not
reproduce (relative difference over the tolerance) is an `import-summary-mismatch` finding.

Rule ids emitted here and by the importers (docs/importers.md): import-unrecognised, import-no-file,
import-mixed-tools, import-schema, import-no-requests, import-summary-mismatch, import-too-many-files,
import-field-type, import-number-out-of-range, import-record-out-of-range, import-record-invalid, plus the JSON
readers' own (json-syntax, json-nonfinite, file-too-large, invalid-utf8, ...).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from checker.read import kinds
from checker.read.inputs.limits import Limits, MiB
from checker.read.kinds.base import brief_value, record_problem
from checker.recompute.imported import Slo, portal_metrics, relative_difference
from checker.report import Finding, Findings

# Figures `reported` and `recomputed` may carry, in this order (the vocabulary, shared by every tool).
FIGURES = (
    "ttft_ms_mean",
    "ttft_ms_p50",
    "ttft_ms_p90",
    "ttft_ms_p99",
    "itl_ms_mean",
    "itl_ms_p50",
    "itl_ms_p90",
    "itl_ms_p99",
    "tpot_ms_mean",
    "tpot_ms_p50",
    "e2e_ms_mean",
    "e2e_ms_p50",
    "e2e_ms_p90",
    "e2e_ms_p99",
    "request_throughput",
    "output_token_throughput",
    "requests_completed",
    "requests_failed",
    "duration_s",
)
# Another tool's output holds every request of a run in one JSON file: more room than an MLPerf descriptor.
IMPORT_LIMITS = Limits(max_descriptor_bytes=512 * MiB)
MAX_FILES = 2_000
MAX_DEPTH = 4


@dataclass
class ImportResult:
    """What `portal import` found: the run (None when nothing was usable), its findings, the largest difference."""

    tool: str | None
    tool_version: str | None
    points: list[dict[str, Any]] = field(default_factory=list)
    findings: Findings = field(default_factory=Findings)
    max_relative_difference: float | None = None

    @property
    def verdict(self) -> str:
        return "fail" if any(f.severity == "error" for f in self.findings) or not self.points else "pass"

    def to_dict(self) -> dict[str, Any]:
        return {
            "tool": self.tool,
            "tool_version": self.tool_version,
            "verdict": self.verdict,
            "max_relative_difference": self.max_relative_difference,
            "points": self.points,
            "findings": [f.to_dict() for f in self.findings],
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, allow_nan=False)


def _files_below(paths: list[Path], findings: Findings) -> list[Path]:
    """The regular files given or found below the given folders (no symlinks followed), bounded in count."""
    out: list[Path] = []
    for given in paths:
        if given.is_symlink() or not given.exists():
            findings.error(
                "import-no-file",
                f"{given.name or given} does not exist (or is a symbolic link, which is not followed).",
                file=given.name or str(given),
                fix="Give the tool's output files or the folder it wrote them to.",
            )
            continue
        if given.is_file():
            out.append(given)
            continue
        base_depth = len(given.parts)
        for root, dirs, files in os.walk(given, followlinks=False):
            depth = len(Path(root).parts) - base_depth
            dirs[:] = sorted(d for d in dirs if depth < MAX_DEPTH and not (Path(root) / d).is_symlink())
            for name in sorted(files):
                path = Path(root) / name
                if path.is_file() and not path.is_symlink():
                    out.append(path)
            if len(out) > MAX_FILES:
                findings.error(
                    "import-too-many-files",
                    f"{given.name} holds more than {MAX_FILES:,} files; only the first were looked at.",
                    file=given.name,
                    fix="Give the tool's output folder for one run, not a whole tree of results.",
                )
                return out[:MAX_FILES]
    return out


def import_runs(
    paths: list[str | Path],
    *,
    tool: str | None = None,
    slo: Slo | None = None,
    rel_tol: float = 1e-9,
    limits: Limits = IMPORT_LIMITS,
) -> ImportResult:
    """Read the tool outputs at `paths` (files or folders); never raises on bad input."""
    findings = Findings()
    slo = slo or Slo()
    files = _files_below([Path(p) for p in paths], findings)
    by_importer: dict[str, list[Path]] = {}
    chosen = None
    if tool is not None:
        try:
            chosen = kinds.kind(tool)
        except KeyError:
            chosen = None
        if chosen is None or not chosen.importer:
            names = ", ".join(k.name for k in kinds.importers())
            findings.error(
                "import-unrecognised",
                f"--tool {tool} is not an importer the portal has.",
                fix=f"Use one of: {names}.",
            )
            return ImportResult(tool=tool, tool_version=None, findings=findings)
    for path in files:
        importer = kinds.importer_for(path)
        if importer is not None and (chosen is None or importer.name == chosen.name):
            by_importer.setdefault(importer.name, []).append(path)
    if not by_importer:
        if files:
            expected = "; ".join(f"{k.name}: {k.label}" for k in kinds.importers())
            findings.error(
                "import-unrecognised",
                f"None of the {len(files)} file(s) given is a benchmark tool's output the portal reads"
                + (f" as {chosen.name}" if chosen else "")
                + ".",
                file=files[0].name if len(files) == 1 else None,
                fix=f"Give one of: {expected}.",
            )
        return ImportResult(tool=chosen.name if chosen else None, tool_version=None, findings=findings)
    if len(by_importer) > 1:
        findings.error(
            "import-mixed-tools",
            f"The files are outputs of several tools ({', '.join(sorted(by_importer))}); only "
            f"{sorted(by_importer)[0]} is read.",
            fix="Import one tool's output at a time, or pass --tool NAME.",
        )
    name = sorted(by_importer)[0]
    reader = next(candidate for candidate in kinds.importers() if candidate.name == name)
    run = reader.read(by_importer[name], findings=findings, limits=limits)
    result = ImportResult(tool=name, tool_version=run.tool_version if run else None, findings=findings)
    if run is None:
        return result
    largest: float | None = None
    for point in run.points:
        _bound_point(point, findings)
        row, point_largest = _compare_point(point, findings, rel_tol=rel_tol, slo=slo)
        if point_largest is not None:
            largest = point_largest if largest is None else max(largest, point_largest)
        result.points.append(row)
    result.points.sort(key=lambda p: (p["concurrency"] is None, p["concurrency"] or 0, p["label"], p["file"]))
    result.max_relative_difference = largest
    return result


MAX_CONCURRENCY = 10**6
MAX_DURATION_S = 1e9
MAX_FIGURE = 1e18


def _is_number(value: Any, bound: float) -> bool:
    return (
        not isinstance(value, bool) and isinstance(value, int | float) and abs(value) <= bound
    )  # NaN fails too


def _bound_point(point: kinds.ImportedPoint, findings: Findings) -> None:
    """Every number of an imported point is hostile until checked: the concurrency, the window, each figure and
    each request record must be a number of the right type in range. What is not is left out, with an
    `import-number-out-of-range` or `import-record-out-of-range` finding naming the file and the field."""

    def refuse(field_name: str, value: Any) -> None:
        findings.error(
            "import-number-out-of-range",
            f"{point.label}: {field_name} is {brief_value(value)}, not a number in range; it was left out.",
            file=point.file,
            pointer=field_name,
            fix="Import the files exactly as the tool wrote them.",
        )

    concurrency = point.concurrency
    if concurrency is not None and not (
        isinstance(concurrency, int)
        and not isinstance(concurrency, bool)
        and 0 < concurrency <= MAX_CONCURRENCY
    ):
        refuse("concurrency", concurrency)
        point.concurrency = None
    if point.duration_s is not None and not (
        _is_number(point.duration_s, MAX_DURATION_S) and point.duration_s > 0
    ):
        refuse("duration_s", point.duration_s)
        point.duration_s = None
    for side, figures in (("reported", point.reported), ("recomputed", point.recomputed)):
        for key, value in list(figures.items()):
            if not _is_number(value, MAX_FIGURE):
                refuse(f"{side} {key}", value)
                del figures[key]
    kept, refused, first = [], 0, None
    for index, record in enumerate(point.requests):
        problem = record_problem(record)
        if problem is None:
            kept.append(record)
            continue
        refused += 1
        first = first or f"request {index + 1}: {problem}"
    if refused:
        findings.error(
            "import-record-out-of-range",
            f"{point.label}: {refused} of {len(point.requests)} request records hold a number out of range or of "
            f"the wrong type (first: {first}); they were left out.",
            file=point.file,
            fix="Import the files exactly as the tool wrote them.",
        )
        point.requests = kept


def _compare_point(
    point: kinds.ImportedPoint, findings: Findings, *, rel_tol: float, slo: Slo
) -> tuple[dict, float | None]:
    """One imported point: the tool's figures against those recomputed from its per-request records, and the
    portal's own metrics; its row and its largest relative difference."""
    largest: float | None = None
    where = point.label
    if not point.requests:
        findings.error(
            "import-no-requests",
            f"{where}: the file holds no per-request records, so nothing can be recomputed.",
            file=point.file,
            fix="Export the tool's per-request details (see docs/importers.md for the flag).",
        )
    differences: dict[str, float] = {}
    for key in FIGURES:
        if key not in point.reported or key not in point.recomputed:
            continue
        diff = relative_difference(point.reported[key], point.recomputed[key])
        if diff is None:
            continue
        differences[key] = diff
        largest = diff if largest is None else max(largest, diff)
        allowed = max(rel_tol, point.extra.get("tolerance", {}).get(key, 0.0))
        if diff > allowed:
            findings.error(
                "import-summary-mismatch",
                f"{where}: {key} is {point.reported[key]!r} in the tool's summary but "
                f"{point.recomputed[key]!r} from its per-request records (relative difference {diff:.3g}).",
                file=point.file,
                fix="Import the files exactly as the tool wrote them; an edited summary or trimmed request "
                "list no longer agrees with itself.",
            )
    row = {
        "concurrency": point.concurrency,
        "label": point.label,
        "file": point.file,
        "reported": {k: point.reported[k] for k in FIGURES if k in point.reported},
        "recomputed": {k: point.recomputed[k] for k in FIGURES if k in point.recomputed},
        "relative_difference": differences,
        "tolerance": {k: v for k, v in point.extra.get("tolerance", {}).items() if k in differences},
        "portal": portal_metrics(
            point.requests, duration_s=point.duration_s, concurrency=point.concurrency, slo=slo
        ),
    }
    return row, largest


def render_import_text(result: ImportResult) -> str:
    """The per-point table `portal import` prints: reported beside recomputed, then the portal's metrics."""
    lines = [f"tool: {result.tool or '-'}  version: {result.tool_version or '-'}  verdict: {result.verdict}"]
    for point in result.points:
        lines.append("")
        lines.append(f"{point['label']}  (concurrency {point['concurrency']})  {point['file']}")
        lines.append(f"  {'figure':<26}{'reported':>18}{'recomputed':>18}{'rel. diff':>12}")
        for key in FIGURES:
            if key not in point["reported"] and key not in point["recomputed"]:
                continue
            diff = point["relative_difference"].get(key)
            tolerance = point["tolerance"].get(key)
            lines.append(
                f"  {key:<26}{_fmt(point['reported'].get(key)):>18}{_fmt(point['recomputed'].get(key)):>18}"
                f"{'' if diff is None else f'{diff:.1e}':>12}"
                + ("" if tolerance is None else f"  (tool's precision: {tolerance:.0e})")
            )
        portal = point["portal"]
        lines.append(
            "  portal: system_tps {}  tps_per_user {}  ttft_p90_ms {}  goodput {} req/s  attainment {} "
            "(SLO TTFT <= {} ms, TPOT <= {} ms)".format(
                _fmt(portal["system_tps"]),
                _fmt(portal["tps_per_user"]),
                _fmt(portal["ttft_p90_ms"]),
                _fmt(portal["goodput"]),
                _fmt(portal["attainment"]),
                _fmt(portal["slo_ttft_ms"]),
                _fmt(portal["slo_tpot_ms"]),
            )
        )
    if result.max_relative_difference is not None:
        lines.append("")
        lines.append(
            f"largest relative difference, reported vs recomputed: {result.max_relative_difference:.3g}"
        )
    if result.findings:
        lines.append("")
        lines.extend(_finding_line(f) for f in result.findings)
    return "\n".join(lines) + "\n"


def _finding_line(finding: Finding) -> str:
    where = f" ({finding.file}{'' if finding.line is None else f':{finding.line}'})" if finding.file else ""
    fix = f" Fix: {finding.fix}" if finding.fix else ""
    return f"{finding.severity}: {finding.rule}: {finding.message}{where}{fix}"


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool) or isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)
