"""Power: the system_power.json descriptor per system, power per point and measured traces (engagement,
section 4.5.3, is checker.judge.rules.engagement)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from checker.judge.rules.common import count, dig, short, text
from checker.judge.rules.state import Point, RuleRun
from checker.power.provisioned import provisioned_power
from checker.power.sources import AppendixD
from checker.power.traces import (
    TraceError,
    analyse_trace,
    clock_anchor,
    load_trace,
    read_manifest,
    scan_window_ns,
)
from checker.read.loaders import load_json
from checker.recompute.numbers import finite
from checker.report import Findings


def _check_system_power_copies(
    run: RuleRun, system: str, first: Any, first_display: str, first_path: Path
) -> None:
    """Run archives carry one system_power.json each: every copy must say the same (the official
    bundle builder refuses differing copies; a check that read only the first would be blind)."""
    for point in run.points:
        path = point.input.files.get("system_power.json")
        if point.input.system != system or path is None or Path(path) == Path(first_path):
            continue
        copy = load_json(
            path, display=point.file("system_power.json"), findings=Findings(), limits=run.limits
        )
        if copy is not None and copy != first:
            keys = (
                sorted(k for k in set(first) | set(copy) if first.get(k) != copy.get(k))
                if (isinstance(first, dict) and isinstance(copy, dict))
                else []
            )
            run.findings.error(
                "system-power-consistency",
                f"r{point.concurrency}: system_power.json differs from the copy in {first_display}"
                + (f" (keys: {', '.join(keys[:8])})" if keys else "")
                + "; one system has one "
                "provisioned power.",
                file=point.file("system_power.json"),
                point=point.key,
                fix="Package every run archive of the system with the same system_power.json.",
            )


def check_system_power(run: RuleRun) -> dict[str, Any]:
    out: dict[str, Any] = {}
    systems = sorted({point.input.system for point in run.points})
    overheads = {
        k: float(v) for k, v in (run.ruleset.get("power", "overhead_fraction", default={}) or {}).items()
    }
    optional = set(run.ruleset.get("disclosure", "power_optional_divisions", default=[]) or [])
    for system in systems:
        provisioned = _system_power(run, system, overheads, optional)
        if provisioned is not None:
            out[system] = provisioned
    return out


def _system_power(run: RuleRun, system: str, overheads: dict[str, float], optional: set) -> Any:
    """One system's provisioned power from its system_power.json (None when it has none, or none usable),
    its problems reported under power-descriptor."""
    path = run.layout.system_power.get(system)
    first = next(point for point in run.points if point.input.system == system)
    if path is None:
        path = first.input.files.get("system_power.json")
    display = run.layout.displays.get(path) if path is not None else None
    display = display or (
        first.file("system_power.json") if path is not None else f"results/{system}/system_power.json"
    )
    division = text(dig(first.system_description, "division")) or text(first.yaml.get("division"))
    if path is None:
        if division and division.strip().lower() in optional:
            run.findings.info(
                "power-descriptor",
                f"{system}: no system_power.json, optional for {division}.",
                file=display,
            )
        else:
            run.findings.error(
                "power-descriptor",
                f"{system}: system_power.json is missing.",
                file=display,
                fix="Add results/<system>/system_power.json (Appendix E descriptor).",
            )
        return None
    power_descriptor = load_json(path, display=display, findings=run.findings, limits=run.limits)
    if power_descriptor is None:
        return None
    _check_system_power_copies(run, system, power_descriptor, display, path)
    provisioned = provisioned_power(
        power_descriptor,
        overheads=overheads,
        computed_tol_w=float(run.ruleset.get("power", "computed_tolerance_w", default=0.5)),
        kw_tol=float(run.ruleset.get("power", "provisioned_kw_tolerance", default=0.005)),
        defaults=AppendixD(run.ruleset.get("power", "appendix_d", default={}) or {}),
        cores_by_ensemble=_node_facts(run, system, "host_processor_core_count"),
    )
    accelerators = _node_facts(run, system, "accelerators_per_node")
    for (
        node_set
    ) in provisioned.sets:  # a published-power set takes accelerators per node from system_desc.json
        if node_set.get("accelerators_per_node") is None:
            node_set["accelerators_per_node"] = accelerators.get(node_set["ensemble"])
    _check_power_against_description(run, system, provisioned, power_descriptor, display)
    return _report_provisioned(run, system, provisioned, display)


def _check_power_against_description(
    run: RuleRun, system: str, provisioned: Any, power_descriptor: Any, display: str
) -> None:
    """system_power.json against system_desc.json: the same cooling, and node sets of described node types."""
    described_cooling = _system_cooling(run, system)
    if (
        described_cooling
        and isinstance(power_descriptor, dict)
        and power_descriptor.get("cooling") != described_cooling
        and not provisioned.problems
    ):
        provisioned.problems.append(
            f"cooling {power_descriptor.get('cooling')!r} disagrees with system_desc.json cooling {described_cooling!r}"
        )
        provisioned.provisioned_kw = None
    described_ensembles = _ensemble_ids(run, system)
    named = {node_set.get("system_node_ensemble_id") for node_set in _node_sets(power_descriptor)}
    unknown = sorted(e for e in named - described_ensembles if isinstance(e, int))
    if provisioned.valid and described_ensembles and unknown:
        run.findings.warning(
            "power-descriptor",
            f"{system}: node_sets name system_node_ensemble_id {unknown}, which system_desc.json does not "
            "describe.",
            file=display,
            fix="Give each node set the system_node_ensemble_id of its node type in system_desc.json.",
        )


def _report_provisioned(run: RuleRun, system: str, provisioned: Any, display: str) -> Any:
    """The descriptor's problems and warnings as findings; the provisioned power when there is one."""
    for problem in provisioned.problems:
        run.findings.error(
            "power-descriptor",
            f"{system}: {problem}",
            file=display,
            fix="Correct system_power.json so that its figures follow from its components.",
        )
    for warning in provisioned.warnings if provisioned.valid else []:
        run.findings.warning("power-descriptor", f"{system}: {warning}", file=display)
    if provisioned.provisioned_kw is not None:
        if provisioned.estimated:
            run.findings.warning(
                "power-estimated",
                f"{system}: MLC Estimated Power: {'; '.join(provisioned.estimated)} \u2014 Appendix D "
                "values reach provisioned_power_kw.",
                file=display,
                fix="Give every power figure with a public source (vendor_spec, publication, "
                "public_statement) to drop the MLC Estimated Power tag.",
            )
        run.findings.info(
            "power-descriptor", f"Provisioned power {provisioned.provisioned_kw:.2f} kW", file=display
        )
        return provisioned
    return None


def _node_sets(descriptor: Any) -> list[dict]:
    node_sets = descriptor.get("node_sets") if isinstance(descriptor, dict) else None
    return [ns for ns in node_sets if isinstance(ns, dict)] if isinstance(node_sets, list) else []


def _ensemble_ids(run: RuleRun, system: str) -> set[int]:
    """The system_node_ensemble_id of every node type the system's first system_desc.json describes."""
    first = next(
        (p for p in run.points if p.input.system == system and p.system_description is not None), None
    )
    nodes = first.system_description.get("node_types") if first and first.system_description else None
    return {
        node["system_node_ensemble_id"]
        for node in (nodes if isinstance(nodes, list) else [])
        if isinstance(node, dict) and count(node.get("system_node_ensemble_id")) is not None
    }


def _node_facts(run: RuleRun, system: str, key: str) -> dict[int, int]:
    """Per system_node_ensemble_id: host_processor_core_count or accelerators_per_node from system_desc.json."""
    first = next(
        (
            point
            for point in run.points
            if point.input.system == system and point.system_description is not None
        ),
        None,
    )
    nodes = (
        first.system_description.get("node_types")
        if first is not None and first.system_description is not None
        else None
    )
    out: dict[int, int] = {}
    for node in nodes if isinstance(nodes, list) else []:
        if not isinstance(node, dict) or count(node.get("system_node_ensemble_id")) is None:
            continue
        if key == "accelerators_per_node":
            info = node.get("accelerator_info")
            entries = info if isinstance(info, list) and info else [node]
            counts = [count(e.get(key)) for e in entries if isinstance(e, dict)]
            known = [n for n in counts if n is not None]
            value = sum(known) if known else None
        else:
            value = count(node.get(key))
        if value is not None:
            out[node["system_node_ensemble_id"]] = value
    return out


def _system_cooling(run: RuleRun, system: str) -> str | None:
    for point in run.points:
        described = point.system_description
        if point.input.system != system or described is None:
            continue
        declared: set[str] = {described["cooling"]} if text(described.get("cooling")) else set()
        node_types = described.get("node_types")
        for node in node_types if isinstance(node_types, list) else []:
            if isinstance(node, dict) and text(node.get("cooling")):
                declared.add(node["cooling"])
        values = {value.strip().lower() for value in declared}
        if len(values) == 1:
            return values.pop()
        mixed = str(run.ruleset.get("power", "mixed_cooling", default="air"))
        return mixed if values else None  # mixed cooling: the rule set's choice (the conservative air)
    return None


def check_point_power(run: RuleRun, point: Point, provisioned: Any) -> None:
    power: dict[str, Any] = {}
    tps = point.system_tps()
    if provisioned is not None:
        point_kw = provisioned.point_power_kw(point.yaml.get("nodes_used"))
        power.update(
            {
                "provisioned_kw": provisioned.provisioned_kw,
                "point_power_kw": point_kw,
                "method": provisioned.method,
            }
        )
        if point_kw and tps is not None:
            power["system_tps_per_kw"] = tps / point_kw
            stored = point.stored.get("system_tps_per_kw")
            tolerance = float(run.ruleset.get("tolerances", "tps_per_kw_relative", default=0.01))
            if stored is not None and (
                finite(stored) is None or abs(finite(stored) - tps / point_kw) > tolerance * (tps / point_kw)
            ):
                run.findings.error(
                    "metric-consistency-tps-per-kw",
                    f"r{point.concurrency}: stored system_tps_per_kw {short(stored)} differs from "
                    f"{tps:.3f} / {point_kw:.2f} kW = {tps / point_kw:.4f}.",
                    file=point.file("result_summary.json"),
                    point=point.key,
                )
    folder = point.input.files.get("power")
    if folder is not None:
        measured = _check_measured_power(run, point, Path(folder), provisioned, tps)
        if measured is not None:
            power["measured"] = measured
    if power:
        point.result.extra["power"] = power


def _check_measured_power(
    run: RuleRun, point: Point, folder: Path, provisioned: Any, tps: float | None
) -> dict | None:
    file = point.file("power")
    measured_spec = run.ruleset.get("measured_power", default={}) or {}
    try:
        manifest = read_manifest(folder)
        trace = load_trace(folder, manifest)
        mono0, unix0 = clock_anchor(manifest)
    except TraceError as exc:
        run.findings.error(
            "power-trace-unreadable",
            f"r{point.concurrency}: {exc}.",
            file=file,
            point=point.key,
            fix="Provide power/manifest.json and a PTDaemon spl.txt or CSV trace as docs/power.md describes.",
        )
        return None
    if isinstance(point.result.recomputed, dict):
        # The recompute already read the whole log; a second pass over it would be slow and could disagree.
        window = point.result.recomputed.get("window_ns")
    else:
        events = point.input.files.get("events")
        window = scan_window_ns(Path(events)) if events is not None else None
    if not (
        isinstance(window, list | tuple)
        and len(window) == 2
        and all(count(v) is not None for v in window)
        and window[1] > window[0]
    ):
        run.findings.error(
            "power-window-coverage",
            f"r{point.concurrency}: no measurement window (events.jsonl start/stop of "
            "performance tracking), so the trace cannot be aligned.",
            file=file,
            point=point.key,
        )
        return None
    start_s = (window[0] - mono0 + unix0) / 1e9
    stop_s = (window[1] - mono0 + unix0) / 1e9
    tokens = finite(dig(point.summary, "output_sequence_lengths", "total"))
    measurement = analyse_trace(trace, (start_s, stop_s), output_tokens=tokens, system_tps=tps)
    measurement.meter = manifest.get("meter") if isinstance(manifest.get("meter"), str) else None
    check_trace_quality(run, point, measurement, manifest, measured_spec)
    if provisioned is not None and provisioned.provisioned_kw and measurement.avg_power_w is not None:
        check_measured_below_provisioned(run, point, measurement, provisioned, measured_spec)
    return measurement.to_dict()


def check_trace_quality(
    run: RuleRun, point: Point, measurement: Any, manifest: dict, measured_spec: dict
) -> None:
    """The trace over the point's window: its coverage, gaps, sample interval and non-positive samples."""
    file = point.file("power")
    min_cov = float(measured_spec.get("min_window_coverage", 0.99))
    if measurement.coverage is None or measurement.coverage < min_cov:
        run.findings.error(
            "power-window-coverage",
            f"r{point.concurrency}: the trace covers {0 if measurement.coverage is None else measurement.coverage:.1%} of the "
            f"{measurement.window_s:.1f} s measurement window (needs {min_cov:.0%}).",
            file=file,
            point=point.key,
            fix="Start the power meter before the run and stop it after; check the clock anchor.",
        )
    max_gap = float(measured_spec.get("max_gap_s", 5.0))
    if (
        measurement.max_gap_s is not None
        and measurement.max_gap_s > max_gap
        and measurement.coverage
        and measurement.coverage >= min_cov
    ):
        run.findings.warning(
            "power-gap",
            f"r{point.concurrency}: the trace has a {measurement.max_gap_s:.1f} s gap inside the window (limit {max_gap} s).",
            file=file,
            point=point.key,
        )
    max_interval = float(measured_spec.get("max_sample_interval_s", 1.0))
    if measurement.median_interval_s is not None and measurement.median_interval_s > max_interval:
        run.findings.warning(
            "power-sample-interval",
            f"r{point.concurrency}: median sample interval {measurement.median_interval_s:.2f} s > {max_interval} s.",
            file=file,
            point=point.key,
            fix="Sample power at least once a second.",
        )
    declared = finite(manifest.get("sample_interval_s"))
    if (
        declared is not None
        and measurement.median_interval_s is not None
        and measurement.median_interval_s > 2 * declared
    ):
        run.findings.warning(
            "power-sample-interval",
            f"r{point.concurrency}: manifest declares {declared} s sampling but the trace "
            f"has a median interval of {measurement.median_interval_s:.2f} s.",
            file=file,
            point=point.key,
        )
    if measurement.nonpositive_samples:
        severity = "error" if measurement.avg_power_w is None else "warning"
        run.findings.add(
            "power-nonpositive-samples",
            severity,
            f"r{point.concurrency}: {measurement.nonpositive_samples} of {measurement.samples_in_window} samples in the window are \u2264 0 W "
            "(meter errors); they are left out of the average.",
            file=file,
            point=point.key,
        )
    elif measurement.samples_in_window == 0:
        run.findings.error(
            "power-window-coverage",
            f"r{point.concurrency}: no power sample lies inside the measurement window.",
            file=file,
            point=point.key,
        )


def check_measured_below_provisioned(
    run: RuleRun, point: Point, measurement: Any, provisioned: Any, measured_spec: dict
) -> None:
    """power-above-provisioned: the measured average stays within a tolerance of the provisioned power."""
    file = point.file("power")
    tolerance = float(measured_spec.get("above_provisioned_tolerance", 0.05))
    limit_w = provisioned.provisioned_kw * 1000.0 * (1 + tolerance)
    if measurement.avg_power_w > limit_w:
        run.findings.warning(
            "power-above-provisioned",
            f"r{point.concurrency}: measured average {measurement.avg_power_w:.0f} W exceeds provisioned "
            f"{provisioned.provisioned_kw:.2f} kW by more than {tolerance:.0%}.",
            file=file,
            point=point.key,
            fix="Check that system_power.json provisions every component the meter sees.",
        )
