"""The readable text form of a Report, for terminals and e-mails."""

from __future__ import annotations

from checker.judge.portal_rules import PORTAL_ONLY_RULES
from checker.report import Report


def _num(value, digits: int = 2) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.{digits}f}"
    return f"{value:,}"


def _metric(block: dict | None, key: str):
    return None if not block else block.get(key)


def _target(slo: dict) -> str:
    parts = []
    if slo.get("ttft_ms") is not None:
        parts.append(f"TTFT <= {slo['ttft_ms']:g} ms")
    if slo.get("tpot_ms") is not None:
        parts.append(f"TPOT <= {slo['tpot_ms']:g} ms")
    return " and ".join(parts)


def _percent(value) -> str:
    return "-" if value is None else f"{100 * value:.1f} %"


def _slo_lines(rows: list) -> list[str]:
    """The per-request SLO table: attainment and goodput per point (failed requests count as violations)."""
    target = next((_target(slo) for _, slo in rows if slo), "")
    lines = [
        f"  SLO per request: {target} (from the raw log; failed requests count as violations)",
        f"  {'point':>5} {'tracked':>8} {'good':>8} {'attainment':>10} {'goodput req/s':>13} "
        f"{'goodput tok/s':>13} {'TTFT alone':>10} {'TPOT alone':>10}",
    ]
    for p, slo in rows:
        if slo is None:
            lines.append(f"  {'r' + str(p.concurrency):>5}  no raw log: not computed")
            continue
        lines.append(
            f"  {'r' + str(p.concurrency):>5} {_num(slo['tracked_requests']):>8} {_num(slo['good_requests']):>8} "
            f"{_percent(slo['attainment']):>10} {_num(slo['goodput_rps']):>13} {_num(slo['goodput_tps']):>13} "
            f"{_percent(slo['ttft_attainment']):>10} {_percent(slo['tpot_attainment']):>10}"
        )
    lines.append("")
    return lines


def render_text(report: Report, *, max_findings: int = 200) -> str:
    counts = report.counts()
    lines = [
        f"Verdict: {report.verdict.upper()}   "
        f"({counts['error']} errors, {counts['warning']} warnings, {counts['info']} info)",
        f"Checker {report.checker_version}, ruleset {report.ruleset or '-'}",
        "",
    ]
    _append_point_tables(lines, report)
    _append_pareto_fronts(lines, report)
    _append_official_and_portal_notes(lines, report)
    _append_findings(lines, report, max_findings)
    return "\n".join(lines) + "\n"


def _append_point_tables(lines: list[str], report: Report) -> None:
    """One table per curve: each point's claimed and recomputed figures, power, and its SLO rows."""
    by_curve: dict[tuple[str, str], list] = {}
    for p in report.points:
        by_curve.setdefault((p.system, p.model), []).append(p)
    for (system, model), points in sorted(by_curve.items()):
        lines.append(f"{system} / {model}")
        lines.append(
            f"  {'point':>5} {'region':<17} {'system_tps claimed':>19} {'recomputed':>12} {'tps/user':>9} "
            f"{'TTFT p90 ms':>11} {'issued':>7} {'done':>7} {'failed':>6} {'kW':>6} {'tps/kW':>8}"
            "  raw log"
        )
        for p in sorted(points, key=lambda p: p.concurrency):
            c, r = p.claimed, p.recomputed
            shown = r or c
            power = p.extra.get("power") if isinstance(p.extra.get("power"), dict) else {}
            measured = power.get("measured") if isinstance(power.get("measured"), dict) else {}
            region = str(p.extra.get("region") or "-")
            if p.extra.get("offline"):
                region += " (offline)"
            lines.append(
                f"  {'r' + str(p.concurrency):>5} {region[:17]:<17} {_num(_metric(c, 'system_tps')):>19} "
                f"{_num(_metric(r, 'system_tps')):>12} "
                f"{_num(_metric(shown, 'tps_per_user')):>9} {_num(_metric(shown, 'ttft_p90_ms')):>11} "
                f"{_num(_metric(shown, 'n_samples_issued')):>7} {_num(_metric(shown, 'n_samples_completed')):>7} "
                f"{_num(_metric(shown, 'n_samples_failed')):>6} {_num(power.get('point_power_kw')):>6} "
                f"{_num(power.get('system_tps_per_kw')):>8}  {'recomputed' if r else 'missing'}"
            )
            if measured:
                lines.append(
                    f"        measured power: {_num(measured.get('avg_power_w'), 0)} W average, "
                    f"{_num(measured.get('joules_per_output_token'), 3)} J/token, "
                    f"{_num(measured.get('measured_tps_per_kw'))} tokens/s/kW"
                )
        lines.append("")
        slo_rows = [(p, p.extra["slo"]) for p in points if "slo" in p.extra]
        if slo_rows:
            lines.extend(_slo_lines(sorted(slo_rows, key=lambda row: row[0].concurrency)))


def _append_pareto_fronts(lines: list[str], report: Report) -> None:
    for curve in report.curves:
        fronts = curve.get("pareto") or {}
        for x, front in fronts.items():
            keys = front.get("points") or []
            if keys:
                lines.append(
                    f"Pareto front {curve.get('system')} / {curve.get('model')} "
                    f"(system_tps vs {x}): " + ", ".join(k.rsplit("/", 1)[-1] for k in keys)
                )
    if report.curves:
        lines.append("")


def _append_official_and_portal_notes(lines: list[str], report: Report) -> None:
    """The official checker's cross-check, and what the portal's page adds to these counts."""
    official = getattr(report, "official", None)
    if isinstance(official, dict):
        if official.get("ran"):
            lines.append(
                f"Official checker {official.get('version') or ''}: {official.get('errors')} errors, "
                f"{official.get('warnings')} warnings on the same files "
                f"({'passes' if official.get('passed') else 'fails'}); disagreements are listed as "
                "official-checker-disagreement findings."
            )
        elif official.get("available") is False:
            lines.append(
                "Official checker: not installed (pip install 'endpoints-submission-cli'); no cross-check."
            )
        else:
            lines.append("Official checker: could not run on these files (see the findings).")
        lines.append("")
    # Why the portal's page can count more on the same files: what it adds that this command cannot know.
    lines.append(
        "On the portal the same files also meet the portal-only rules "
        f"({', '.join(PORTAL_ONLY_RULES)}: they need the submission, its registered system and the other submissions)"
        + ("" if isinstance(official, dict) else " and the official checker's cross-check (--official here)")
        + "; the submission page counts those apart."
    )
    lines.append("")


def _append_findings(lines: list[str], report: Report, max_findings: int) -> None:
    """Findings by severity, at most `max_findings` of them."""
    shown = 0
    for severity in ("error", "warning", "info"):
        group = [f for f in report.findings if f.severity == severity]
        if not group:
            continue
        lines.append(f"{severity.upper()}S ({len(group)})")
        for f in group:
            if shown >= max_findings:
                lines.append(f"  ... {len(report.findings) - shown} more findings in the JSON report")
                return
            where = f.file or ""
            if f.line:
                where += f":{f.line}"
            if f.pointer:
                where += f" {f.pointer}"
            lines.append(f"  [{f.rule}] {where}")
            lines.append(f"      {f.message}")
            if f.fix:
                lines.append(f"      fix: {f.fix}")
            shown += 1
        lines.append("")
