"""What the submitter pages show, shaped for the templates: check progress, findings by severity,
the per-point claimed-versus-recomputed table and the step chart. Reads only; no business rules."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from submissions.charts import chart_legend, step_chart_svg
from submissions.models import CheckRun, Submission
from submissions.rules_catalog import rule_catalog
from submissions.selectors import (
    check_run_curves_and_official,
    check_run_findings,
    check_run_latest,
    check_run_point_metrics,
)

SEVERITIES = [
    ("error", "Errors", "Each one fails the check: fix them and upload a new version."),
    ("warning", "Warnings", "Shown to reviewers; they do not fail the check."),
    ("info", "Passed checks and notes", "What was checked and found in order."),
]

# The per-point table: metric key, heading, how to show it. Same keys in claimed and recomputed.
POINT_METRICS = [
    ("system_tps", "System tokens/s", "float1"),
    ("tps_per_user", "Tokens/s per user", "float2"),
    ("ttft_p90_ms", "TTFT p90 (ms)", "float1"),
    ("n_samples_completed", "Completed", "int"),
    ("n_samples_failed", "Failed", "int"),
    ("duration_ns", "Duration (s)", "ns_to_s"),
]
# As the checker compares (docs/report-format.md): integers exactly, floats within this relative tolerance.
RELATIVE_TOLERANCE = 1e-9

REGION_NAMES = {
    "low_latency": "ultra-low",
    "low_concurrency": "low",
    "med_concurrency": "medium",
    "high_concurrency": "high",
    "margin": "margin",
}


def _number(value):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def format_metric(value, kind: str) -> str:
    value = _number(value)
    if value is None:
        return "—"
    if kind == "int":
        return f"{int(value):,}"
    if kind == "ns_to_s":
        return f"{value / 1e9:,.2f}"
    if kind == "float2":
        return f"{value:,.2f}"
    return f"{value:,.1f}"


def values_differ(claimed, recomputed) -> float | None:
    """The relative difference when the two values disagree beyond the checker's tolerance, else None."""
    claimed, recomputed = _number(claimed), _number(recomputed)
    if claimed is None or recomputed is None:
        return None
    if isinstance(claimed, int) and isinstance(recomputed, int):
        return (
            None
            if claimed == recomputed
            else abs(claimed - recomputed) / max(abs(claimed), abs(recomputed), 1)
        )
    scale = max(abs(claimed), abs(recomputed))
    if scale == 0:
        return None
    relative = abs(claimed - recomputed) / scale
    return relative if relative > RELATIVE_TOLERANCE else None


@dataclass
class MetricCell:
    claimed: str
    recomputed: str
    differs: bool
    relative_difference: str = ""


@dataclass
class PointRow:
    key: str
    concurrency: int
    region: str
    source: str
    has_raw_log: bool
    cells: list[MetricCell] = field(default_factory=list)
    power_kw: str = "—"
    tps_per_kw: str = "—"
    accuracy: str = ""
    error_count: int = 0

    @property
    def differs(self) -> bool:
        return any(cell.differs for cell in self.cells)


def point_rows(check_run: CheckRun, *, errors_by_point: dict[str, int] | None = None) -> list[PointRow]:
    rows = []
    for metric in check_run_point_metrics(check_run):
        claimed = metric.claimed if isinstance(metric.claimed, dict) else {}
        recomputed = metric.recomputed if isinstance(metric.recomputed, dict) else None
        extra = metric.extra if isinstance(metric.extra, dict) else {}
        row = PointRow(
            key=metric.key,
            concurrency=metric.concurrency,
            region=REGION_NAMES.get(extra.get("region"), extra.get("region") or "—"),
            source=metric.source,
            has_raw_log=recomputed is not None,
            error_count=(errors_by_point or {}).get(metric.key, 0),
        )
        for key, _heading, kind in POINT_METRICS:
            relative = values_differ(claimed.get(key), recomputed.get(key)) if recomputed else None
            row.cells.append(
                MetricCell(
                    claimed=format_metric(claimed.get(key), kind),
                    recomputed=format_metric(recomputed.get(key), kind) if recomputed else "no raw log",
                    differs=relative is not None,
                    relative_difference=f"{relative:.2%}" if relative is not None else "",
                )
            )
        power = extra.get("power") if isinstance(extra.get("power"), dict) else {}
        kw = _number(power.get("point_power_kw") or power.get("provisioned_kw"))
        if kw is not None:
            row.power_kw = f"{kw:,.2f} kW"
        per_kw = _number(power.get("system_tps_per_kw"))
        if per_kw is not None:
            row.tps_per_kw = f"{per_kw:,.1f}"
        accuracy = extra.get("accuracy") if isinstance(extra.get("accuracy"), dict) else {}
        scores = accuracy.get("scores") if isinstance(accuracy.get("scores"), dict) else {}
        if scores:
            row.accuracy = ", ".join(
                f"{name} {format_metric(value, 'float2')}" for name, value in sorted(scores.items())
            )
        rows.append(row)
    return rows


@dataclass
class FindingGroup:
    severity: str
    title: str
    help: str
    findings: list


def finding_groups(check_run: CheckRun) -> list[FindingGroup]:
    """Findings by severity (errors first), each with `documented` set when docs/ explains its rule."""
    catalog = rule_catalog()
    by_severity: dict[str, list] = {}
    for finding in check_run_findings(check_run):
        finding.documented = finding.rule in catalog
        finding.point_label = finding.point.rsplit("/", 1)[-1] if finding.point else ""
        by_severity.setdefault(finding.severity, []).append(finding)
    groups = [
        FindingGroup(sev, title, help_text, by_severity.pop(sev, [])) for sev, title, help_text in SEVERITIES
    ]
    for severity, findings in by_severity.items():  # an unknown severity is still shown, last
        groups.append(FindingGroup(severity, severity.capitalize(), "", findings))
    return groups


def check_run_is_live(check_run: CheckRun | None) -> bool:
    return check_run is not None and check_run.status in (CheckRun.Status.QUEUED, CheckRun.Status.RUNNING)


def check_section_context(submission: Submission, version) -> dict:
    """Everything the polled check section needs for one version: the latest run and, once it has
    ended, its findings, per-point table and chart."""
    check_run = check_run_latest(version)
    context = {
        "submission": submission,
        "version": version,
        "check_run": check_run,
        "live": check_run_is_live(check_run),
    }
    if check_run is None:
        return context
    total = check_run.progress_total or len(check_run.points_expected or [])
    context["progress_total"] = total
    context["progress_percent"] = int(100 * check_run.progress_done / total) if total else 0
    if context["live"]:
        return context
    groups = finding_groups(check_run)
    errors_by_point: dict[str, int] = {}
    for group in groups:
        if group.severity == "error":
            for finding in group.findings:
                if finding.point:
                    errors_by_point[finding.point] = errors_by_point.get(finding.point, 0) + 1
    curves, official = check_run_curves_and_official(check_run)
    context.update(
        {
            "official": official,
            "finding_groups": groups,
            "point_rows": point_rows(check_run, errors_by_point=errors_by_point),
            "point_metric_headings": [heading for _key, heading, _kind in POINT_METRICS],
            "chart_svg": step_chart_svg(curves),
            "chart_legend": chart_legend(curves),
            "counts": {sev: len(g.findings) for g in groups for sev in [g.severity]},
        }
    )
    return context
