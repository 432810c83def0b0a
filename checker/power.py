"""Power: provisioned power from system_power.json, and measured power traces (portal extension, docs/power.md)."""

from __future__ import annotations

import csv
import io
import json
import math
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from checker.numbers import finite

W_PER_KW = 1000.0
MAX_TRACE_LINE = 64 * 1024
MAX_TRACE_SAMPLES = 5_000_000  # ~58 days at 1 Hz, or ~1.4 h at 1 kHz: more is refused, not read


# ---------------------------------------------------------------- provisioned power


def _num(value: Any) -> float | None:
    """A finite, non-negative number, else None."""
    value = finite(value)
    return value if value is not None and value >= 0 else None


def _count(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0 or value > 10**9:
        return None
    return value


def _squash(name: Any) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower()) if isinstance(name, str) else ""


@dataclass(frozen=True)
class AppendixD:
    """MLCommons default power values (Appendix D), read from the ruleset's `power.appendix_d`."""

    table: dict[str, Any] = field(default_factory=dict)

    @property
    def subsections(self) -> tuple[str, ...]:
        return tuple(str(s) for s in self.table.get("subsections") or ())

    def cpu(self, model: Any, cores: int | None) -> tuple[float, str] | None:
        """D.2's per-CPU TDP from the architecture the model name implies and its core count."""
        if not isinstance(model, str) or not model:
            return None
        name = model.lower()
        if cores is None:
            m = re.search(r"(\d+)[\s-]*core", name)
            cores = int(m.group(1)) if m else None
        if cores is None:
            return None
        words = set(re.findall(r"[a-z0-9_]+", name))
        spec = self.table.get("cpu") or {}
        arm, x86 = spec.get("arm") or {}, spec.get("x86") or {}
        if words & set(arm.get("words") or ()):
            return (float(arm["w"]), "D.2") if cores <= int(arm.get("max_cores", 0)) else None
        if words & set(x86.get("words") or ()):
            small = cores <= int(x86.get("max_cores_small", 0))
            return float(x86["small_w" if small else "large_w"]), "D.2"
        return None

    def accelerator(self, model: Any) -> tuple[float, str] | None:
        """D.3's per-accelerator TDP for a listed model (most specific key first)."""
        squashed = _squash(model)
        for key, watts in self.table.get("accelerators") or ():
            if squashed and str(key) in squashed:
                return float(watts), "D.3"
        return None

    def switch(self, model: Any, cabling: Any) -> tuple[float, str] | None:
        """D.4's typical power of a reference switch under the declared cabling."""
        squashed = _squash(model)
        for key, by_cabling in (self.table.get("switches") or {}).items():
            if squashed and str(key) in squashed and isinstance(cabling, str) and cabling in by_cabling:
                return float(by_cabling[cabling]), "D.4"
        return None

    def nic(self) -> tuple[float, str] | None:
        watts = self.table.get("nic_w")
        return None if watts is None else (float(watts), "D.4")


def _sourced_w(value: Any) -> float | None:
    """Watts of an Appendix E sourced value ({value_w} or {value_kw}); None when absent or malformed."""
    if not isinstance(value, dict):
        return None
    if value.get("value_w") is not None:
        return _num(value.get("value_w"))
    kw = _num(value.get("value_kw"))
    return None if kw is None else kw * W_PER_KW


@dataclass
class Provisioned:
    """Provisioned power of one system, with the terms that produced it and what was wrong with the descriptor."""

    provisioned_kw: float | None = None
    method: str = ""  # "declared" | "computed"
    overhead_fraction: float | None = None
    major_components_w: float = 0.0
    other_components_w: float = 0.0
    published_node_power_w: float = 0.0
    scale_out_switch_power_w: float = 0.0
    sets: list[dict[str, Any]] = field(
        default_factory=list
    )  # node_set_id, ensemble, nodes, power_w, accelerators
    problems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # findings that do not reject the descriptor (E.4)
    valid: bool = True  # False when the descriptor fails E.1's shape (the official checker stops there)
    estimated: list[str] = field(default_factory=list)  # Appendix D values that reach provisioned_kw

    @property
    def total_system_power_w(self) -> float:
        return (
            self.major_components_w
            + self.other_components_w
            + self.published_node_power_w
            + self.scale_out_switch_power_w
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "provisioned_kw": self.provisioned_kw,
            "method": self.method,
            "overhead_fraction": self.overhead_fraction,
            "major_components_w": self.major_components_w,
            "other_components_w": self.other_components_w,
            "published_node_power_w": self.published_node_power_w,
            "scale_out_switch_power_w": self.scale_out_switch_power_w,
            "total_system_power_w": self.total_system_power_w,
            "estimated": list(self.estimated),
        }

    def point_power_kw(self, nodes_used: Any) -> float | None:
        """Power of the nodes one point engages: sum P_s * Y_s/N_s + S * sum Y/sum N; all nodes when undeclared."""
        if self.provisioned_kw is None:
            return None
        used: dict[int, int] = {}
        if isinstance(nodes_used, list):
            for entry in nodes_used:
                if isinstance(entry, dict):
                    ens, n = _count(entry.get("system_node_ensemble_id")), _count(entry.get("nodes"))
                    if ens is not None and n is not None:
                        used[ens] = used.get(ens, 0) + n
        fractions = []
        for s in self.sets:
            n_s = s["nodes"]
            y_s = min(used.get(s["ensemble"], n_s), n_s)
            fractions.append(y_s / n_s if n_s else 1.0)
        if not fractions or all(f == 1 for f in fractions):
            return self.provisioned_kw
        if self.method == "declared":
            return round(self.provisioned_kw * max(fractions), 2)
        engaged = sum(s["nodes"] * f for s, f in zip(self.sets, fractions, strict=True))
        total_nodes = sum(s["nodes"] for s in self.sets) or 1
        watts = sum(s["power_w"] * f for s, f in zip(self.sets, fractions, strict=True))
        watts += self.scale_out_switch_power_w * engaged / total_nodes
        return round(watts / W_PER_KW, 2)


def _scale_up_w(up: Any, label: str, problems: list[str]) -> float | None:
    if not isinstance(up, dict):
        problems.append(
            f"{label}: scale_up_network is required (method none, declared_tdp or bandwidth_estimate)"
        )
        return None
    method = up.get("method")
    if method == "none":
        return 0.0
    if method == "declared_tdp":
        count, per = _count(up.get("switch_count")), _sourced_w(up.get("tdp_per_switch"))
        if count is None or per is None:
            problems.append(f"{label}: declared_tdp needs switch_count and tdp_per_switch.value_w")
            return None
        return count * per
    if method == "bandwidth_estimate":
        tbps = _num(up.get("aggregate_bandwidth_tbps"))
        pj = up.get("energy_per_bit_pj")
        pj = _num(pj.get("value_pj")) if isinstance(pj, dict) else None
        if tbps is None or pj is None:
            problems.append(
                f"{label}: bandwidth_estimate needs aggregate_bandwidth_tbps and energy_per_bit_pj.value_pj"
            )
            return None
        return tbps * 8.0 * pj  # TB/s x 8 bit/B x pJ/bit = W, as the rules' worked examples read it
    problems.append(f"{label}: unknown scale_up_network.method {method!r}")
    return None


_SOURCED_TYPES = ("vendor_spec", "publication", "public_statement", "mlc_default")


def _sourced_values(desc: dict[str, Any]) -> list[tuple[str, Any]]:
    """Every Appendix E.1 sourced value of a descriptor, with its label."""
    out: list[tuple[str, Any]] = [("declared_provisioned_power", desc.get("declared_provisioned_power"))]
    node_sets = desc.get("node_sets")
    for i, ns in enumerate(node_sets if isinstance(node_sets, list) else []):
        if not isinstance(ns, dict):
            continue
        label = f"node_sets[{i}]"
        out.append((f"{label}.published_power", ns.get("published_power")))
        comp = ns.get("components")
        if not isinstance(comp, dict):
            continue
        out.append((f"{label}.components.combined_cpu_accelerator", comp.get("combined_cpu_accelerator")))
        for part in ("cpu", "accelerator"):
            block = comp.get(part)
            if isinstance(block, dict):
                out.append((f"{label}.components.{part}.tdp_per_unit", block.get("tdp_per_unit")))
        up = comp.get("scale_up_network")
        if isinstance(up, dict):
            for key in ("tdp_per_switch", "energy_per_bit_pj"):
                out.append((f"{label}.components.scale_up_network.{key}", up.get(key)))
    scale_out = desc.get("scale_out")
    if isinstance(scale_out, dict):
        nics = scale_out.get("nics")
        if isinstance(nics, dict):
            out.append(("scale_out.nics.tdp_per_nic", nics.get("tdp_per_nic")))
        switches = scale_out.get("switches")
        for i, sw in enumerate(switches if isinstance(switches, list) else []):
            if isinstance(sw, dict):
                out.append((f"scale_out.switches[{i}].power_per_switch", sw.get("power_per_switch")))
    return [(label, value) for label, value in out if value is not None]


def sourced_value_problems(desc: Any, appendix: set[str]) -> list[str]:
    """E.1, for every sourced value of the descriptor (the official checker's load-time validation):
    exactly one of value_w / value_kw / value_pj (`value-count`), a known source_type, and a source
    that is a URL (`source-not-url`) or, for mlc_default, an Appendix D subsection (`mlc-default-source`)."""
    if not isinstance(desc, dict):
        return []
    problems: list[str] = []
    for label, value in _sourced_values(desc):
        if not isinstance(value, dict):
            problems.append(f"{label} must be an object with a value, source_type and source")
            continue
        given = [key for key in ("value_w", "value_kw", "value_pj") if value.get(key) is not None]
        if len(given) != 1:
            problems.append(
                f"{label}: give exactly one of value_w, value_kw or value_pj"
                + (f" (gives {', '.join(given)})" if given else "")
            )
        source_type, source = value.get("source_type"), value.get("source")
        if source_type not in _SOURCED_TYPES:
            problems.append(
                f"{label}: source_type must be one of {', '.join(_SOURCED_TYPES)}, got {source_type!r}"
            )
        elif not isinstance(source, str) or not source:
            problems.append(f"{label}: source is required")
        elif source_type == "mlc_default":
            if appendix and source not in appendix:
                problems.append(
                    f"{label}: an mlc_default source names its Appendix D subsection "
                    f"({', '.join(sorted(appendix))}), not {source!r}"
                )
        elif not source.startswith(("https://", "http://")):
            problems.append(f"{label}: a {source_type} source must be a resolvable URL, not {source!r}")
    return problems


def _scale_out(
    fabric: dict[str, Any],
    node_sets: list[Any],
    out: Provisioned,
    watts_of: Any,
    defaults: AppendixD,
) -> tuple[float, bool]:
    """E.4, the scale-out fabric: adds the switch power to `out`; returns the counted NIC watts per node and
    whether a published node figure evidences that it leaves the NICs out (excluded_from_published_power).

    `present` follows from the node count: true on one node is a warning (it overstates), false on several
    nodes is an error where nothing joins them (every set component_sum with scale_up_network none), else a
    warning. A present fabric names its cabling, required bandwidth, NICs and switches; the required
    bandwidth is at least the NICs' sum; the switches offer it; NICs are counted when node power is built
    from components and not counted when it is published (unless evidenced as excluded).
    """
    sets = [ns for ns in node_sets if isinstance(ns, dict)]
    nodes = sum(_count(ns.get("nodes_provisioned")) or 0 for ns in sets)
    if fabric["present"]:
        if nodes == 1:
            out.warnings.append(
                "scale_out.present is true for a single-node submission; E.4 makes it false there, and the "
                "switch power is counted against this node"
            )
    elif nodes > 1:
        joined_by_nothing = all(
            ns.get("power_method") == "component_sum"
            and isinstance(ns.get("components"), dict)
            and isinstance(ns["components"].get("scale_up_network"), dict)
            and ns["components"]["scale_up_network"].get("method") == "none"
            for ns in sets
        )
        if joined_by_nothing:
            out.problems.append(
                f"scale_out.present is false, but the system has {nodes} nodes and no scale-up network joins "
                "them; E.4 allows false only for a single node or nodes joined by a fabric already counted in "
                "scale_up_network"
            )
        else:
            out.warnings.append(
                f"scale_out.present is false for {nodes} nodes; E.4 allows that only where the nodes are "
                "joined by a fabric already counted in scale_up_network, which the descriptor cannot show"
            )
    if not fabric["present"]:
        return 0.0, False
    missing = [
        name
        for name in ("cabling", "required_bandwidth_tbps", "nics", "switches")
        if fabric.get(name) is None
    ]
    if missing:
        out.problems.append(f"scale_out.present is true but {', '.join(missing)} is missing")
        return 0.0, False
    nics, switches, required_tbps = (
        fabric["nics"],
        fabric["switches"],
        _num(fabric["required_bandwidth_tbps"]),
    )
    if fabric["cabling"] not in ("passive", "active_optical"):
        out.problems.append(f"scale_out.cabling must be passive or active_optical, got {fabric['cabling']!r}")
    per_node = _count(nics.get("count_per_node")) if isinstance(nics, dict) else None
    gbps = _num(nics.get("bandwidth_per_nic_gbps")) if isinstance(nics, dict) else None
    counted = nics.get("counted") if isinstance(nics, dict) else None
    if per_node is None or gbps is None or not isinstance(counted, bool) or required_tbps is None:
        out.problems.append(
            "scale_out: required_bandwidth_tbps and nics (count_per_node, bandwidth_per_nic_gbps, counted "
            "true or false) are required"
        )
        return 0.0, False
    if not isinstance(switches, list):
        out.problems.append("scale_out.switches must be a list")
        return 0.0, False
    excluded = bool(nics.get("excluded_from_published_power"))
    by_formula = any(ns.get("power_method") == "component_sum" for ns in sets)
    nic_per_node_w = 0.0
    if counted:
        if not by_formula and not excluded:
            out.problems.append(
                "scale_out.nics.counted is true, but node power comes from a published specification, which "
                "section 4.5.2 assumes includes the adapters; set counted to false, or evidence the exclusion "
                "in excluded_from_published_power"
            )
        per_nic = watts_of("scale_out.nics.tdp_per_nic", nics.get("tdp_per_nic"), defaults.nic())
        if per_nic is None:
            out.problems.append("scale_out.nics: counted NICs need tdp_per_nic.value_w")
        else:
            nic_per_node_w = per_node * per_nic
    elif by_formula:
        out.problems.append(
            "scale_out.nics.counted is false, but node power is built with the MLC formula, which has no NIC "
            "term; section 4.5.2 says the NICs MUST be included"
        )
    from_nics = nodes * per_node * gbps / 1000.0
    basis = f"{nodes} nodes x {per_node} NICs x {gbps:g} Gb/s"
    if required_tbps < from_nics - 1e-6:
        out.problems.append(
            f"scale_out.required_bandwidth_tbps is {required_tbps:g}, below the {from_nics:g} Tb/s of NIC "
            f"bandwidth E.4 defines it as ({basis})"
        )
    elif required_tbps > from_nics + 1e-6:
        out.warnings.append(
            f"scale_out.required_bandwidth_tbps is {required_tbps:g}, above the {from_nics:g} Tb/s the NICs "
            f"carry ({basis})"
        )
    required = max(required_tbps, from_nics)
    offered = 0.0
    for i, sw in enumerate(switches):
        count = _count(sw.get("count")) if isinstance(sw, dict) else None
        tbps = _num(sw.get("bandwidth_tbps")) if isinstance(sw, dict) else None
        if not count or tbps is None or not isinstance(sw.get("model"), str):
            out.problems.append(f"scale_out.switches[{i}]: needs model, a positive count and bandwidth_tbps")
            continue
        watts = watts_of(
            f"scale_out.switches[{i}].power_per_switch",
            sw.get("power_per_switch"),
            defaults.switch(sw.get("model"), fabric.get("cabling")),
        )
        if watts is None:
            out.problems.append(
                f"scale_out.switches[{i}].power_per_switch is absent and Appendix D has no default for it"
            )
        else:
            out.scale_out_switch_power_w += count * watts
        offered += count * tbps
    if offered < required - 1e-6:
        out.problems.append(
            f"scale-out switches offer {offered:g} Tb/s, below the required {required:g} Tb/s"
        )
    return nic_per_node_w, excluded


def provisioned_power(
    desc: Any,
    *,
    overheads: dict[str, float],
    computed_tol_w: float = 0.5,
    kw_tol: float = 0.005,
    defaults: AppendixD | None = None,
    cores_by_ensemble: dict[int, int] | None = None,
) -> Provisioned:
    """Provisioned power of a system_power.json mapping: declared total, rack scaling, or component sum x overhead.

    A figure left absent takes its Appendix D default (`defaults`) where one exists; every default
    (or `mlc_default` source) that reaches the provisioned power is listed in `estimated`.
    """
    out = Provisioned()
    defaults = defaults or AppendixD()
    cores_by_ensemble = cores_by_ensemble or {}
    estimated: list[str] = []
    appendix = set(defaults.subsections)

    def watts_of(label: str, value: Any, fallback: tuple[float, str] | None = None) -> float | None:
        """A sourced value in watts, its Appendix D fallback when absent, else None."""
        if value is None:
            if fallback is None:
                return None
            estimated.append(f"{label} (absent; auto-populated from {fallback[1]})")
            return fallback[0]
        w = _sourced_w(value)
        if w is not None and isinstance(value, dict) and value.get("source_type") == "mlc_default":
            estimated.append(f"{label} ({value.get('source')} default)")
        return w

    if not isinstance(desc, dict):
        out.problems.append("system_power.json must be a JSON object")
        return out
    out.problems.extend(sourced_value_problems(desc, appendix))
    out.valid = not out.problems
    cooling = desc.get("cooling")
    out.overhead_fraction = overheads.get(cooling) if isinstance(cooling, str) else None
    if out.overhead_fraction is None:
        out.problems.append(f"cooling must be one of {', '.join(sorted(overheads))}, got {cooling!r}")
    node_sets = desc.get("node_sets")
    if not isinstance(node_sets, list) or not node_sets:
        out.problems.append("node_sets must be a non-empty list")
        node_sets = []
    scale_out = desc.get("scale_out")
    if not isinstance(scale_out, dict) or not isinstance(scale_out.get("present"), bool):
        out.problems.append("scale_out.present must be true or false")
        scale_out = None
    overhead = out.overhead_fraction or 0.0
    for i, ns in enumerate(node_sets):
        label = f"node_sets[{i}]"
        if not isinstance(ns, dict):
            out.problems.append(f"{label} must be an object")
            continue
        nodes = _count(ns.get("nodes_provisioned"))
        if not nodes:
            out.problems.append(f"{label}.nodes_provisioned must be a positive integer")
            continue
        method = ns.get("power_method")
        major = published = 0.0
        if method == "component_sum":
            comp = ns.get("components")
            if not isinstance(comp, dict):
                out.problems.append(f"{label}: component_sum needs a components block")
                continue
            parts: list[float | None] = []
            if comp.get("combined_cpu_accelerator") is not None:
                parts.append(
                    watts_of(
                        f"{label}.components.combined_cpu_accelerator", comp.get("combined_cpu_accelerator")
                    )
                )
            else:
                for part in ("cpu", "accelerator"):
                    block = comp.get(part)
                    if not isinstance(block, dict):
                        out.problems.append(f"{label}.components.{part} is required")
                        parts.append(None)
                        continue
                    ensemble = _count(ns.get("system_node_ensemble_id"))
                    fallback = (
                        defaults.cpu(
                            block.get("model"),
                            cores_by_ensemble.get(ensemble) if ensemble is not None else None,
                        )
                        if part == "cpu"
                        else defaults.accelerator(block.get("model"))
                    )
                    count = _count(block.get("count_per_node"))
                    tdp = watts_of(
                        f"{label}.components.{part}.tdp_per_unit", block.get("tdp_per_unit"), fallback
                    )
                    if count is None or tdp is None:
                        out.problems.append(
                            f"{label}.components.{part}: needs count_per_node and tdp_per_unit.value_w "
                            "(absent, and Appendix D has no default for this model)"
                        )
                        parts.append(None)
                    else:
                        parts.append(count * tdp)
            parts.append(_scale_up_w(comp.get("scale_up_network"), f"{label}.components", out.problems))
            if any(p is None for p in parts):
                continue
            major = nodes * sum(p for p in parts if p is not None)
        elif method in ("published_system", "node_scaling"):
            watts = _sourced_w(ns.get("published_power"))
            if watts is None:
                out.problems.append(f"{label}: {method} needs published_power.value_w or value_kw")
                continue
            if method == "published_system":
                published = nodes * watts
            else:
                rack = _count(ns.get("nodes_in_published_rack"))
                if not rack or rack <= nodes:
                    out.problems.append(
                        f"{label}: node_scaling needs nodes_in_published_rack greater than nodes_provisioned"
                    )
                    continue
                published = watts * nodes / rack
        else:
            out.problems.append(
                f"{label}.power_method must be component_sum, published_system or node_scaling"
            )
            continue
        acc = ns.get("components", {}).get("accelerator") if isinstance(ns.get("components"), dict) else None
        out.sets.append(
            {
                "node_set_id": ns.get("node_set_id"),
                "ensemble": _count(ns.get("system_node_ensemble_id")),
                "nodes": nodes,
                "power_method": method,
                "major_w": major,
                "published_w": published,
                "accelerators_per_node": _count(acc.get("count_per_node")) if isinstance(acc, dict) else None,
            }
        )
    if scale_out is not None:
        nic_per_node_w, nics_excluded = _scale_out(scale_out, node_sets, out, watts_of, defaults)
        for node_set in out.sets:
            # section 4.5.2: a formula-built node has no NIC term, so counted NICs are added to it; a
            # published node figure includes them unless excluded_from_published_power says otherwise
            if nic_per_node_w and (node_set["power_method"] == "component_sum" or nics_excluded):
                node_set["major_w"] += node_set["nodes"] * nic_per_node_w
    for node_set in out.sets:
        major, published = node_set.pop("major_w"), node_set.pop("published_w")
        node_set["power_w"] = (1 + overhead) * major + published
        out.major_components_w += major
        out.published_node_power_w += published
    out.other_components_w = overhead * out.major_components_w
    declared = desc.get("declared_provisioned_power")
    if declared is not None:
        # The declared figure governs: defaults in the components beneath it do not tag the result.
        estimated.clear()
        watts = watts_of("declared_provisioned_power", declared)
        if watts is None:
            out.problems.append("declared_provisioned_power needs value_w or value_kw")
        else:
            out.method, out.provisioned_kw = "declared", round(watts / W_PER_KW, 2)
        out.estimated = [e for e in estimated if e.startswith("declared_provisioned_power")]
    elif not out.problems:
        out.method, out.provisioned_kw = "computed", round(out.total_system_power_w / W_PER_KW, 2)
        out.estimated = list(estimated)
    if out.method == "computed":
        stated = desc.get("computed")
        if isinstance(stated, dict):
            ours = {
                "major_components_w": out.major_components_w,
                "other_components_w": out.other_components_w,
                "published_node_power_w": out.published_node_power_w,
                "scale_out_switch_power_w": out.scale_out_switch_power_w,
                "total_system_power_w": out.total_system_power_w,
            }
            for key, value in ours.items():
                theirs = stated.get(key)
                if theirs is not None and (
                    _num(theirs) is None or abs(float(theirs) - value) > computed_tol_w
                ):
                    out.problems.append(f"computed.{key} = {theirs!r} but the descriptor gives {value:g} W")
            theirs = stated.get("overhead_fraction")
            if theirs is not None and (_num(theirs) is None or abs(float(theirs) - overhead) > 1e-9):
                out.problems.append(
                    f"computed.overhead_fraction = {theirs!r} but cooling {cooling!r} means {overhead}"
                )
        stated_kw = desc.get("provisioned_power_kw")
        if (
            stated_kw is not None
            and out.provisioned_kw is not None
            and (_num(stated_kw) is None or abs(float(stated_kw) - out.provisioned_kw) > kw_tol)
        ):
            out.problems.append(
                f"provisioned_power_kw = {stated_kw!r} but the descriptor gives {out.provisioned_kw:.2f} kW"
            )
    if out.problems:
        out.provisioned_kw = None
    return out


# ---------------------------------------------------------------- measured power traces


class TraceError(ValueError):
    """The trace or its manifest cannot be used; the message says what to change."""


@dataclass
class Trace:
    """Total power samples (Unix seconds, watts), sorted by time, and the channels summed into them."""

    times_s: list[float]
    watts: list[float]
    channels: list[str]
    source: str


def _read_lines(path: Path) -> list[str]:
    lines: list[str] = []
    with path.open("rb") as fh:
        while True:
            raw = fh.readline(MAX_TRACE_LINE + 1)
            if not raw:
                break
            if len(raw) > MAX_TRACE_LINE:
                raise TraceError(f"line {len(lines) + 1} is longer than {MAX_TRACE_LINE} bytes")
            if len(lines) >= MAX_TRACE_SAMPLES:
                raise TraceError(f"more than {MAX_TRACE_SAMPLES} lines; split or downsample the trace")
            try:
                lines.append(raw.decode("utf-8").rstrip("\r\n"))
            except UnicodeDecodeError as exc:
                raise TraceError(f"line {len(lines) + 1} is not UTF-8") from exc
    return lines


def _float_or_none(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def parse_ptd(path: Path, *, utc_offset_s: float = 0.0) -> Trace:
    """SPEC PTDaemon log: Time,MM-DD-YYYY HH:MM:SS.fff,Watts,W,Volts,V,Amps,A,PF,P,Mark,NAME[,ChN,Watts,...]...

    Timestamps are the PTD host's local time; utc_offset_s (manifest) converts them to UTC.
    With channel blocks the total is the sum of the channels' Watts, otherwise the first Watts.
    """
    times, watts, channels = [], [], []
    offset = timedelta(seconds=utc_offset_s)
    for n, line in enumerate(_read_lines(path), start=1):
        if not line.startswith("Time,"):
            continue  # PTD interleaves other records (e.g. Range, Uncertainty); only Time lines are samples
        fields = line.split(",")
        try:
            stamp = datetime.strptime(fields[1], "%m-%d-%Y %H:%M:%S.%f")
        except (IndexError, ValueError) as exc:
            raise TraceError(f"line {n}: timestamp is not MM-DD-YYYY HH:MM:SS.fff") from exc
        chan_watts: list[tuple[str, float | None]] = []
        total = None
        i = 2
        current = None
        while i < len(fields) - 1:
            key = fields[i]
            if key.startswith("Ch") and key[2:].isdigit():
                current = key
                i += 1
                continue
            if key == "Watts":
                value = _float_or_none(fields[i + 1])
                if current is None and total is None:
                    total = value
                elif current is not None:
                    chan_watts.append((current, value))
            i += 2
        if chan_watts:
            for name, _ in chan_watts:
                if name not in channels:
                    channels.append(name)
            value = (
                None
                if any(v is None for _, v in chan_watts)
                else sum(v for _, v in chan_watts if v is not None)
            )
        else:
            value = total
        if value is None:
            raise TraceError(f"line {n}: no numeric Watts value")
        times.append((stamp - offset).replace(tzinfo=UTC).timestamp())
        watts.append(value)
    if not times:
        raise TraceError("no 'Time,' sample lines")
    order = sorted(range(len(times)), key=times.__getitem__)
    return Trace([times[i] for i in order], [watts[i] for i in order], channels or ["Watts"], "ptd")


def _parse_csv_time(text: str) -> float:
    value = _float_or_none(text)
    if value is not None:
        return value / 1e9 if value > 1e14 else value  # Unix ns or Unix s
    stamp = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    if stamp.tzinfo is None:
        raise ValueError("ISO-8601 timestamp without a UTC offset")
    return stamp.timestamp()


def parse_csv(path: Path) -> Trace:
    """CSV with a header: timestamp column (Unix s, Unix ns or ISO-8601 with offset) then one watts column per channel."""
    lines = _read_lines(path)
    rows = list(csv.reader(io.StringIO("\n".join(lines))))
    rows = [r for r in rows if r and not r[0].startswith("#")]
    if len(rows) < 2:
        raise TraceError("needs a header line and at least one sample")
    header = [h.strip() for h in rows[0]]
    if len(header) < 2:
        raise TraceError("header must be a timestamp column followed by at least one watts column")
    times, watts = [], []
    for n, row in enumerate(rows[1:], start=2):
        if len(row) != len(header):
            raise TraceError(f"row {n}: {len(row)} fields, header has {len(header)}")
        try:
            t = _parse_csv_time(row[0])
        except ValueError as exc:
            raise TraceError(
                f"row {n}: timestamp {row[0]!r} is not Unix seconds/ns or ISO-8601 with offset"
            ) from exc
        values = [_float_or_none(v) for v in row[1:]]
        if any(v is None for v in values):
            raise TraceError(f"row {n}: watts must be finite numbers")
        times.append(t)
        watts.append(sum(v for v in values if v is not None))
    order = sorted(range(len(times)), key=times.__getitem__)
    return Trace([times[i] for i in order], [watts[i] for i in order], header[1:], "csv")


def read_manifest(folder: Path) -> dict[str, Any]:
    path = folder / "manifest.json"
    if not path.is_file():
        raise TraceError("power/manifest.json is missing")
    if path.stat().st_size > 1024 * 1024:
        raise TraceError("power/manifest.json is larger than 1 MiB")
    try:
        data = json.loads(path.read_text(encoding="utf-8"), parse_constant=_reject_constant)
    except (UnicodeDecodeError, ValueError) as exc:
        raise TraceError(f"power/manifest.json is not valid JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise TraceError("power/manifest.json must be a JSON object")
    return data


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not allowed")


def load_trace(folder: Path, manifest: dict[str, Any]) -> Trace:
    trace_name = manifest.get("trace")
    if trace_name is None:
        trace_name = "spl.txt" if (folder / "spl.txt").is_file() else "power.csv"
    if (
        not isinstance(trace_name, str)
        or "/" in trace_name
        or "\\" in trace_name
        or trace_name.startswith(".")
    ):
        raise TraceError("manifest 'trace' must be a file name inside power/")
    path = folder / trace_name
    if not path.is_file() or path.is_symlink():
        raise TraceError(f"power/{trace_name} is missing")
    fmt = manifest.get("trace_format") or ("ptd" if trace_name.endswith(".txt") else "csv")
    if fmt == "ptd":
        offset = manifest.get("utc_offset_s", 0)
        if (
            _num(abs(offset) if isinstance(offset, int | float) and not isinstance(offset, bool) else None)
            is None
        ):
            raise TraceError("manifest 'utc_offset_s' must be a number of seconds")
        return parse_ptd(path, utc_offset_s=float(offset))
    if fmt == "csv":
        return parse_csv(path)
    raise TraceError(f"manifest 'trace_format' must be 'ptd' or 'csv', got {fmt!r}")


def clock_anchor(manifest: dict[str, Any]) -> tuple[int, int]:
    """(monotonic_ns, unix_ns) read at the same instant on the client host."""
    anchor = manifest.get("clock_anchor")
    if not isinstance(anchor, dict):
        raise TraceError(
            "manifest needs clock_anchor {monotonic_ns, unix_ns} to align the trace with events.jsonl"
        )
    nanoseconds: list[int] = []
    for name in ("monotonic_ns", "unix_ns"):
        value = anchor.get(name)
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**63:
            raise TraceError(f"clock_anchor.{name} must be a non-negative integer of nanoseconds")
        nanoseconds.append(value)
    monotonic_ns, unix_ns = nanoseconds
    return monotonic_ns, unix_ns


def scan_window_ns(events_path: Path) -> tuple[int, int] | None:
    """Cheap pass over events.jsonl (or .zst) for the first start and last stop of performance tracking."""
    start = stop = None
    stream: io.BufferedIOBase
    try:
        if events_path.name.endswith(".zst"):
            import zstandard

            raw = zstandard.ZstdDecompressor().stream_reader(events_path.open("rb"))
            stream = io.BufferedReader(raw)
        else:
            stream = events_path.open("rb")
        with stream:
            while True:
                line = stream.readline(MAX_TRACE_LINE)
                if not line:
                    break
                if len(line) >= MAX_TRACE_LINE or b"performance_tracking" not in line:
                    continue
                try:
                    event = json.loads(line)
                except ValueError:
                    continue
                if not isinstance(event, dict):
                    continue
                ts = event.get("timestamp_ns")
                if isinstance(ts, bool) or not isinstance(ts, int):
                    continue
                if event.get("event_type") == "session.start_performance_tracking" and start is None:
                    start = ts
                elif event.get("event_type") == "session.stop_performance_tracking":
                    stop = ts
    except Exception:  # noqa: BLE001 - unreadable or a corrupt compressed stream: the raw-log checks report it
        return None
    if start is None or stop is None or stop <= start:
        return None
    return start, stop


@dataclass
class Measured:
    """Measured power of one point over its measurement window, and the trace-quality observations."""

    avg_power_w: float | None = None
    energy_j: float | None = None
    joules_per_output_token: float | None = None
    measured_tps_per_kw: float | None = None
    window_s: float | None = None
    samples_in_window: int = 0
    nonpositive_samples: int = 0
    coverage: float | None = None
    max_gap_s: float | None = None
    median_interval_s: float | None = None
    channels: list[str] = field(default_factory=list)
    meter: str | None = None
    source: str = ""

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def analyse_trace(
    trace: Trace, window_unix_s: tuple[float, float], *, output_tokens: float | None, system_tps: float | None
) -> Measured:
    """Average of positive samples strictly inside the window; energy = average x window length."""
    start, stop = window_unix_s
    window_s = stop - start
    m = Measured(window_s=window_s, channels=trace.channels, source=trace.source)
    inside = [(t, w) for t, w in zip(trace.times_s, trace.watts, strict=True) if start < t < stop]
    m.samples_in_window = len(inside)
    positive = [w for _, w in inside if w > 0]
    m.nonpositive_samples = len(inside) - len(positive)
    if trace.times_s:
        covered = max(0.0, min(stop, trace.times_s[-1]) - max(start, trace.times_s[0]))
        m.coverage = covered / (stop - start) if stop > start else 0.0
        stamps = [start] + [t for t, _ in inside] + [stop]
        # The edges count only when the trace does not reach them: a trace that starts late is a coverage problem.
        gaps = [b - a for a, b in zip(stamps, stamps[1:], strict=False)]
        m.max_gap_s = max(gaps) if gaps else None
        intervals = sorted(b - a for a, b in zip(trace.times_s, trace.times_s[1:], strict=False))
        m.median_interval_s = intervals[len(intervals) // 2] if intervals else None
    if positive:
        m.avg_power_w = sum(positive) / len(positive)
        m.energy_j = m.avg_power_w * window_s
        if output_tokens:
            m.joules_per_output_token = m.energy_j / output_tokens
        if system_tps is not None:
            m.measured_tps_per_kw = system_tps / (m.avg_power_w / W_PER_KW)
    return m
