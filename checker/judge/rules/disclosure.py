"""Disclosure: point.yaml vocabulary and completeness, the system description, model name, seeds,
warmup and the steady-state block (drafters are checker.judge.rules.drafters)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from checker.judge.rules.common import (
    COHORT_RE,
    count,
    dig,
    hashable,
    short,
)
from checker.judge.rules.state import Point, RuleRun, voting_points
from checker.recompute.numbers import finite

MAX_CONCURRENCY = 10**7  # far above any real system; keeps region arithmetic in float range
BUILDER_KEYS = ("shared_src", "shared_docs")
_SEED_FIELDS = {  # point.yaml runtime_settings.runtime name -> config.yaml settings.runtime name
    "scheduler_rng_seed": "scheduler_random_seed",
    "sample_index_rng_seed": "dataloader_random_seed",
}


def check_point_disclosure(run: RuleRun, points: list[Point]) -> None:
    required = run.ruleset.get("disclosure", "point_required", default=[]) or []
    offline_values = run.ruleset.get("offline", "values", default=[]) or []
    declarable = run.ruleset.get("regions", "declarable", default=[]) or []
    for point in points:
        if not point.yaml_ok:
            continue
        point_yaml, file = point.yaml, point.file("point.yaml")
        # The official bundle builder writes the bundle-internal paths; a run archive carries its
        # own src/ and documentation/ instead, and the portal assembles the bundle itself.
        supplied = BUILDER_KEYS if point.input.source != "bundle" else ()
        missing = [k for k in required if point_yaml.get(k) in (None, "") and k not in supplied]
        if missing:
            run.findings.error(
                "point-disclosure-complete",
                f"r{point.concurrency}: point.yaml lacks {', '.join(missing)}.",
                file=file,
                point=point.key,
                fix="Fill every disclosure field of point.yaml.",
            )
        declared_concurrency = point_yaml.get("concurrency")
        folder_concurrency = point.folder_concurrency
        if (
            folder_concurrency is not None
            and declared_concurrency is not None
            and declared_concurrency != folder_concurrency
        ):
            # The official checker's rule: the declared concurrency wins (it decides the region), and
            # the folder name is only flagged, so nothing downstream reports the same problem again.
            run.findings.warning(
                "point-dirname-concurrency",
                f"{point.folder_name}/: directory concurrency {folder_concurrency} ≠ declared "
                f"{short(declared_concurrency)}",
                file=file,
                point=point.key,
                pointer="/concurrency",
                fix=f"Rename the directory to r{short(declared_concurrency)}, or correct concurrency in point.yaml.",
            )
        offline = point_yaml.get("offline")
        if offline is not None and offline not in offline_values:
            run.findings.error(
                "offline-declared",
                f"r{point.concurrency}: offline {short(offline)} is not one of {', '.join(offline_values)}.",
                file=file,
                point=point.key,
                pointer="/offline",
            )
        region = point_yaml.get("region")
        if region is not None and region not in declarable:
            run.findings.error(
                "region-declared",
                f"r{point.concurrency}: region {short(region)} is not one of {', '.join(declarable)}.",
                file=file,
                point=point.key,
                pointer="/region",
            )
        cohort = point_yaml.get("target_cohort")
        if cohort is not None and not (isinstance(cohort, str) and COHORT_RE.fullmatch(cohort)):
            run.findings.error(
                "target-cohort",
                f"r{point.concurrency}: target_cohort {short(cohort)} is not YYYY-MM-C0 or YYYY-MM-C1.",
                file=file,
                point=point.key,
                pointer="/target_cohort",
            )
        if run.layout.root is not None:
            for key in BUILDER_KEYS:
                value = point_yaml.get(key)
                if value is None:
                    continue
                if not _resolves(run, value):
                    run.findings.error(
                        "shared-path-resolution",
                        f"r{point.concurrency}: {key} {short(value)} does not name a folder of the submission.",
                        file=file,
                        point=point.key,
                        pointer=f"/{key}",
                    )


def _resolves(run: RuleRun, value: Any) -> bool:
    if (
        not isinstance(value, str)
        or not value
        or len(value) > 512
        or value.startswith(("/", "\\"))
        or "\x00" in value
    ):
        return False
    parts = Path(value).parts
    if ".." in parts:
        return False
    root = run.layout.root
    if root is None:  # only bundles have shared folders; the caller checks this first
        return False
    try:
        return (root / value).is_dir()
    except (OSError, ValueError):
        return False


def check_system_description(run: RuleRun, points: list[Point], where: str) -> None:
    per_point = set(run.ruleset.get("disclosure", "system_desc_per_point", default=[]) or [])
    present = [(point, point.system_description) for point in points if point.system_description is not None]
    if not present:
        return
    reference, reference_description = present[0]
    reference_identity = {k: v for k, v in reference_description.items() if k not in per_point}
    bad = 0
    for point, described in present[1:]:
        identity = {k: v for k, v in described.items() if k not in per_point}
        if identity != reference_identity:
            bad += 1
            differing = sorted(
                k
                for k in set(identity) | set(reference_identity)
                if identity.get(k) != reference_identity.get(k)
            )
            run.findings.error(
                "system-description-consistency",
                f"r{point.concurrency}: system_desc.json differs from r{reference.concurrency}'s in {', '.join(differing[:10])}"
                + (" ..." if len(differing) > 10 else ""),
                file=point.file("system_desc.json"),
                point=point.key,
                fix="Every point of a curve must describe the same system; only per-point fields "
                "(parallelism, batch, tps_utilization) may differ.",
            )
    if not bad:
        run.findings.info(
            "system-description-consistency",
            f"{len(present)} point(s) agree on the system description",
            file=where,
        )


def check_model_name_and_c_max(run: RuleRun, model: str, points: list[Point], where: str) -> int | None:
    check_model_and_dataset(run, model, points, where)
    return check_c_max(run, points, where)


def check_model_and_dataset(run: RuleRun, model: str, points: list[Point], where: str) -> None:
    """model-name-valid and the curve's consistency: one model_name, matching its folder, and one dataset."""
    names: dict[str, Point] = {}
    for point in points:
        name = point.yaml.get("model_name")
        if name is not None:
            names.setdefault(name if isinstance(name, str) else short(name), point)
    for name, point in names.items():
        if name in run.ruleset.models:
            run.findings.info(
                "model-name-valid",
                f"model_name {name!r} is an allowed model",
                file=point.file("point.yaml"),
                point=point.key,
            )
        else:
            run.findings.error(
                "model-name-valid",
                f"model_name {short(name)} is not a benchmark model of {run.ruleset.name} "
                f"({', '.join(run.ruleset.models)}).",
                file=point.file("point.yaml"),
                point=point.key,
                pointer="/model_name",
                fix="Use the canonical model name from the ruleset.",
            )
    if len(names) > 1:
        run.findings.error(
            "config-consistency-model",
            f"Points disagree on model_name: {', '.join(sorted(names))}.",
            file=where,
        )
    elif names and next(iter(names)) != model:
        run.findings.error(
            "model-name-consistency",
            f"Folder {model!r} does not match model_name {next(iter(names))!r}.",
            file=where,
            fix="Name results/<system>/<model_name>/ after point.yaml model_name.",
        )
    datasets = {
        hashable(point.yaml.get("dataset"))
        for point in points
        if point.yaml_ok and point.offline != "dedicated"
    }
    datasets.discard(None)
    if len(datasets) > 1:
        run.findings.error(
            "config-consistency-dataset",
            f"Points disagree on dataset: {', '.join(sorted(map(short, datasets)))}.",
            file=where,
        )


def check_c_max(run: RuleRun, points: list[Point], where: str) -> int | None:
    """C_max: system_desc.json max_supported_concurrency, cross-checked against every point.yaml."""
    c_max = None
    for point in points:
        if point.system_description is None:
            continue
        raw = point.system_description.get("max_supported_concurrency")
        value = count(raw)
        if value is None or value == 0 or value > MAX_CONCURRENCY:
            run.findings.error(
                "max-concurrency-declared",
                f"r{point.concurrency}: system_desc.json max_supported_concurrency {short(raw)} is not a positive integer.",
                file=point.file("system_desc.json"),
                point=point.key,
                pointer="/max_supported_concurrency",
            )
            continue
        c_max = c_max or value
        break
    for point in points:
        raw = point.yaml.get("max_supported_concurrency")
        if raw is None or c_max is None or not point.yaml_ok:
            continue
        if raw != c_max or isinstance(raw, bool):
            run.findings.error(
                "max-concurrency-declared",
                f"r{point.concurrency}: point.yaml max_supported_concurrency {short(raw)} differs from system_desc.json's {c_max}.",
                file=point.file("point.yaml"),
                point=point.key,
                pointer="/max_supported_concurrency",
                fix="Declare the same maximum supported concurrency in point.yaml and system_desc.json.",
            )
    if c_max is not None:
        fixed = [point.concurrency for point in points if point.offline != "dedicated"]
        top = max(fixed) if fixed else None
        note = "" if top is None or top >= c_max else f"; the highest measured point is r{top}"
        run.findings.info(
            "max-concurrency-declared", f"max_supported_concurrency = {c_max}{note}", file=where
        )
    return c_max


def check_seeds(run: RuleRun, points: list[Point], where: str) -> None:
    declared = {
        hashable(point.yaml.get("seed_set")) for point in points if point.yaml.get("seed_set") is not None
    }
    if len(declared) > 1:
        run.findings.error(
            "seed-set-consistency",
            f"Points bind different seed sets: {', '.join(sorted(map(short, declared)))}.",
            file=where,
            fix="Use one published seed set for every point.",
        )
    elif declared:
        run.findings.info(
            "seed-set-consistency", f"All points bind seed set {short(next(iter(declared)))}", file=where
        )
    for point in points:
        set_id = point.yaml.get("seed_set")
        if set_id is None:
            if point.yaml_ok:
                _check_legacy_seeds(run, point)
            continue
        file = point.file("point.yaml")
        published = run.ruleset.seed_sets.get(set_id) if isinstance(set_id, str) else None
        if published is None:
            run.findings.error(
                "seed-set-membership",
                f"r{point.concurrency}: seed_set {short(set_id)} is not a published set "
                f"({', '.join(run.ruleset.seed_sets) or 'none'}).",
                file=file,
                point=point.key,
                pointer="/seed_set",
            )
            continue
        runtime = dig(point.yaml, "runtime_settings", "runtime")
        runtime = runtime if isinstance(runtime, dict) else {}
        mismatched = []
        for name, expected in published.seeds.items():
            value = runtime.get(name)
            if value is None and name in _SEED_FIELDS:  # v0.7 spellings
                value = runtime.get(_SEED_FIELDS[name])
            if value != expected or isinstance(value, bool):
                mismatched.append(f"point.yaml {name}={short(value)} (expected {expected})")
        # What the client actually ran: config.yaml, not only the declaration.
        if point.config is not None:
            cfg_runtime = dig(point.config, "settings", "runtime")
            cfg_runtime = cfg_runtime if isinstance(cfg_runtime, dict) else {}
            for name, cfg_name in _SEED_FIELDS.items():
                value = cfg_runtime.get(cfg_name)
                if value != published.seeds[name] or isinstance(value, bool):
                    mismatched.append(
                        f"config.yaml settings.runtime.{cfg_name}={short(value)} "
                        f"(expected {published.seeds[name]})"
                    )
            value = dig(point.config, "model_params", "seed")
            if value is not None and value != published.seeds["model_seed"]:
                mismatched.append(
                    f"config.yaml model_params.seed={short(value)} (expected {published.seeds['model_seed']})"
                )
        if mismatched:
            run.findings.error(
                "seed-runtime-match",
                f"r{point.concurrency}: seeds differ from seed set {published.id}: " + "; ".join(mismatched),
                file=file,
                point=point.key,
                fix=f"Run the client with the seeds of published set {published.id}.",
            )
        cohort = point.yaml.get("target_cohort")
        if (
            isinstance(cohort, str)
            and published.adoption_cohorts
            and cohort not in published.adoption_cohorts
        ):
            run.findings.error(
                "seed-set-adoption",
                f"r{point.concurrency}: seed set {published.id} may not be adopted for cohort {cohort} "
                f"(allowed: {', '.join(published.adoption_cohorts)}).",
                file=file,
                point=point.key,
            )


def _check_legacy_seeds(run: RuleRun, point: Point) -> None:
    """No seed set: v0.7 fixed every seed at 42, v1.0 binds a published set; 42 is a warning, anything else an error."""
    runtime = dig(point.yaml, "runtime_settings", "runtime")
    runtime = runtime if isinstance(runtime, dict) else {}
    legacy = run.ruleset.get("seeds", "legacy_value", default=42)
    for name, old_name in _SEED_FIELDS.items():
        value = runtime.get(name, runtime.get(old_name))
        field = f"runtime_settings.runtime.{name}"
        if value == legacy and not isinstance(value, bool):
            run.findings.warning(
                "seed-config-legacy",
                f"Point {point.concurrency}: {field} = {legacy} with no seed_set declared; v1.0 binds seeds to a "
                "published set (section 4.6)",
                file=point.file("point.yaml"),
                point=point.key,
                pointer=f"/runtime_settings/runtime/{name}",
                fix="Declare the seed_set the seeds come from.",
            )
        else:
            run.findings.error(
                "seed-config-legacy",
                f"Point {point.concurrency}: {field} = {short(value)}; v0.7 required {legacy} and v1.0 requires a "
                "declared seed_set (section 4.6); neither is satisfied",
                file=point.file("point.yaml"),
                point=point.key,
                pointer=f"/runtime_settings/runtime/{name}",
                fix="Declare the published seed_set whose seeds the client ran with.",
            )


def check_warmup(run: RuleRun, point: Point) -> None:
    if not point.yaml_ok:
        return
    file = point.file("point.yaml")
    warmup = point.yaml.get("warmup")
    if not isinstance(warmup, dict):
        run.findings.error(
            "warmup-present",
            f"Point {point.concurrency}: no warmup declaration.",
            file=file,
            point=point.key,
            fix="Declare the warmup (duration_s, requests_issued, requests_completed, data_source, "
            "concurrency) in point.yaml.",
        )
        return
    issued = count(warmup.get("requests_issued"))
    problems = []
    for key in ("requests_issued", "requests_completed", "concurrency"):
        if count(warmup.get(key)) is None:
            problems.append(f"{key} {short(warmup.get(key))} is not a non-negative integer")
    duration = finite(warmup.get("duration_s"))
    max_duration_s = float(run.ruleset.get("warmup", "max_duration_s", default=86400))
    if duration is None or not 0 <= duration <= max_duration_s:
        problems.append(f"duration_s {short(warmup.get('duration_s'))} is not 0..{max_duration_s:g} seconds")
    if problems:
        run.findings.error(
            "warmup-present",
            f"Point {point.concurrency}: warmup declaration invalid: " + "; ".join(problems),
            file=file,
            point=point.key,
            pointer="/warmup",
        )
    if dig(point.yaml, "runtime_settings", "warmup", "salt") is True:
        run.findings.warning(
            "warmup-salt",
            f"Point {point.concurrency}: warmup salt is enabled",
            file=file,
            point=point.key,
            pointer="/runtime_settings/warmup/salt",
            fix="Warm up with the unsalted performance prompts, or explain the salt to reviewers.",
        )
    disabled = not duration and not issued
    retained = warmup.get("logs_retained")
    if not disabled and retained is not True:
        run.findings.warning(
            "warmup-logs-retained",
            f"Point {point.concurrency}: warmup logs not declared retained.",
            file=file,
            point=point.key,
            pointer="/warmup/logs_retained",
            fix="Keep the warmup requests in events.jsonl and set warmup.logs_retained: true.",
        )
    # The raw log's warmup: sample.issued lines before the first start_performance_tracking.
    logged = count(dig(point.result.recomputed, "warmup", "issued"))
    if logged is not None and issued is not None and logged != issued:
        run.findings.warning(
            "warmup-log-mismatch",
            f"r{point.concurrency}: point.yaml declares {issued} warmup requests issued, but events.jsonl issues "
            f"{logged} before start_performance_tracking.",
            file=file,
            point=point.key,
            pointer="/warmup/requests_issued",
            fix=f"Declare warmup.requests_issued: {logged}, the warmup the client actually ran.",
        )


def check_steady_state(run: RuleRun, point: Point) -> None:
    if not point.yaml_ok or "steady_state" not in point.yaml:
        return
    file = point.file("point.yaml")
    block = point.yaml.get("steady_state")
    if not isinstance(block, dict):
        run.findings.error(
            "steady-state-valid",
            f"r{point.concurrency}: steady_state must be a mapping (status, verdict, window, "
            f"state), got {short(block)}.",
            file=file,
            point=point.key,
            pointer="/steady_state",
        )
        return
    spec = run.ruleset.get("steady_state", default={}) or {}
    statuses, verdicts = list(spec.get("statuses") or []), list(spec.get("verdicts") or [])
    gating = list(spec.get("gating_states") or [])
    status, verdict = block.get("status"), block.get("verdict")
    declared_state = block.get("state")
    state: dict = declared_state if isinstance(declared_state, dict) else {}
    bad = []
    if status is not None and status not in statuses:
        bad.append(f"status {short(status)} (expected one of {', '.join(statuses)})")
    if verdict is not None and verdict not in verdicts:
        bad.append(f"verdict {short(verdict)} (expected one of {', '.join(verdicts)})")
    if block.get("state") is not None and not isinstance(block.get("state"), dict):
        bad.append("state must map gating metrics to their states")
    for metric, value in sorted(state.items(), key=lambda kv: str(kv[0])):
        if value not in gating:
            bad.append(f"state[{metric}] {short(value)} (expected one of {', '.join(gating)})")
    if bad:
        run.findings.error(
            "steady-state-valid",
            f"r{point.concurrency}: " + "; ".join(bad),
            file=file,
            point=point.key,
            pointer="/steady_state",
            fix="Report the steady-state block with the section 4.4 vocabulary.",
        )
    else:
        run.findings.info(
            "steady-state-valid",
            f"r{point.concurrency}: steady_state status={status!r} verdict={verdict!r}",
            file=file,
            point=point.key,
        )
    if status is None:
        return
    check_steady_state_consistency(run, point, block, status, state, spec)


def check_steady_state_consistency(
    run: RuleRun, point: Point, block: dict, status: Any, state: dict, spec: dict
) -> None:
    """steady-state-consistency: the declared status fits its window's super-passes and the gating states."""
    file = point.file("point.yaml")
    official, min_trend_n = spec.get("official_status", "windowable"), int(spec.get("min_trend_n", 4))
    declared_window = block.get("window")
    window: dict = declared_window if isinstance(declared_window, dict) else {}
    start: Any = window.get("super_pass_start")
    end: Any = window.get("super_pass_end")
    spans = end - start + 1 if finite(start) is not None and finite(end) is not None else None
    problems = []
    if status == official:
        if spans is not None and spans < min_trend_n:
            problems.append(
                f"status {official!r} over {spans:g} super-pass(es); section 4.4 needs \u2265 {min_trend_n}"
            )
        drifting = sorted(str(k) for k, v in state.items() if isinstance(v, str) and v.startswith("Drifting"))
        if drifting:
            problems.append(
                f"status {official!r} with drifting gating metric(s): {', '.join(drifting)}; "
                "every one must be a Plateau"
            )
    elif status == "insufficient_passes" and spans is not None and spans >= min_trend_n:
        problems.append(
            f"status 'insufficient_passes' over {spans:g} super-pass(es), which meets the "
            f"\u2265 {min_trend_n} floor"
        )
    if problems:
        run.findings.error(
            "steady-state-consistency",
            f"r{point.concurrency}: " + "; ".join(problems),
            file=file,
            point=point.key,
            pointer="/steady_state/status",
            fix="Report the status the detector gives for the window (section 4.4 status table).",
        )
    else:
        run.findings.info(
            "steady-state-consistency",
            f"r{point.concurrency}: steady_state status {status!r} consistent with the reported window",
            file=file,
            point=point.key,
        )


def check_benchmark_type(run: RuleRun, points: list[Point], where: str) -> None:
    patterns = {short(dig(point.yaml, "runtime_settings", "load_pattern")) for point in voting_points(points)}
    if len(patterns) > 1:
        run.findings.error(
            "benchmark-type-consistency",
            f"Points disagree on runtime_settings.load_pattern ({', '.join(sorted(patterns))}); one result "
            "is a single benchmark.",
            file=where,
            fix="Run every point of the curve with the same load pattern (a dedicated Offline run excepted).",
        )
