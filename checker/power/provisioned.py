"""Provisioned power of a system from its system_power.json (docs/power.md): a declared total, rack
scaling, or the component sum x the cooling overhead, plus the scale-out fabric (E.4)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from checker.power.sources import (
    W_PER_KW,
    AppendixD,
    non_negative,
    sourced_value_problems,
    sourced_watts,
    whole_count,
)


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
                    ens, n = (
                        whole_count(entry.get("system_node_ensemble_id")),
                        whole_count(entry.get("nodes")),
                    )
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
        count, per = whole_count(up.get("switch_count")), sourced_watts(up.get("tdp_per_switch"))
        if count is None or per is None:
            problems.append(f"{label}: declared_tdp needs switch_count and tdp_per_switch.value_w")
            return None
        return count * per
    if method == "bandwidth_estimate":
        tbps = non_negative(up.get("aggregate_bandwidth_tbps"))
        pj = up.get("energy_per_bit_pj")
        pj = non_negative(pj.get("value_pj")) if isinstance(pj, dict) else None
        if tbps is None or pj is None:
            problems.append(
                f"{label}: bandwidth_estimate needs aggregate_bandwidth_tbps and energy_per_bit_pj.value_pj"
            )
            return None
        return tbps * 8.0 * pj  # TB/s x 8 bit/B x pJ/bit = W, as the rules' worked examples read it
    problems.append(f"{label}: unknown scale_up_network.method {method!r}")
    return None


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
    nodes = sum(whole_count(ns.get("nodes_provisioned")) or 0 for ns in sets)
    _check_scale_out_presence(fabric, sets, nodes, out)
    if not fabric["present"]:
        return 0.0, False
    return _scale_out_fabric(fabric, sets, nodes, out, watts_of, defaults)


def _check_scale_out_presence(fabric: dict[str, Any], sets: list[dict], nodes: int, out: Provisioned) -> None:
    """E.4's `present` against the node count: true on one node warns, false on several nodes is an error
    where nothing joins them, else a warning."""
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


def _scale_out_fabric(
    fabric: dict[str, Any],
    sets: list[dict],
    nodes: int,
    out: Provisioned,
    watts_of: Any,
    defaults: AppendixD,
) -> tuple[float, bool]:
    """A present fabric: its cabling, required bandwidth, NICs and switches (see _scale_out)."""
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
        non_negative(fabric["required_bandwidth_tbps"]),
    )
    if fabric["cabling"] not in ("passive", "active_optical"):
        out.problems.append(f"scale_out.cabling must be passive or active_optical, got {fabric['cabling']!r}")
    per_node = whole_count(nics.get("count_per_node")) if isinstance(nics, dict) else None
    gbps = non_negative(nics.get("bandwidth_per_nic_gbps")) if isinstance(nics, dict) else None
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
    _add_scale_out_switches(fabric, switches, max(required_tbps, from_nics), out, watts_of, defaults)
    return nic_per_node_w, excluded


def _add_scale_out_switches(
    fabric: dict[str, Any],
    switches: list[Any],
    required: float,
    out: Provisioned,
    watts_of: Any,
    defaults: AppendixD,
) -> None:
    """Adds each scale-out switch's power to `out`; together they must offer the required bandwidth."""
    offered = 0.0
    for i, sw in enumerate(switches):
        count = whole_count(sw.get("count")) if isinstance(sw, dict) else None
        tbps = non_negative(sw.get("bandwidth_tbps")) if isinstance(sw, dict) else None
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


class _Watts:
    """Sourced values in watts, with the Appendix D defaults (and `mlc_default` sources) used on the way."""

    def __init__(self) -> None:
        self.estimated: list[str] = []

    def __call__(self, label: str, value: Any, fallback: tuple[float, str] | None = None) -> float | None:
        """A sourced value in watts, its Appendix D fallback when absent, else None."""
        if value is None:
            if fallback is None:
                return None
            self.estimated.append(f"{label} (absent; auto-populated from {fallback[1]})")
            return fallback[0]
        w = sourced_watts(value)
        if w is not None and isinstance(value, dict) and value.get("source_type") == "mlc_default":
            self.estimated.append(f"{label} ({value.get('source')} default)")
        return w


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
    watts_of = _Watts()
    appendix = set(defaults.subsections)
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
        node_set = _node_set_power(f"node_sets[{i}]", ns, out, watts_of, defaults, cores_by_ensemble)
        if node_set is not None:
            out.sets.append(node_set)
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
    _settle_provisioned_kw(desc, out, watts_of)
    if out.method == "computed":
        _check_stated_figures(desc, out, cooling, overhead, computed_tol_w=computed_tol_w, kw_tol=kw_tol)
    if out.problems:
        out.provisioned_kw = None
    return out


def _node_set_power(
    label: str,
    ns: Any,
    out: Provisioned,
    watts_of: _Watts,
    defaults: AppendixD,
    cores_by_ensemble: dict[int, int],
) -> dict[str, Any] | None:
    """One node set's major-component and published watts (before overhead), or None with its problem in `out`."""
    if not isinstance(ns, dict):
        out.problems.append(f"{label} must be an object")
        return None
    nodes = whole_count(ns.get("nodes_provisioned"))
    if not nodes:
        out.problems.append(f"{label}.nodes_provisioned must be a positive integer")
        return None
    method = ns.get("power_method")
    major = published = 0.0
    if method == "component_sum":
        comp = ns.get("components")
        if not isinstance(comp, dict):
            out.problems.append(f"{label}: component_sum needs a components block")
            return None
        per_node = _component_sum_w(label, ns, comp, out, watts_of, defaults, cores_by_ensemble)
        if per_node is None:
            return None
        major = nodes * per_node
    elif method in ("published_system", "node_scaling"):
        watts = sourced_watts(ns.get("published_power"))
        if watts is None:
            out.problems.append(f"{label}: {method} needs published_power.value_w or value_kw")
            return None
        if method == "published_system":
            published = nodes * watts
        else:
            rack = whole_count(ns.get("nodes_in_published_rack"))
            if not rack or rack <= nodes:
                out.problems.append(
                    f"{label}: node_scaling needs nodes_in_published_rack greater than nodes_provisioned"
                )
                return None
            published = watts * nodes / rack
    else:
        out.problems.append(f"{label}.power_method must be component_sum, published_system or node_scaling")
        return None
    acc = ns.get("components", {}).get("accelerator") if isinstance(ns.get("components"), dict) else None
    return {
        "node_set_id": ns.get("node_set_id"),
        "ensemble": whole_count(ns.get("system_node_ensemble_id")),
        "nodes": nodes,
        "power_method": method,
        "major_w": major,
        "published_w": published,
        "accelerators_per_node": whole_count(acc.get("count_per_node")) if isinstance(acc, dict) else None,
    }


def _component_sum_w(
    label: str,
    ns: dict[str, Any],
    comp: dict[str, Any],
    out: Provisioned,
    watts_of: _Watts,
    defaults: AppendixD,
    cores_by_ensemble: dict[int, int],
) -> float | None:
    """Watts of one node built from its components (CPU and accelerator, or combined, plus the scale-up
    network); None when a part is missing (its problem is in `out`)."""
    parts: list[float | None] = []
    if comp.get("combined_cpu_accelerator") is not None:
        parts.append(
            watts_of(f"{label}.components.combined_cpu_accelerator", comp.get("combined_cpu_accelerator"))
        )
    else:
        for part in ("cpu", "accelerator"):
            block = comp.get(part)
            if not isinstance(block, dict):
                out.problems.append(f"{label}.components.{part} is required")
                parts.append(None)
                continue
            ensemble = whole_count(ns.get("system_node_ensemble_id"))
            fallback = (
                defaults.cpu(
                    block.get("model"),
                    cores_by_ensemble.get(ensemble) if ensemble is not None else None,
                )
                if part == "cpu"
                else defaults.accelerator(block.get("model"))
            )
            count = whole_count(block.get("count_per_node"))
            tdp = watts_of(f"{label}.components.{part}.tdp_per_unit", block.get("tdp_per_unit"), fallback)
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
        return None
    return sum(p for p in parts if p is not None)


def _settle_provisioned_kw(desc: dict[str, Any], out: Provisioned, watts_of: _Watts) -> None:
    """The provisioned power: the declared figure when given (it governs), else the computed total."""
    estimated = watts_of.estimated
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


def _check_stated_figures(
    desc: dict[str, Any],
    out: Provisioned,
    cooling: Any,
    overhead: float,
    *,
    computed_tol_w: float,
    kw_tol: float,
) -> None:
    """A computed descriptor's own `computed` block and provisioned_power_kw must match the computed figures."""
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
                non_negative(theirs) is None or abs(float(theirs) - value) > computed_tol_w
            ):
                out.problems.append(f"computed.{key} = {theirs!r} but the descriptor gives {value:g} W")
        theirs = stated.get("overhead_fraction")
        if theirs is not None and (non_negative(theirs) is None or abs(float(theirs) - overhead) > 1e-9):
            out.problems.append(
                f"computed.overhead_fraction = {theirs!r} but cooling {cooling!r} means {overhead}"
            )
    stated_kw = desc.get("provisioned_power_kw")
    if (
        stated_kw is not None
        and out.provisioned_kw is not None
        and (non_negative(stated_kw) is None or abs(float(stated_kw) - out.provisioned_kw) > kw_tol)
    ):
        out.problems.append(
            f"provisioned_power_kw = {stated_kw!r} but the descriptor gives {out.provisioned_kw:.2f} kW"
        )
