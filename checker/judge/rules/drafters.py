"""Drafters (section 2.9.4): speculative decoding only with an approved drafter of the benchmark, declared
by its checksums, and used no earlier than the rule set's lead time after its approval."""

from __future__ import annotations

from checker.judge.rules.common import cohort_after, cohort_key, cohort_name, short
from checker.judge.rules.state import Point, RuleRun


def _drafter_matches(entry: dict, declared: dict) -> bool:
    """An approved entry is identified by its weight checksum, or by its target checksum plus configuration."""
    if entry.get("weight_checksum") is not None:
        return declared.get("weight_checksum") == entry["weight_checksum"]
    if entry.get("target_checksum") is not None:
        return (
            declared.get("target_checksum") == entry["target_checksum"]
            and bool(entry.get("configuration"))
            and declared.get("configuration") == entry["configuration"]
        )
    return False


def check_drafters(run: RuleRun, model: str, points: list[Point], where: str) -> None:
    speculative = [point for point in points if point.yaml_ok and point.yaml.get("speculative_decoding")]
    if not speculative:
        return
    benchmark = next(
        (
            point.yaml["model_name"]
            for point in points
            if isinstance(point.yaml.get("model_name"), str) and point.yaml.get("model_name")
        ),
        model,
    )
    spec = run.ruleset.get("drafters", default={}) or {}
    lead = int(spec.get("approval_lead_cohorts", 2))
    approved = [
        candidate
        for candidate in spec.get("approved") or []
        if isinstance(candidate, dict) and candidate.get("benchmark") == benchmark
    ]

    for point in speculative:
        file = point.file("point.yaml")
        declared = point.yaml["speculative_decoding"]
        declared = declared if isinstance(declared, dict) else {}
        if not approved:
            run.findings.error(
                "approved-drafter",
                f"Point {point.concurrency} uses speculative decoding, but no drafter is approved "
                f"for {benchmark!r}; section 2.9.4 disallows speculative decoding for a benchmark with no "
                "approved drafter.",
                file=file,
                point=point.key,
                pointer="/speculative_decoding",
                fix="Run without speculative decoding, or wait until a drafter is approved.",
            )
            continue
        entry = next((candidate for candidate in approved if _drafter_matches(candidate, declared)), None)
        if entry is None:
            run.findings.error(
                "approved-drafter",
                f"Point {point.concurrency}: declared drafter matches no approved entry for "
                f"{benchmark!r}; an entry is identified by weight checksum, or by target checksum plus "
                "configuration.",
                file=file,
                point=point.key,
                pointer="/speculative_decoding",
                fix="Declare weight_checksum (or target_checksum and configuration) of an approved drafter.",
            )
            continue
        run.findings.info(
            "approved-drafter",
            f"Point {point.concurrency}: drafter matches an approved entry "
            f"({entry.get('model_id') or entry.get('target_checksum')})",
            file=file,
            point=point.key,
        )
        check_drafter_lead_time(run, point, entry, lead)


def check_drafter_lead_time(run: RuleRun, point: Point, entry: dict, lead: int) -> None:
    """drafter-approval-lead-time: the target cohort is at least `lead` cohorts after the drafter's approval."""
    file = point.file("point.yaml")
    target, approved_in = (
        cohort_key(point.yaml.get("target_cohort")),
        cohort_key(entry.get("approved_cohort")),
    )
    if target is None or approved_in is None:
        run.findings.warning(
            "drafter-approval-lead-time",
            f"Point {point.concurrency}: lead time unevaluable \u2014 "
            f"target_cohort={short(point.yaml.get('target_cohort'))}, "
            f"approved_cohort={short(entry.get('approved_cohort'))}.",
            file=file,
            point=point.key,
        )
        return
    earliest = cohort_after(approved_in, lead)
    if target < earliest:
        run.findings.error(
            "drafter-approval-lead-time",
            f"Point {point.concurrency}: drafter approved in {cohort_name(approved_in)}, so the earliest usable "
            f"target_cohort is {cohort_name(earliest)} ({lead} cohorts later); this submission "
            f"targets {cohort_name(target)}.",
            file=file,
            point=point.key,
            pointer="/target_cohort",
            fix=f"Target cohort {cohort_name(earliest)} or later.",
        )
    else:
        run.findings.info(
            "drafter-approval-lead-time",
            f"Point {point.concurrency}: target_cohort {cohort_name(target)} \u2265 "
            f"earliest usable {cohort_name(earliest)}",
            file=file,
            point=point.key,
        )
