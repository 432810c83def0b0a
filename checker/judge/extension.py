"""An extension of a published curve, judged as the curve it would make: its new load points and the points of the
published revisions it keeps, together.

A published result grows by extensions (new concurrency levels, or re-measurements of published ones). The portal
checks an extension's own points like any version, then judges the union: every point of the extension plus, for
each other concurrency, the newest published revision's point. Curve-level rules (point count, regions, coverage,
offline point, accuracy per region, the Pareto front) therefore see the curve the public would see, so an extension
that breaks one fails. Findings the published revisions already carried on their own points (judged, passed or
waived, when they were published) are not repeated; whatever the union changes is reported.

Rules of an extension (portal-only, docs/rules.md):
- `extension-empty` (error): the extension's version holds no load point.
- `extension-hardware-change` (error): a new point's system_desc.json describes other hardware than the published
  result: that is a new submission, not an extension.
- `extension-undeclared-change` (error): the software stack differs but the extension declares no stack change.
- `extension-replaces-point` (info): a new point re-measures a published concurrency; the published one is kept in
  the result's history.
"""

from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass, field
from typing import Any

from checker.read.inputs import Layout, Limits, PointInput
from checker.read.loaders import load_json
from checker.report import Findings

# The system_desc.json keys that describe hardware (top level, per node type, per accelerator); a change in any
# of them makes another system. Everything else not per-point (frameworks, drivers, OS...) is the software stack.
HARDWARE_KEYS = (
    "system_size",
    "system_node_ensemble_count",
    "system_node_ensemble_total",
    "system_category",
)
NODE_HARDWARE_KEYS = (
    "number_of_nodes",
    "host_processor_model_name",
    "host_processors_per_node",
    "host_processor_core_count",
    "host_memory_capacity",
    "host_memory_configuration",
    "host_network_card_count",
    "host_networking",
    "host_storage_capacity",
    "host_storage_type",
    "other_hardware",
    "cooling",
)
ACCELERATOR_HARDWARE_KEYS = (
    "accelerator_model_name",
    "accelerators_per_node",
    "accelerator_memory_capacity",
    "accelerator_memory_type",
    "accelerator_interconnect",
    "accelerator_host_interconnect",
)
NODE_SOFTWARE_KEYS = ("inference_backend", "driver", "operating_system", "other_software_stack", "filesystem")
EXTENSION_RULES = (
    "extension-empty",
    "extension-hardware-change",
    "extension-undeclared-change",
    "extension-replaces-point",
)


@dataclass
class PublishedRevision:
    """One published revision the extension builds on: its number, software stack label, the layout of its version
    (opened by the caller), its points' stored results by key and the findings its own check already judged."""

    number: int
    stack: str
    layout: Layout
    results: dict[str, Any]  # point key -> checker.report.PointResult
    judged: set[tuple] = field(default_factory=set)  # finding_identity() of its check run's findings


@dataclass(frozen=True)
class ExtensionScope:
    """What the extension declares: its stack label and whether it declares a software stack change."""

    stack: str
    declares_stack_change: bool
    revisions: tuple[PublishedRevision, ...]  # newest first


def finding_identity(rule: str, severity: str, point: str | None, message: str) -> tuple:
    """How a finding is recognised across two check runs of the same points."""
    return (rule, severity, point or "", message)


def hardware_of(description: Any) -> dict[str, Any]:
    """The hardware a system description declares (HARDWARE_KEYS, per node type and accelerator)."""
    if not isinstance(description, dict):
        return {}
    nodes = []
    for node in description.get("node_types") or []:
        if not isinstance(node, dict):
            continue
        accelerators = [
            {key: accelerator.get(key) for key in ACCELERATOR_HARDWARE_KEYS}
            for accelerator in node.get("accelerator_info") or []
            if isinstance(accelerator, dict)
        ]
        nodes.append({**{key: node.get(key) for key in NODE_HARDWARE_KEYS}, "accelerators": accelerators})
    return {**{key: description.get(key) for key in HARDWARE_KEYS}, "node_types": nodes}


def software_of(description: Any) -> dict[str, Any]:
    """The software stack a system description declares (the serving framework, per node type the backend,
    driver, operating system...)."""
    if not isinstance(description, dict):
        return {}
    nodes = [
        {key: node.get(key) for key in NODE_SOFTWARE_KEYS}
        for node in description.get("node_types") or []
        if isinstance(node, dict)
    ]
    return {"serving_framework": description.get("serving_framework"), "node_types": nodes}


def _differing(old: dict, new: dict, prefix: str = "") -> list[str]:
    """Dotted names of the keys whose values differ (node types and accelerators by position)."""
    out = []
    for key in sorted(set(old) | set(new)):
        a, b = old.get(key), new.get(key)
        if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
            for index, (x, y) in enumerate(zip(a, b, strict=True)):
                if isinstance(x, dict) and isinstance(y, dict):
                    out += _differing(x, y, f"{prefix}{key}[{index}].")
                elif x != y:
                    out.append(f"{prefix}{key}[{index}]")
        elif a != b:
            out.append(f"{prefix}{key}")
    return out


def merge_layouts(new: Layout, revisions: tuple[PublishedRevision, ...]) -> tuple[Layout, dict[str, int]]:
    """The union curve's layout: every point of `new`, then for each other key the newest revision's point.
    Returns the layout and, for each inherited point, the number of the revision it comes from. Bundle-level
    files (checksums, cli metadata) stay the extension's own; docs, READMEs and power descriptors are shared."""
    points: list[PointInput] = list(new.points)
    inherited: dict[str, int] = {}
    seen = {point.key for point in points}
    system_power = dict(new.system_power)
    docs, readmes, displays = list(new.docs), list(new.src_readmes), dict(new.displays)
    for revision in revisions:
        for point in revision.layout.points:
            if point.key not in seen:
                seen.add(point.key)
                points.append(point)
                inherited[point.key] = revision.number
        for system, path in revision.layout.system_power.items():
            system_power.setdefault(system, path)
        docs += revision.layout.docs
        readmes += revision.layout.src_readmes
        displays.update({k: v for k, v in revision.layout.displays.items() if k not in displays})
    kinds = {new.kind, *(revision.layout.kind for revision in revisions)} - {"empty"}
    merged = dataclasses.replace(
        new,
        kind=kinds.pop() if len(kinds) == 1 else ("mixed" if kinds else "empty"),
        points=points,
        system_power=system_power,
        docs=docs,
        src_readmes=readmes,
        displays=displays,
    )
    return merged, inherited


def inherited_result(result: Any, *, revision: PublishedRevision) -> Any:
    """A published point's stored result as a point of the union curve, labelled with its revision and stack."""
    out = copy.deepcopy(result)
    out.extra = {**(out.extra or {}), "revision": revision.number, "stack": revision.stack}
    return out


def _description(point: PointInput) -> dict | None:
    path = point.files.get("system_desc.json")
    if path is None:
        return None
    found = load_json(
        path, display=point.display_of("system_desc.json"), findings=Findings(), limits=Limits()
    )
    return found if isinstance(found, dict) else None


def check_extension(
    new: Layout, *, scope: ExtensionScope, findings: Findings, per_point_keys: set[str]
) -> dict[str, int]:
    """The extension's own rules (module docstring); returns the published revision each replaced point came from."""
    replaced: dict[str, int] = {}
    if not new.points:
        findings.error(
            "extension-empty",
            "This extension holds no load point: there is nothing to add to the published curve.",
            fix="Upload the run archives (or a bundle) of the new or re-measured load points only.",
        )
        return replaced
    published: dict[str, tuple[int, PointInput]] = {}
    for revision in scope.revisions:
        for point in revision.layout.points:
            published.setdefault(point.key, (revision.number, point))
    newest = next((point for r in scope.revisions for point in r.layout.points if _description(point)), None)
    reference = _description(newest) if newest is not None else None
    new_reference: tuple[PointInput, dict] | None = None
    for point in sorted(new.points, key=lambda p: (p.system, p.model, p.concurrency)):
        if point.key in published:
            number, _ = published[point.key]
            replaced[point.key] = number
            findings.info(
                "extension-replaces-point",
                f"r{point.concurrency} is re-measured: it replaces revision {number}'s point on the curve (that "
                "one stays in the result's history).",
                file=point.display,
                point=point.key,
            )
        description = _description(point)
        if description is None:
            continue
        # The new points agree with each other like the points of any curve (per-point keys aside).
        identity = {k: v for k, v in description.items() if k not in per_point_keys}
        if new_reference is None:
            new_reference = (point, identity)
        elif identity != new_reference[1]:
            differing = sorted(
                k for k in set(identity) | set(new_reference[1]) if identity.get(k) != new_reference[1].get(k)
            )
            findings.error(
                "system-description-consistency",
                f"r{point.concurrency}: system_desc.json differs from r{new_reference[0].concurrency}'s in "
                f"{', '.join(differing[:10])}",
                file=point.display_of("system_desc.json"),
                point=point.key,
                fix="Every point of a curve must describe the same system; only per-point fields "
                "(parallelism, batch, tps_utilization) may differ.",
            )
        if reference is None:
            continue
        hardware = _differing(hardware_of(reference), hardware_of(description))
        if hardware:
            findings.error(
                "extension-hardware-change",
                f"r{point.concurrency}: system_desc.json describes other hardware than the published result "
                f"({', '.join(hardware[:6])}{' ...' if len(hardware) > 6 else ''}). A hardware change is not an "
                "extension.",
                file=point.display_of("system_desc.json"),
                point=point.key,
                fix="Results on other hardware are a new submission: register the system (or a new system "
                "description revision) and create a submission for it; withdraw this extension.",
            )
            continue
        software = _differing(software_of(reference), software_of(description))
        if software and not scope.declares_stack_change:
            findings.error(
                "extension-undeclared-change",
                f"r{point.concurrency}: the software stack differs from the published result "
                f"({', '.join(software[:6])}), but this extension declares no software change.",
                file=point.display_of("system_desc.json"),
                point=point.key,
                fix="Declare the new software stack (versions) on the extension's page, so its points carry "
                "that stack's label on the curve.",
            )
    return replaced
