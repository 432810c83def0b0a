"""Load pattern: C_min and the regions, point count and Offline, the pattern and streaming the client
ran, and each point's duration and query count."""

from __future__ import annotations

from checker.judge.rules.common import count, dig, short
from checker.judge.rules.state import Point, RuleRun, curve_is_agentic
from checker.recompute.numbers import finite
from checker.recompute.regions import RegionError, Regions, compute_regions


def check_c_min_override(run: RuleRun, points: list[Point], where: str) -> tuple[int | None, bool]:
    """The curve's declared C_min, and whether the region rules may run (False after an error)."""
    if not any(
        point.system_description is not None and "c_min_override" in point.system_description
        for point in points
    ):
        return None, True
    ultra = run.ruleset.ultra_low_max
    values: set[int] = set()
    ok = True
    for point in points:
        file = point.file("system_desc.json")
        if point.system_description is None or "c_min_override" not in point.system_description:
            run.findings.error(
                "c-min-override",
                f"r{point.concurrency}: no c_min_override; every point on a curve must declare "
                "the same c_min_override or all must omit it.",
                file=file,
                point=point.key,
                pointer="/c_min_override",
                fix="Declare the same c_min_override in every point.",
            )
            ok = False
            continue
        value = point.system_description["c_min_override"]
        if type(value) is not int or not 1 <= value <= ultra:
            run.findings.error(
                "c-min-override",
                f"r{point.concurrency}: c_min_override must be a JSON integer in [1,{ultra}], got {short(value)}.",
                file=file,
                point=point.key,
                pointer="/c_min_override",
            )
            ok = False
            continue
        values.add(value)
    if len(values) > 1:
        run.findings.error(
            "c-min-override",
            f"Conflicting c_min_override declarations on this curve: {sorted(values)}.",
            file=where,
            fix="Declare one c_min_override for the whole curve.",
        )
        ok = False
    if not ok or not values:
        return None, False
    return values.pop(), True


def check_regions(
    run: RuleRun, points: list[Point], c_max: int | None, where: str, *, override: int | None = None
) -> Regions | None:
    if c_max is None:
        run.findings.warning(
            "region-basis",
            "No readable max_supported_concurrency, so region boundaries cannot be "
            "computed and region rules were skipped.",
            file=where,
            fix="Declare max_supported_concurrency in every point's system_desc.json.",
        )
        return None
    fixed = [point.concurrency for point in points if point.offline != "dedicated"] or [
        point.concurrency for point in points
    ]
    ultra = run.ruleset.ultra_low_max
    c_min = override if override is not None else min(min(fixed), ultra)
    if override is not None and override not in {
        point.concurrency for point in points if point.offline != "dedicated"
    }:
        run.findings.error(
            "c-min-override",
            f"c_min_override = {override} must match a submitted concurrency point on this curve.",
            file=where,
            fix=f"Measure a point at concurrency {override} or drop c_min_override.",
        )
        return None
    try:
        regions = compute_regions(
            c_max,
            c_min,
            ultra_low_max=ultra,
            margin_fraction=run.ruleset.margin_fraction,
            c_min_overridden=override is not None,
        )
    except RegionError as exc:
        run.findings.error(
            "region-computation",
            f"Region boundaries cannot be computed: {exc}.",
            file=where,
            fix=f"max_supported_concurrency must exceed {ultra}.",
        )
        return None
    if override is not None:
        run.findings.info(
            "region-basis",
            f"C_min = {c_min} declared by c_min_override; Ultra Low Concurrency spans 1\u2013{c_min}",
            file=where,
        )
    else:
        run.findings.info(
            "region-basis", f"C_min = {c_min} derived from all {len(points)} points", file=where
        )
    place_points_in_regions(run, points, regions, c_max)
    check_region_coverage(run, points, regions, where)
    return regions


def place_points_in_regions(run: RuleRun, points: list[Point], regions: Regions, c_max: int) -> None:
    """Each point's computed region (kept in its result), against the margin end and its declared region."""
    for point in points:
        point.result.extra["regions"] = regions.to_dict()
        if point.offline == "dedicated":
            point.region = "offline"
            point.result.extra["region"] = "offline"
            continue
        region = regions.classify(point.concurrency)
        point.region = region
        point.result.extra["region"] = region
        file = point.file("point.yaml")
        if region is None:
            run.findings.error(
                "concurrency-in-range",
                f"r{point.concurrency}: concurrency {point.concurrency} is above the margin end {regions.margin.end} "
                f"({1 + run.ruleset.margin_fraction:.2f} x C_max {c_max}).",
                file=file,
                point=point.key,
                fix="Raise max_supported_concurrency or drop the point.",
            )
            continue
        declared = point.yaml.get("region")
        # An unknown region name is also region-declared's error; the official checker reports both.
        if isinstance(declared, str) and declared != "submitters_choice":
            if declared != region:
                run.findings.warning(
                    "region-placement",
                    f"Declared region {declared!r} does not match concurrency {point.concurrency} (computed {region!r}).",
                    file=file,
                    point=point.key,
                    pointer="/region",
                    fix=f"Declare region: {region} (boundaries {regions.to_dict()}).",
                )


def check_region_coverage(run: RuleRun, points: list[Point], regions: Regions, where: str) -> None:
    """A point in Ultra Low, Low, Medium and High concurrency each (the margin counts for High where the
    rule set says so)."""
    present = [point.concurrency for point in points if point.offline != "dedicated"]
    ultra_low_points = sorted(
        concurrency for concurrency in present if regions.ultra_low.contains(concurrency)
    )
    ultra = regions.ultra_low.end
    if ultra_low_points:
        run.findings.info(
            "ultra-low-concurrency-coverage",
            f"Ultra Low Concurrency covered: {ultra_low_points} (\u2264 {ultra})",
            file=where,
        )
    else:
        run.findings.error(
            "ultra-low-concurrency-coverage",
            f"No point at concurrency 1\u2013{ultra}.",
            file=where,
            fix=f"Measure at least one point at concurrency \u2264 {ultra}.",
        )
    margin_high = bool(run.ruleset.get("regions", "margin_counts_for_high", default=False))
    for rule, label, name in (
        ("low-concurrency-coverage", "Low Concurrency", "low_concurrency"),
        ("med-concurrency-coverage", "Medium Concurrency", "med_concurrency"),
        ("high-concurrency-coverage", "High Concurrency", "high_concurrency"),
    ):
        bounds = getattr(regions, name)
        covered = sorted(
            concurrency
            for concurrency in present
            if regions.classify(concurrency) == name
            or (margin_high and name == "high_concurrency" and regions.classify(concurrency) == "margin")
        )
        if covered:
            run.findings.info(rule, f"{label} region covered: {covered} (range {bounds})", file=where)
        else:
            run.findings.error(
                rule,
                f"No point in the {label} region (range {bounds}).",
                file=where,
                fix=f"Measure at least one point at a concurrency in {bounds}.",
            )


def check_point_count_and_offline(run: RuleRun, points: list[Point], c_max: int | None, where: str) -> None:
    agentic = curve_is_agentic(points)
    declared = [point for point in points if point.offline in ("dedicated", "elected")]
    check_point_count(run, points, declared, agentic, where)
    check_offline_point(run, points, declared, agentic, c_max, where)


def check_point_count(
    run: RuleRun, points: list[Point], declared: list[Point], agentic: bool, where: str
) -> None:
    """point-count and point-cap: the curve's number of points (more are needed beside a dedicated Offline run)."""
    minimum = (
        run.ruleset.min_points_dedicated_offline
        if any(point.offline == "dedicated" for point in declared) and not agentic
        else run.ruleset.min_points
    )
    n_points = len(points)
    if n_points < minimum:
        run.findings.error(
            "point-count",
            f"{n_points} points < minimum {minimum}.",
            file=where,
            fix=f"Submit at least {minimum} load points for the curve.",
        )
    else:
        run.findings.info("point-count", f"Point count OK: {n_points}", file=where)
    if n_points > run.ruleset.max_points:
        run.findings.error("point-cap", f"{n_points} points > maximum {run.ruleset.max_points}.", file=where)


def check_offline_point(
    run: RuleRun, points: list[Point], declared: list[Point], agentic: bool, c_max: int | None, where: str
) -> None:
    """offline-point-present: exactly one Offline point (none on an agentic curve), elected at C_max or a
    dedicated run (then offline-ordering)."""
    if agentic:
        if declared:
            run.findings.error(
                "offline-point-present", "An agentic curve may not carry an Offline point.", file=where
            )
        return
    if len(declared) > 1:
        run.findings.error(
            "offline-point-present",
            f"{len(declared)} points declare Offline ({', '.join(f'r{point.concurrency}' for point in declared)}); exactly one may.",
            file=where,
        )
        return
    if not declared:
        run.findings.error(
            "offline-point-present",
            "No point declares offline: dedicated or elected.",
            file=where,
            fix="Elect the C_max point (offline: elected) or add a dedicated Offline run.",
        )
        return
    offline_point = declared[0]
    offline_point.result.extra["offline"] = offline_point.offline
    if offline_point.offline == "elected":
        if c_max is not None and offline_point.concurrency != c_max:
            run.findings.error(
                "offline-point-present",
                f"The elected Offline point r{offline_point.concurrency} is not at C_max = {c_max}.",
                file=where,
                fix="Elect the point measured at max_supported_concurrency.",
            )
            return
        run.findings.info(
            "offline-point-present", f"Offline point: r{offline_point.concurrency} (elected)", file=where
        )
        return
    run.findings.info(
        "offline-point-present", f"Offline point: r{offline_point.concurrency} (dedicated)", file=where
    )
    if c_max is None:
        return
    check_dedicated_offline(run, points, offline_point, c_max, where)


def check_dedicated_offline(
    run: RuleRun, points: list[Point], offline_point: Point, c_max: int, where: str
) -> None:
    """offline-ordering: a dedicated Offline run at or above C_max, reaching the C_max point's throughput."""
    if offline_point.concurrency < c_max:
        run.findings.warning(
            "offline-ordering",
            f"Dedicated Offline concurrency {offline_point.concurrency} < C_max {c_max}.",
            file=where,
        )
    at_c_max = next(
        (point for point in points if point.concurrency == c_max and point is not offline_point), None
    )
    offline_tps, c_max_tps = offline_point.system_tps(), at_c_max.system_tps() if at_c_max else None
    margin = float(run.ruleset.get("offline", "dedicated_tps_margin", default=0.98))
    if offline_tps is not None and c_max_tps is not None:
        floor = margin * c_max_tps
        if offline_tps < floor:
            run.findings.warning(
                "offline-ordering",
                f"Dedicated Offline system_tps {offline_tps:.3f} < {margin} x system_tps at C_max "
                f"({c_max_tps:.3f}) = {floor:.3f}.",
                file=where,
                fix=f"A dedicated Offline run must reach the C_max throughput within {1 - margin:.0%}.",
            )
        else:
            run.findings.info(
                "offline-ordering",
                f"Dedicated Offline system_tps {offline_tps:.3f} \u2265 {floor:.3f}",
                file=where,
            )


def check_load_and_streaming(run: RuleRun, point: Point) -> None:
    allowed = run.ruleset.get("load_patterns", default=[]) or []
    file = point.file("point.yaml")
    load_pattern = dig(point.yaml, "runtime_settings", "load_pattern")
    dedicated = point.offline == "dedicated"
    if point.yaml_ok and not dedicated and load_pattern is not None and load_pattern not in allowed:
        run.findings.error(
            "load-pattern",
            f"r{point.concurrency}: load pattern {short(load_pattern)} is not one of {', '.join(allowed)}.",
            file=file,
            point=point.key,
            pointer="/runtime_settings/load_pattern",
        )
    if point.config is None:
        return
    config_file = point.file("config.yaml")
    client_pattern = dig(point.config, "settings", "load_pattern", "type")
    target = dig(point.config, "settings", "load_pattern", "target_concurrency")
    if not dedicated:
        if client_pattern not in allowed:
            run.findings.error(
                "load-pattern",
                f"r{point.concurrency}: the client ran load pattern {short(client_pattern)}; "
                f"the rules allow {', '.join(allowed)} (fixed concurrency).",
                file=config_file,
                point=point.key,
                pointer="/settings/load_pattern/type",
                fix="Run the client with --load-pattern concurrency.",
            )
        elif (
            client_pattern == "concurrency"
            and target != point.concurrency
            and target != point.folder_concurrency  # a renamed folder: point-dirname-concurrency says it
        ):
            run.findings.error(
                "load-pattern",
                f"r{point.concurrency}: the client ran target_concurrency {short(target)}, not {point.concurrency}.",
                file=config_file,
                point=point.key,
                pointer="/settings/load_pattern/target_concurrency",
                fix="Place each run in the r<C> folder of the concurrency it ran at.",
            )
        streaming = dig(point.config, "model_params", "streaming")
        if streaming not in ("on", True, "true"):
            run.findings.error(
                "streaming-config",
                f"r{point.concurrency}: the client ran with streaming {short(streaming)}; "
                "the rules require streaming on.",
                file=config_file,
                point=point.key,
                pointer="/model_params/streaming",
                fix="Run the client with --streaming on.",
            )


def check_duration_and_queries(run: RuleRun, point: Point, regions: Regions | None) -> None:
    summary = point.summary
    file = point.file("result_summary.json")
    if summary is None or (point.basis == "claimed" and "result_summary.json" in point.officially_invalid):
        return
    window = dig(point.yaml, "steady_state", "window", "duration_s")
    status = dig(point.yaml, "steady_state", "status")
    official = run.ruleset.get("steady_state", "official_status", default="windowable")
    if point.yaml_ok:
        if not isinstance(point.yaml.get("steady_state"), dict):
            run.findings.warning(
                "steady-state-basis",
                f"Point {point.concurrency}: no steady_state block; metrics are whole-run, which \u00a74.4 makes "
                "the fallback rather than the official basis",
                file=file,
                point=point.key,
            )
        elif status != official:
            run.findings.warning(
                "steady-state-basis",
                f"Point {point.concurrency}: steady_state status {short(status)} is not {official!r}; "
                "the whole-run result is the official one",
                file=file,
                point=point.key,
            )
    if regions is not None and point.region is not None and point.offline != "dedicated":
        min_ms = run.ruleset.min_duration_ms(point.concurrency, agentic=point.agentic)
        if finite(window) is not None and window > 0:
            duration_ms, basis = window * 1000.0, "steady-state window"
        else:
            duration_ns = finite(summary.get("duration_ns"))
            duration_ms, basis = (None, "") if duration_ns is None else (duration_ns / 1e6, "whole-run")
        point.result.extra["min_duration_ms"] = min_duration = min_ms
        if duration_ms is not None and duration_ms < min_duration:
            # An error under an official rule set; a preview rule set (short sample runs) makes it a warning.
            run.findings.add(
                "point-duration",
                run.ruleset.duration_severity,
                f"Point {point.concurrency} ({point.region}): {basis} duration {duration_ms:.0f} ms < minimum "
                f"{min_duration} ms",
                file=file,
                point=point.key,
                fix=f"Run the point for at least {min_duration // 1000} s.",
            )
    dataset = point.yaml.get("dataset")
    if point.yaml_ok and point.offline != "dedicated":
        size = run.ruleset.datasets.get(dataset) if isinstance(dataset, str) else None
        completed = count(summary.get("n_samples_completed"))
        if size is None:
            run.findings.info(
                "min-query-count",
                f"r{point.concurrency}: dataset {short(dataset)} has no size in {run.ruleset.name}; "
                "the full-pass rule is not gated.",
                file=file,
                point=point.key,
            )
        elif completed is not None and completed < size:
            run.findings.error(
                "min-query-count",
                f"r{point.concurrency}: {completed} completed queries < one full pass of {dataset} ({size}).",
                file=file,
                point=point.key,
                fix=f"Issue at least {size} queries ({dataset}).",
            )
