"""The power descriptor's sourced values (Appendix E.1: a value, its source type and its source) and the
MLCommons defaults of Appendix D that fill the values a descriptor leaves absent."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from checker.recompute.numbers import finite

W_PER_KW = 1000.0


def non_negative(value: Any) -> float | None:
    """A finite, non-negative number, else None."""
    value = finite(value)
    return value if value is not None and value >= 0 else None


def whole_count(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0 or value > 10**9:
        return None
    return value


def squash(name: Any) -> str:
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
        squashed = squash(model)
        for key, watts in self.table.get("accelerators") or ():
            if squashed and str(key) in squashed:
                return float(watts), "D.3"
        return None

    def switch(self, model: Any, cabling: Any) -> tuple[float, str] | None:
        """D.4's typical power of a reference switch under the declared cabling."""
        squashed = squash(model)
        for key, by_cabling in (self.table.get("switches") or {}).items():
            if squashed and str(key) in squashed and isinstance(cabling, str) and cabling in by_cabling:
                return float(by_cabling[cabling]), "D.4"
        return None

    def nic(self) -> tuple[float, str] | None:
        watts = self.table.get("nic_w")
        return None if watts is None else (float(watts), "D.4")


def sourced_watts(value: Any) -> float | None:
    """Watts of an Appendix E sourced value ({value_w} or {value_kw}); None when absent or malformed."""
    if not isinstance(value, dict):
        return None
    if value.get("value_w") is not None:
        return non_negative(value.get("value_w"))
    kw = non_negative(value.get("value_kw"))
    return None if kw is None else kw * W_PER_KW


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
