"""Metric consistency: sample accounting, duration, output tokens, system_tps, tps_per_user and
tps_utilization."""

from __future__ import annotations

from checker.judge.rules.common import count, dig, percentile, short
from checker.judge.rules.state import Point, RuleRun
from checker.recompute.numbers import finite

OFFICIAL_ACCOUNTING_NOTE = (
    "The official checker 1.5.3.0 requires completed + failed == issued; the client counts failed requests "
    "inside completed, so the portal requires completed == issued and failed <= completed."
)


def check_metric_consistency(run: RuleRun, point: Point) -> None:
    file = point.file("result_summary.json")
    for label, summary in (("claimed", point.result.claimed), ("recomputed", point.result.recomputed)):
        if not isinstance(summary, dict):
            continue
        if label == "claimed" and "result_summary.json" in point.officially_invalid:
            continue  # result-file-valid reports it; the official checker judges no metric of it either
        _check_accounting(run, point, summary, label, file)
    summary = point.summary
    if summary is None:
        return
    duration = finite(summary.get("duration_ns"))
    if duration is None or duration <= 0:
        run.findings.error(
            "metric-consistency-duration",
            f"r{point.concurrency}: duration_ns {short(summary.get('duration_ns'))} is not a positive number.",
            file=file,
            point=point.key,
            pointer="/duration_ns",
        )
    total = finite(dig(summary, "output_sequence_lengths", "total"))
    if total is None or total < 0:
        run.findings.error(
            "metric-consistency-output-tokens",
            f"r{point.concurrency}: output_sequence_lengths.total {short(dig(summary, 'output_sequence_lengths', 'total'))} "
            "is not a non-negative number.",
            file=file,
            point=point.key,
            pointer="/output_sequence_lengths/total",
        )
    derived_tps = point.system_tps()
    if derived_tps is not None:
        check_stored_system_tps(run, point, derived_tps)
    if point.offline == "dedicated":
        return
    check_tps_per_user(run, point, summary)


def check_stored_system_tps(run: RuleRun, point: Point, derived_tps: float) -> None:
    """metric-consistency-system-tps. Stored values: the file's system_tps when present, and always the client's
    own tps (the official checker compares only when the file carries system_tps)."""
    file = point.file("result_summary.json")
    tolerance = run.ruleset.relative_tolerance
    for key in ("system_tps", "tps"):
        stored = point.stored.get(key)
        if stored is None:
            continue
        stored_n = finite(stored)
        if stored_n is None or abs(stored_n - derived_tps) > tolerance * max(abs(derived_tps), 1e-9):
            run.findings.error(
                "metric-consistency-system-tps",
                f"r{point.concurrency}: stored {key} {short(stored)} differs from the derived system_tps "
                f"{derived_tps:.4f} ({point.basis}: output tokens / duration) by more than {tolerance:.0%}.",
                file=file,
                point=point.key,
                pointer=f"/{key}",
                fix="Report the client's result_summary.json unchanged.",
            )


def check_tps_per_user(run: RuleRun, point: Point, summary: dict) -> None:
    """metric-consistency-tpot-p90 and -tps-per-user (1000 / TPOT P90), and agentic-metric-consistency."""
    file = point.file("result_summary.json")
    tolerance = run.ruleset.relative_tolerance
    tpot_p90_ms = point.tpot_p90_ms()
    if tpot_p90_ms is None or tpot_p90_ms <= 0:
        raw = percentile(summary.get("tpot"), 90.0)
        run.findings.error(
            "metric-consistency-tpot-p90",
            f"r{point.concurrency}: TPOT P90 {short(raw)} is missing, not finite or not > 0 ({point.basis}).",
            file=file,
            point=point.key,
            pointer="/tpot/percentiles/90.0",
            fix="Stream every response so TPOT can be measured.",
        )
        return
    derived_tps_per_user = 1000.0 / tpot_p90_ms
    stored = point.stored.get("tps_per_user")
    claimed_p90 = finite(percentile(dig(point.result.claimed, "tpot"), 90.0))
    candidates = []
    if stored is not None:
        candidates.append(("stored tps_per_user", stored))
    if point.basis == "recomputed" and claimed_p90 is not None and claimed_p90 > 0:
        candidates.append(("1000 / claimed TPOT P90", 1000.0 / (claimed_p90 / 1e6)))
    for label, value in candidates:
        value_n = finite(value)
        if value_n is None or abs(value_n - derived_tps_per_user) > tolerance * derived_tps_per_user:
            run.findings.error(
                "metric-consistency-tps-per-user",
                f"r{point.concurrency}: {label} {short(value)} differs from 1000 / TPOT P90 = {derived_tps_per_user:.4f} "
                f"({point.basis}) by more than {tolerance:.0%}.",
                file=file,
                point=point.key,
                fix="tps_per_user is 1000 / TPOT P90 in ms; report the client's values unchanged.",
            )
    e2e = point.stored.get("e2e_interactivity", point.stored.get("e2e_avg_interactivity"))
    if e2e is not None and finite(e2e) is None:
        run.findings.error(
            "agentic-metric-consistency",
            f"r{point.concurrency}: e2e interactivity {short(e2e)} is not a number.",
            file=file,
            point=point.key,
        )


def _check_accounting(run: RuleRun, point: Point, summary: dict, label: str, file: str) -> None:
    issued, completed, failed = (
        summary.get(k) for k in ("n_samples_issued", "n_samples_completed", "n_samples_failed")
    )
    n_issued, n_completed, n_failed = count(issued), count(completed), count(failed)
    if n_issued is None or n_completed is None or n_failed is None:
        run.findings.error(
            "metric-consistency-accounting",
            f"r{point.concurrency} ({label}): sample counts must be non-negative integers "
            f"(issued {short(issued)}, completed {short(completed)}, failed {short(failed)}).",
            file=file,
            point=point.key,
        )
        return
    if n_completed != n_issued or n_failed > n_completed:
        run.findings.error(
            "metric-consistency-accounting",
            f"r{point.concurrency} ({label}): {n_issued} issued, {n_completed} completed, {n_failed} failed; the client counts failed "
            "requests inside completed, so completed must equal issued and failed must not exceed it.",
            file=file,
            point=point.key,
            fix="Let every issued request complete (or fail) before the run ends.",
        )
    elif n_failed:
        run.findings.info(
            "metric-consistency-accounting",
            f"r{point.concurrency} ({label}): {n_issued} issued, {n_completed} completed of which {n_failed} failed: consistent. "
            + OFFICIAL_ACCOUNTING_NOTE,
            file=file,
            point=point.key,
        )


def check_tps_utilization(run: RuleRun, points: list[Point]) -> None:
    values = {point.key: point.system_tps() for point in points}
    best = max((v for v in values.values() if v is not None), default=None)
    if not best or best <= 0:
        return
    tolerance = float(run.ruleset.get("tolerances", "tps_utilization_abs", default=0.1))
    for point in points:
        tps = values[point.key]
        if tps is None:
            continue
        utilization = tps / best
        point.result.extra["tps_utilization"] = utilization
        stored = dig(point.system_description, "tps_utilization")
        if stored is None:
            continue
        stored_n = finite(stored)
        if stored_n is None or abs(stored_n - utilization) > tolerance:
            run.findings.error(
                "tps-utilization",
                f"r{point.concurrency}: tps_utilization {short(stored)} differs from system_tps / max system_tps "
                f"= {utilization:.4f} by more than {tolerance}.",
                file=point.file("system_desc.json"),
                point=point.key,
                pointer="/tps_utilization",
            )
