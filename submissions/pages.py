"""What the submitter pages show, shaped for the templates: check progress, findings by severity,
the per-point claimed-versus-recomputed table and the step chart. Reads only; no business rules."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from django.utils.html import escape
from django.utils.safestring import mark_safe

from checker.judge.portal_rules import PORTAL_ONLY_RULES, finding_origin
from checker.recompute.regions import REGION_LABELS, region_label
from submissions.charts import chart_legend, step_chart_svg
from submissions.models import CheckRun, Submission
from submissions.rules_catalog import rule_catalog
from submissions.selectors import (
    check_run_curves_and_official,
    check_run_findings,
    check_run_latest,
    check_run_point_metrics,
    check_run_report,
)
from submissions.verdicts import verdict

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
    region: str  # the official region id (point.yaml `region`), shown with region_label beside it
    region_label: str
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

    @property
    def region_html(self) -> str:
        """The region id, free to wrap after its underscores in a narrow column (`high_<wbr>concurrency`)."""
        return mark_safe(escape(self.region).replace("_", "_<wbr>"))  # built from escaped text


def point_rows(check_run: CheckRun, *, errors_by_point: dict[str, int] | None = None) -> list[PointRow]:
    rows = []
    for metric in check_run_point_metrics(check_run):
        claimed = metric.claimed if isinstance(metric.claimed, dict) else {}
        recomputed = metric.recomputed if isinstance(metric.recomputed, dict) else None
        extra = metric.extra if isinstance(metric.extra, dict) else {}
        row = PointRow(
            key=metric.key,
            concurrency=metric.concurrency,
            region=str(extra.get("region") or "—"),
            region_label=region_label(extra.get("region")),
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
class PortalOnlyCounts:
    """Why the page's counts differ from `portal check` on the same files: what only the portal adds."""

    portal: dict[str, int]  # severity -> findings of the portal-only rules
    official: dict[str, int]  # severity -> notes of the official checker's cross-check
    local: dict[str, int]  # severity -> what `portal check` (without --official) reports
    rules: tuple[str, ...] = PORTAL_ONLY_RULES

    @property
    def differs(self) -> bool:
        return any(self.portal.values()) or any(self.official.values())

    @staticmethod
    def _say(counts: dict[str, int]) -> str:
        words = {"error": "error", "warning": "warning", "info": "note"}
        parts = [f"{n} {words.get(sev, sev)}{'s' if n != 1 else ''}" for sev, n in counts.items() if n]
        return " and ".join([", ".join(parts[:-1]), parts[-1]] if len(parts) > 1 else parts)

    @property
    def portal_text(self) -> str:
        return self._say({sev: self.portal.get(sev, 0) for sev in ("error", "warning", "info")})

    @property
    def official_text(self) -> str:
        return self._say({sev: self.official.get(sev, 0) for sev in ("error", "warning", "info")})


def portal_only_counts(groups: list[FindingGroup]) -> PortalOnlyCounts:
    portal: dict[str, int] = {}
    official: dict[str, int] = {}
    local: dict[str, int] = {}
    for group in groups:
        for finding in group.findings:
            target = {"portal": portal, "official": official}.get(finding.origin, local)
            target[finding.severity] = target.get(finding.severity, 0) + 1
    return PortalOnlyCounts(portal=portal, official=official, local=local)


def _point_order(label: str) -> tuple:
    """r2 before r16 (by concurrency), other labels after, by name."""
    digits = label[1:] if label.startswith("r") else ""
    return (0, int(digits), "") if digits.isascii() and digits.isdigit() else (1, 0, label)


@dataclass
class RuleGroup:
    """The findings of one rule within a severity: shown as one line with a count and the points, expandable."""

    rule: str
    findings: list

    @property
    def first(self):
        return self.findings[0]

    @property
    def points(self) -> list[str]:
        labels = dict.fromkeys(f.point_label for f in self.findings if getattr(f, "point_label", ""))
        return sorted(labels, key=_point_order)

    @property
    def files(self) -> int:
        return len({f.file for f in self.findings if f.file})


@dataclass
class FindingGroup:
    severity: str
    title: str
    help: str
    findings: list

    @property
    def by_rule(self) -> list[RuleGroup]:
        """The findings grouped by rule, rules in the order their first finding comes."""
        rules: dict[str, list] = {}
        for finding in self.findings:
            rules.setdefault(finding.rule, []).append(finding)
        return [RuleGroup(rule, findings) for rule, findings in rules.items()]


def finding_groups(check_run: CheckRun) -> list[FindingGroup]:
    """Findings by severity (errors first), each with `documented` set when docs/ explains its rule."""
    catalog = rule_catalog()
    by_severity: dict[str, list] = {}
    for finding in check_run_findings(check_run):
        finding.documented = finding.rule in catalog
        finding.point_label = finding.point.rsplit("/", 1)[-1] if finding.point else ""
        finding.origin = finding_origin(finding.rule)
        by_severity.setdefault(finding.severity, []).append(finding)
    groups = [
        FindingGroup(sev, title, help_text, by_severity.pop(sev, [])) for sev, title, help_text in SEVERITIES
    ]
    for severity, findings in by_severity.items():  # an unknown severity is still shown, last
        groups.append(FindingGroup(severity, severity.capitalize(), "", findings))
    return groups


def check_run_is_live(check_run: CheckRun | None) -> bool:
    return check_run is not None and check_run.in_state("unfinished")


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
    rows = point_rows(check_run, errors_by_point=errors_by_point)
    context.update(
        {
            "official": official,
            "official_verdict": verdict(check_run.status, official=official)["official"],
            "finding_groups": groups,
            "point_rows": rows,
            # The regions the table names, each official id with its readable label (REGION_LABELS order).
            "region_legend": [
                (r, label) for r, label in REGION_LABELS.items() if r in {row.region for row in rows}
            ],
            "point_metric_headings": [heading for _key, heading, _kind in POINT_METRICS],
            "chart_svg": step_chart_svg(curves),
            "chart_legend": chart_legend(curves),
            "counts": {sev: len(g.findings) for g in groups for sev in [g.severity]},
            "portal_only": portal_only_counts(groups),
        }
    )
    return context


# --- the report as a document: JSON download, printable summary, two versions compared --------------------------

FINDING_FIELDS = ("rule", "severity", "file", "line", "pointer", "point", "message", "fix")
COMPARED_METRICS = [
    ("system_tps", "System tokens/s", "float1"),
    ("tps_per_user", "Tokens/s per user", "float2"),
    ("ttft_p90_ms", "TTFT p90 (ms)", "float1"),
]


def report_document(submission: Submission, version, check_run: CheckRun, *, url: str) -> dict:
    """The portal's report of one check run (docs/report-format.md): the checker's stored report, each finding
    marked `portal_only`, and a `portal` block saying which submission, version and run it is."""
    report = check_run_report(check_run)
    findings = [
        {name: getattr(f, name) or (None if name != "message" else "") for name in FINDING_FIELDS}
        for f in check_run_findings(check_run)
    ]
    if report is None:  # a run that could not finish keeps no report: what it stored, in the same shape
        report = {
            "format": "endpoints-portal-report/1",
            "verdict": "fail" if any(f["severity"] == "error" for f in findings) else "pass",
            "checker_version": check_run.checker_version or "",
            "ruleset": check_run.ruleset or None,
            "counts": check_run.counts or {},
            "points": [],
            "curves": check_run.curves or [],
        }
    document = dict(report)
    # The run's rows are the report's findings (submissions.checks); they are read back so both always agree.
    document["findings"] = [{**f, "portal_only": f["rule"] in PORTAL_ONLY_RULES} for f in findings]
    document["portal"] = {
        "submission": submission.pk,
        "system": submission.system.name,
        "benchmark": submission.benchmark.model_id,
        "version": version.number,
        "version_sha256": version.sha256,
        "check_run": check_run.pk,
        "status": check_run.status,
        "finished_at": check_run.finished_at.isoformat() if check_run.finished_at else None,
        "url": url,
        "portal_only_rules": list(PORTAL_ONLY_RULES),
    }
    return document


def _finding_identity(finding) -> tuple:
    return (finding.rule, finding.severity, finding.point or "", finding.file or "", finding.message)


@dataclass
class ComparedPoint:
    key: str
    label: str
    region_a: str
    region_b: str
    cells: list[tuple[str, str, str]]  # (value in A, value in B, relative change)


@dataclass
class VersionComparison:
    a: object
    b: object
    run_a: CheckRun | None
    run_b: CheckRun | None
    added: list = field(default_factory=list)
    removed: list = field(default_factory=list)
    unchanged: int = 0
    points: list[ComparedPoint] = field(default_factory=list)
    headings: list[str] = field(default_factory=list)

    # Errors and warnings are listed; the notes (passed checks) are folded away under their count.
    @property
    def added_main(self) -> list:
        return [f for f in self.added if f.severity != "info"]

    @property
    def added_notes(self) -> list:
        return [f for f in self.added if f.severity == "info"]

    @property
    def removed_main(self) -> list:
        return [f for f in self.removed if f.severity != "info"]

    @property
    def removed_notes(self) -> list:
        return [f for f in self.removed if f.severity == "info"]


def _metrics_by_key(check_run: CheckRun | None) -> dict:
    if check_run is None or check_run_is_live(check_run):
        return {}
    return {metric.key: metric for metric in check_run_point_metrics(check_run)}


def _shown(metric) -> dict:
    recomputed = metric.recomputed if isinstance(metric.recomputed, dict) else None
    claimed = metric.claimed if isinstance(metric.claimed, dict) else {}
    return recomputed or claimed


def _region_of(metric) -> str:
    extra = metric.extra if metric is not None and isinstance(metric.extra, dict) else {}
    return str(extra.get("region") or "—")


def compare_versions(a, b) -> VersionComparison:
    """Version a against version b: findings b has and a had not (added), the other way (removed), and every
    load point's official metrics side by side (recomputed where the raw log was there, else claimed)."""
    run_a, run_b = check_run_latest(a), check_run_latest(b)
    comparison = VersionComparison(a=a, b=b, run_a=run_a, run_b=run_b)
    comparison.headings = [heading for _key, heading, _kind in COMPARED_METRICS]
    finished = [run for run in (run_a, run_b) if run is not None and not check_run_is_live(run)]
    if len(finished) == 2:
        before = {_finding_identity(f): f for f in check_run_findings(run_a)}
        after = {_finding_identity(f): f for f in check_run_findings(run_b)}
        for finding in [*before.values(), *after.values()]:
            finding.origin = finding_origin(finding.rule)
            finding.point_label = finding.point.rsplit("/", 1)[-1] if finding.point else ""
        comparison.added = [f for key, f in after.items() if key not in before]
        comparison.removed = [f for key, f in before.items() if key not in after]
        comparison.unchanged = len(set(before) & set(after))
    metrics_a, metrics_b = _metrics_by_key(run_a), _metrics_by_key(run_b)

    def order(key: str) -> tuple:
        head, _, tail = key.rpartition("/r")
        return (head, int(tail) if tail.isascii() and tail.isdigit() else 0)

    for key in sorted(set(metrics_a) | set(metrics_b), key=order):
        ma, mb = metrics_a.get(key), metrics_b.get(key)
        va, vb = (_shown(ma) if ma else {}), (_shown(mb) if mb else {})
        cells = []
        for metric, _heading, kind in COMPARED_METRICS:
            x, y = _number(va.get(metric)), _number(vb.get(metric))
            change = ""
            if x is not None and y is not None and x != 0 and x != y:
                change = f"{(y - x) / abs(x):+.1%}"
            cells.append(
                (
                    format_metric(x, kind) if ma else "absent",
                    format_metric(y, kind) if mb else "absent",
                    change,
                )
            )
        comparison.points.append(
            ComparedPoint(
                key=key,
                label=key.rsplit("/", 1)[-1],
                region_a=_region_of(ma),
                region_b=_region_of(mb),
                cells=cells,
            )
        )
    return comparison
