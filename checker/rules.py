"""The public MLPerf Endpoints rules as checks on a layout and its recomputed points (docs/rules.md).

Rule ids are the official checker's where the rule is the same; parameters come from the ruleset
file. Every descriptor is hostile: a wrong type, a missing key, NaN or a huge number becomes a
finding, never an exception.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

from checker.inputs import Layout, Limits, PointInput
from checker.loaders import load_json, load_yaml
from checker.numbers import finite
from checker.power import (
    AppendixD,
    TraceError,
    analyse_trace,
    clock_anchor,
    load_trace,
    provisioned_power,
    read_manifest,
    scan_window_ns,
)
from checker.regions import RegionError, Regions, compute_regions
from checker.report import Findings, PointResult, Report
from checker.ruleset import Ruleset, load_ruleset

MAX_CONCURRENCY = 10**7  # far above any real system; keeps region arithmetic in float range
_COHORT_RE = re.compile(r"\d{4}-\d{2}-C[01]")
_SEED_FIELDS = {  # point.yaml runtime_settings.runtime name -> config.yaml settings.runtime name
    "scheduler_rng_seed": "scheduler_random_seed",
    "sample_index_rng_seed": "dataloader_random_seed",
}
OFFICIAL_ACCOUNTING_NOTE = (
    "The official checker 1.5.3.0 requires completed + failed == issued; the client counts failed requests "
    "inside completed, so the portal requires completed == issued and failed <= completed."
)


# ---------------------------------------------------------------- small safe readers


def count(value: Any) -> int | None:
    """A non-negative integer (not a bool), else None."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value


def dig(obj: Any, *keys: Any) -> Any:
    for key in keys:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(key)
    return obj


def text(value: Any) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


def percentile(block: Any, p: float) -> Any:
    table = dig(block, "percentiles")
    if not isinstance(table, dict):
        return None
    for key, value in table.items():
        try:
            if float(key) == p:
                return value
        except (TypeError, ValueError, OverflowError):
            continue
    return None


def hashable(value: Any) -> Any:
    """The value itself when it can go in a set, else its short repr (lists and dicts from hostile files)."""
    return value if isinstance(value, str | int | float | bool | type(None)) else short(value)


def short(value: Any, limit: int = 60) -> str:
    s = repr(value)
    return s if len(s) <= limit else s[: limit - 3] + "..."


def cohort_key(value: Any) -> tuple[int, int, int] | None:
    """(year, month, index) of a YYYY-MM-C0/C1 cohort, or None when malformed (month outside 1..12)."""
    if not isinstance(value, str) or not _COHORT_RE.fullmatch(value.strip()):
        return None
    year, month, index = int(value[:4]), int(value[5:7]), int(value.strip()[-1])
    return (year, month, index) if 1 <= month <= 12 else None


def cohort_after(cohort: tuple[int, int, int], steps: int) -> tuple[int, int, int]:
    """The cohort `steps` publications after `cohort` (two per month)."""
    year, month, index = cohort
    for _ in range(steps):
        if index == 0:
            index = 1
        elif month == 12:
            year, month, index = year + 1, 1, 0
        else:
            month, index = month + 1, 0
    return year, month, index


def cohort_name(cohort: tuple[int, int, int]) -> str:
    return f"{cohort[0]:04d}-{cohort[1]:02d}-C{cohort[2]}"


# ---------------------------------------------------------------- per-point state


BUILDER_KEYS = ("shared_src", "shared_docs")
REQUIRED_POINT_FILES = {  # file of every point folder -> the rule that reports it missing
    "point.yaml": "measurement-points-present",
    "system_desc.json": "system-description-present",
    "result_summary.json": "result-summary-present",
    "config.yaml": "config-file-present",
}


class _Point:
    """One load point with its parsed descriptors and the metric basis the rules judge."""

    def __init__(self, pin: PointInput, result: PointResult):
        self.pin = pin
        self.result = result
        self.key = pin.key
        self.c = pin.concurrency
        self.yaml: dict = {}
        self.yaml_ok = False
        self.sd: dict | None = None
        self.config: dict | None = None
        self.accuracy: dict | None = None
        self.stored: dict = {}  # result_summary.json exactly as stored (no derived keys)
        self.region: str | None = None

    @property
    def summary(self) -> dict | None:
        """Metric basis: recomputed from the raw log when available, else the claimed summary."""
        if isinstance(self.result.recomputed, dict):
            return self.result.recomputed
        return self.result.claimed if isinstance(self.result.claimed, dict) else None

    @property
    def basis(self) -> str:
        return "recomputed" if isinstance(self.result.recomputed, dict) else "claimed"

    @property
    def offline(self) -> str | None:
        return self.yaml.get("offline") if isinstance(self.yaml.get("offline"), str) else None

    @property
    def agentic(self) -> bool:
        return dig(self.yaml, "runtime_settings", "load_pattern") == "agentic_inference"

    def file(self, name: str) -> str:
        return self.pin.display_of(name)

    def system_tps(self) -> float | None:
        s = self.summary or {}
        derived = _derived_tps(s)
        return derived if derived is not None else finite(s.get("system_tps"))

    def tpot_p90_ms(self) -> float | None:
        p90 = finite(percentile((self.summary or {}).get("tpot"), 90.0))
        return None if p90 is None else p90 / 1e6


def _derived_tps(summary: dict) -> float | None:
    total = finite(dig(summary, "output_sequence_lengths", "total"))
    duration = finite(summary.get("duration_ns"))
    if total is None or duration is None or duration <= 0:
        return None
    return total / (duration / 1e9)


# ---------------------------------------------------------------- the rule run


class RuleRun:
    """Holds the layout, report and ruleset of one run; each method checks one group of rules."""

    def __init__(self, layout: Layout, report: Report, ruleset: Ruleset, limits: Limits | None = None):
        self.layout = layout
        self.report = report
        self.rs = ruleset
        self.f: Findings = report.findings
        self.limits = limits or Limits()
        by_key = {p.key: p for p in report.points}
        self.points: list[_Point] = []
        for pin in sorted(layout.points, key=lambda p: (p.system, p.model, p.concurrency)):
            result = by_key.get(pin.key)
            if result is None:  # rules run standalone (tests, tools): claimed straight from the file
                result = PointResult(
                    system=pin.system, model=pin.model, concurrency=pin.concurrency, source=pin.source
                )
                report.points.append(result)
            self.points.append(_Point(pin, result))

    # -- loading

    def _load(self, pt: _Point, name: str, *, quiet: bool = False) -> Any:
        path = pt.pin.files.get(name)
        if path is None:
            return None
        findings = Findings() if quiet else self.f
        loader = load_yaml if name.endswith(".yaml") else load_json
        try:
            return loader(path, display=pt.file(name), findings=findings, limits=self.limits, point=pt.key)
        except Exception as exc:  # noqa: BLE001 - a loader bug must not lose the rest of the report
            findings.error(
                "descriptor-unreadable",
                f"{name} could not be read: {type(exc).__name__}",
                file=pt.file(name),
                point=pt.key,
            )
            return None

    def load_point(self, pt: _Point) -> None:
        data = self._load(pt, "point.yaml")
        if isinstance(data, dict):
            pt.yaml, pt.yaml_ok = data, True
        elif data is not None:
            self.f.error(
                "point-config-valid",
                "point.yaml must be a mapping of disclosure fields.",
                file=pt.file("point.yaml"),
                point=pt.key,
            )
        sd = self._load(pt, "system_desc.json")
        pt.sd = sd if isinstance(sd, dict) else None
        cfg = self._load(pt, "config.yaml")
        pt.config = cfg if isinstance(cfg, dict) else None
        if cfg is not None and not isinstance(cfg, dict):
            self.f.error(
                "config-file-present",
                "config.yaml must be a mapping (the client's run configuration).",
                file=pt.file("config.yaml"),
                point=pt.key,
            )
        acc = self._load(pt, "accuracy_results.json")
        pt.accuracy = acc if isinstance(acc, dict) else None
        stored = self._load(pt, "result_summary.json", quiet=True)  # the lead's check reports its problems
        pt.stored = stored if isinstance(stored, dict) else {}
        if pt.result.claimed is None and pt.stored:
            from checker.events import derive_official

            try:
                derived = derive_official(pt.stored, concurrency=pt.c)
            except (ArithmeticError, TypeError, ValueError):  # hostile numbers; the rules below report them
                derived = {}
            pt.result.claimed = {**pt.stored, **{k: v for k, v in derived.items() if k not in pt.stored}}

    # -- entry

    def run(self) -> None:
        for pt in self.points:
            self.load_point(pt)
        self.structure()
        curves: dict[tuple[str, str], list[_Point]] = {}
        for pt in self.points:
            curves.setdefault((pt.pin.system, pt.pin.model), []).append(pt)
        provisioned = self.system_power()
        for (system, model), pts in curves.items():
            self.curve(system, model, pts, provisioned.get(system))
        if self.points:
            if any(pt.pin.files.get("accuracy_results.json") for pt in self.points):
                self.f.info("accuracy-present", "At least one curve carries accuracy results.")
            else:
                self.f.error(
                    "accuracy-present",
                    "No point carries accuracy_results.json.",
                    fix="Run the accuracy dataset at the mandatory points and include accuracy_results.json.",
                )

    # ------------------------------------------------------------ structure

    def structure(self) -> None:
        lay = self.layout
        if lay.root is not None:
            for name in ("results", "docs"):
                if (lay.root / name).is_dir():
                    self.f.info(
                        "required-dir",
                        f"Found required directory: {name}/",
                        file=f"{lay.root_display}{name}/",
                    )
                else:
                    self.f.error(
                        "required-dir",
                        f"Required directory {name}/ is missing.",
                        file=f"{lay.root_display}{name}/",
                        fix=f"Add {name}/ at the submission root (see the bundle layout).",
                    )
        if lay.points:
            if lay.src_readmes:
                self.f.info("src-readme", f"{len(lay.src_readmes)} implementation README(s) present.")
            else:
                self.f.error(
                    "src-readme",
                    "No src/<implementation>/README.md found.",
                    fix="Add src/<implementation>/README.md describing how to reproduce the runs.",
                )
            if not lay.docs:
                self.f.warning(
                    "docs-present",
                    "No documentation (docs/*.md) found.",
                    fix="Add the disclosure documents under docs/.",
                )
        if not lay.points and lay.readable_inputs:
            self.f.error(
                "measurement-points-present", "No load point (results/<system>/<model>/r<C>/) was found."
            )
        for pt in self.points:
            for name, rule in REQUIRED_POINT_FILES.items():
                if name not in pt.pin.files:
                    self.f.error(
                        rule,
                        f"r{pt.c}: {name} is missing.",
                        file=pt.file(name),
                        point=pt.key,
                        fix=f"Add {name} to the point folder (the official run archive carries it).",
                    )
            for name in ("report.txt", "sample_idx_map.json", "final_snapshot.json"):
                if name not in pt.pin.files:
                    self.f.warning(
                        "point-files-complete",
                        f"r{pt.c}: {name} is missing.",
                        file=pt.file(name),
                        point=pt.key,
                        fix=f"Include the client's {name} from the run folder.",
                    )

    # ------------------------------------------------------------ power descriptor (per system)

    def _system_power_copies(self, system: str, first: Any, first_display: str, first_path: Path) -> None:
        """Run archives carry one system_power.json each: every copy must say the same (the official
        bundle builder refuses differing copies; a check that read only the first would be blind)."""
        for pt in self.points:
            path = pt.pin.files.get("system_power.json")
            if pt.pin.system != system or path is None or Path(path) == Path(first_path):
                continue
            copy = load_json(
                path, display=pt.file("system_power.json"), findings=Findings(), limits=self.limits
            )
            if copy is not None and copy != first:
                keys = (
                    sorted(k for k in set(first) | set(copy) if first.get(k) != copy.get(k))
                    if (isinstance(first, dict) and isinstance(copy, dict))
                    else []
                )
                self.f.error(
                    "system-power-consistency",
                    f"r{pt.c}: system_power.json differs from the copy in {first_display}"
                    + (f" (keys: {', '.join(keys[:8])})" if keys else "")
                    + "; one system has one "
                    "provisioned power.",
                    file=pt.file("system_power.json"),
                    point=pt.key,
                    fix="Package every run archive of the system with the same system_power.json.",
                )

    def system_power(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        systems = sorted({pt.pin.system for pt in self.points})
        overheads = {
            k: float(v) for k, v in (self.rs.get("power", "overhead_fraction", default={}) or {}).items()
        }
        optional = set(self.rs.get("disclosure", "power_optional_divisions", default=[]) or [])
        for system in systems:
            path = self.layout.system_power.get(system)
            first = next(pt for pt in self.points if pt.pin.system == system)
            if path is None:
                path = first.pin.files.get("system_power.json")
            display = self.layout.displays.get(path) if path is not None else None
            display = display or (
                first.file("system_power.json") if path is not None else f"results/{system}/system_power.json"
            )
            division = text(dig(first.sd, "division")) or text(first.yaml.get("division"))
            if path is None:
                if division and division.strip().lower() in optional:
                    self.f.info(
                        "power-descriptor",
                        f"{system}: no system_power.json, optional for {division}.",
                        file=display,
                    )
                else:
                    self.f.error(
                        "power-descriptor",
                        f"{system}: system_power.json is missing.",
                        file=display,
                        fix="Add results/<system>/system_power.json (Appendix E descriptor).",
                    )
                continue
            desc = load_json(path, display=display, findings=self.f, limits=self.limits)
            if desc is None:
                continue
            self._system_power_copies(system, desc, display, path)
            prov = provisioned_power(
                desc,
                overheads=overheads,
                computed_tol_w=float(self.rs.get("power", "computed_tolerance_w", default=0.5)),
                kw_tol=float(self.rs.get("power", "provisioned_kw_tolerance", default=0.005)),
                defaults=AppendixD(self.rs.get("power", "appendix_d", default={}) or {}),
                cores_by_ensemble=self._node_facts(system, "host_processor_core_count"),
            )
            accelerators = self._node_facts(system, "accelerators_per_node")
            for s in prov.sets:  # a published-power set takes accelerators per node from system_desc.json
                if s.get("accelerators_per_node") is None:
                    s["accelerators_per_node"] = accelerators.get(s["ensemble"])
            cooling_sd = self._system_cooling(system)
            if (
                cooling_sd
                and isinstance(desc, dict)
                and desc.get("cooling") != cooling_sd
                and not prov.problems
            ):
                prov.problems.append(
                    f"cooling {desc.get('cooling')!r} disagrees with system_desc.json cooling {cooling_sd!r}"
                )
                prov.provisioned_kw = None
            for problem in prov.problems:
                self.f.error(
                    "power-descriptor",
                    f"{system}: {problem}",
                    file=display,
                    fix="Correct system_power.json so that its figures follow from its components.",
                )
            if prov.provisioned_kw is not None:
                if prov.estimated:
                    self.f.warning(
                        "power-estimated",
                        f"{system}: MLC Estimated Power: {'; '.join(prov.estimated)} \u2014 Appendix D "
                        "values reach provisioned_power_kw.",
                        file=display,
                        fix="Give every power figure with a public source (vendor_spec, publication, "
                        "public_statement) to drop the MLC Estimated Power tag.",
                    )
                self.f.info(
                    "power-descriptor", f"Provisioned power {prov.provisioned_kw:.2f} kW", file=display
                )
                out[system] = prov
        return out

    def _node_facts(self, system: str, key: str) -> dict[int, int]:
        """Per system_node_ensemble_id: host_processor_core_count or accelerators_per_node from system_desc.json."""
        first = next((pt for pt in self.points if pt.pin.system == system and pt.sd is not None), None)
        nodes = first.sd.get("node_types") if first is not None else None
        out: dict[int, int] = {}
        for node in nodes if isinstance(nodes, list) else []:
            if not isinstance(node, dict) or count(node.get("system_node_ensemble_id")) is None:
                continue
            if key == "accelerators_per_node":
                info = node.get("accelerator_info")
                entries = info if isinstance(info, list) and info else [node]
                values = [count(e.get(key)) for e in entries if isinstance(e, dict)]
                values = [v for v in values if v is not None]
                value = sum(values) if values else None
            else:
                value = count(node.get(key))
            if value is not None:
                out[node["system_node_ensemble_id"]] = value
        return out

    def _system_cooling(self, system: str) -> str | None:
        for pt in self.points:
            if pt.pin.system != system or pt.sd is None:
                continue
            values = {pt.sd.get("cooling")} if text(pt.sd.get("cooling")) else set()
            for node in pt.sd.get("node_types") or [] if isinstance(pt.sd.get("node_types"), list) else []:
                if isinstance(node, dict) and text(node.get("cooling")):
                    values.add(node["cooling"])
            values = {v.strip().lower() for v in values}
            if len(values) == 1:
                return values.pop()
            return "air" if values else None  # mixed cooling resolves to the conservative (air) overhead
        return None

    # ------------------------------------------------------------ one curve

    def curve(self, system: str, model: str, pts: list[_Point], prov: Any) -> None:
        where = f"results/{system}/{model}/"
        self.point_disclosure(pts)
        self.system_description(pts, where)
        c_max = self.model_name_and_c_max(model, pts, where)
        override, override_ok = self.c_min_override(pts, where)
        regions = self.regions(pts, c_max, where, override=override) if override_ok else None
        self.point_count_and_offline(pts, c_max, where)
        self.seeds(pts, where)
        self.drafters(model, pts, where)
        for pt in pts:
            self.load_and_streaming(pt)
            self.warmup(pt)
            self.steady_state(pt)
            self.duration_and_queries(pt, regions)
            self.metric_consistency(pt)
        self.tps_utilization(pts)
        self.accuracy(model, pts, regions, where)
        self.agentic_accuracy(model, pts, regions, where)
        for pt in pts:
            self.power_point(pt, prov)
            if prov is not None:
                self.engagement(pt, prov)
        self.benchmark_type(pts, where)

    # -- point.yaml vocabulary and completeness

    def point_disclosure(self, pts: list[_Point]) -> None:
        required = self.rs.get("disclosure", "point_required", default=[]) or []
        offline_values = self.rs.get("offline", "values", default=[]) or []
        declarable = self.rs.get("regions", "declarable", default=[]) or []
        for pt in pts:
            if not pt.yaml_ok:
                continue
            y, file = pt.yaml, pt.file("point.yaml")
            # The official bundle builder writes the bundle-internal paths; a run archive carries its
            # own src/ and documentation/ instead, and the portal assembles the bundle itself.
            supplied = BUILDER_KEYS if pt.pin.source != "bundle" else ()
            missing = [k for k in required if y.get(k) in (None, "") and k not in supplied]
            if missing:
                self.f.error(
                    "point-disclosure-complete",
                    f"r{pt.c}: point.yaml lacks {', '.join(missing)}.",
                    file=file,
                    point=pt.key,
                    fix="Fill every disclosure field of point.yaml.",
                )
            conc = y.get("concurrency")
            if conc is not None and (count(conc) is None or conc != pt.c):
                self.f.error(
                    "point-config-valid",
                    f"r{pt.c}: point.yaml concurrency {short(conc)} does not match the folder r{pt.c}.",
                    file=file,
                    point=pt.key,
                    pointer="/concurrency",
                    fix="Make point.yaml concurrency equal to the r<C> folder's C.",
                )
            off = y.get("offline")
            if off is not None and off not in offline_values:
                self.f.error(
                    "offline-declared",
                    f"r{pt.c}: offline {short(off)} is not one of {', '.join(offline_values)}.",
                    file=file,
                    point=pt.key,
                    pointer="/offline",
                )
            region = y.get("region")
            if region is not None and region not in declarable:
                self.f.error(
                    "region-declared",
                    f"r{pt.c}: region {short(region)} is not one of {', '.join(declarable)}.",
                    file=file,
                    point=pt.key,
                    pointer="/region",
                )
            cohort = y.get("target_cohort")
            if cohort is not None and not (isinstance(cohort, str) and _COHORT_RE.fullmatch(cohort)):
                self.f.error(
                    "target-cohort",
                    f"r{pt.c}: target_cohort {short(cohort)} is not YYYY-MM-C0 or YYYY-MM-C1.",
                    file=file,
                    point=pt.key,
                    pointer="/target_cohort",
                )
            if self.layout.root is not None:
                for key in BUILDER_KEYS:
                    value = y.get(key)
                    if value is None:
                        continue
                    if not self._resolves(value):
                        self.f.error(
                            "shared-path-resolution",
                            f"r{pt.c}: {key} {short(value)} does not name a folder of the submission.",
                            file=file,
                            point=pt.key,
                            pointer=f"/{key}",
                        )

    def _resolves(self, value: Any) -> bool:
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
        try:
            return (self.layout.root / value).is_dir()
        except (OSError, ValueError):
            return False

    # -- system description: every copy against the first

    def system_description(self, pts: list[_Point], where: str) -> None:
        per_point = set(self.rs.get("disclosure", "system_desc_per_point", default=[]) or [])
        present = [pt for pt in pts if pt.sd is not None]
        if not present:
            return
        ref = present[0]
        ref_id = {k: v for k, v in ref.sd.items() if k not in per_point}
        bad = 0
        for pt in present[1:]:
            ident = {k: v for k, v in pt.sd.items() if k not in per_point}
            if ident != ref_id:
                bad += 1
                differing = sorted(k for k in set(ident) | set(ref_id) if ident.get(k) != ref_id.get(k))
                self.f.error(
                    "system-description-consistency",
                    f"r{pt.c}: system_desc.json differs from r{ref.c}'s in {', '.join(differing[:10])}"
                    + (" ..." if len(differing) > 10 else ""),
                    file=pt.file("system_desc.json"),
                    point=pt.key,
                    fix="Every point of a curve must describe the same system; only per-point fields "
                    "(parallelism, batch, tps_utilization) may differ.",
                )
        if not bad:
            self.f.info(
                "system-description-consistency",
                f"{len(present)} point(s) agree on the system description",
                file=where,
            )

    # -- model name and the declared maximum concurrency

    def model_name_and_c_max(self, model: str, pts: list[_Point], where: str) -> int | None:
        names = {}
        for pt in pts:
            name = pt.yaml.get("model_name")
            if name is not None:
                names.setdefault(name if isinstance(name, str) else short(name), pt)
        for name, pt in names.items():
            if name in self.rs.models:
                self.f.info(
                    "model-name-valid",
                    f"model_name {name!r} is an allowed model",
                    file=pt.file("point.yaml"),
                    point=pt.key,
                )
            else:
                self.f.error(
                    "model-name-valid",
                    f"model_name {short(name)} is not a benchmark model of {self.rs.name} "
                    f"({', '.join(self.rs.models)}).",
                    file=pt.file("point.yaml"),
                    point=pt.key,
                    pointer="/model_name",
                    fix="Use the canonical model name from the ruleset.",
                )
        if len(names) > 1:
            self.f.error(
                "config-consistency-model",
                f"Points disagree on model_name: {', '.join(sorted(names))}.",
                file=where,
            )
        elif names and next(iter(names)) != model:
            self.f.error(
                "model-name-consistency",
                f"Folder {model!r} does not match model_name {next(iter(names))!r}.",
                file=where,
                fix="Name results/<system>/<model_name>/ after point.yaml model_name.",
            )
        datasets = {
            hashable(pt.yaml.get("dataset")) for pt in pts if pt.yaml_ok and pt.offline != "dedicated"
        }
        datasets.discard(None)
        if len(datasets) > 1:
            self.f.error(
                "config-consistency-dataset",
                f"Points disagree on dataset: {', '.join(sorted(map(short, datasets)))}.",
                file=where,
            )

        # C_max: system_desc.json max_supported_concurrency, cross-checked against every point.yaml
        c_max = None
        for pt in pts:
            if pt.sd is None:
                continue
            raw = pt.sd.get("max_supported_concurrency")
            value = count(raw)
            if value is None or value == 0 or value > MAX_CONCURRENCY:
                self.f.error(
                    "max-concurrency-declared",
                    f"r{pt.c}: system_desc.json max_supported_concurrency {short(raw)} is not a positive integer.",
                    file=pt.file("system_desc.json"),
                    point=pt.key,
                    pointer="/max_supported_concurrency",
                )
                continue
            c_max = c_max or value
            break
        for pt in pts:
            raw = pt.yaml.get("max_supported_concurrency")
            if raw is None or c_max is None:
                continue
            if raw != c_max or isinstance(raw, bool):
                self.f.error(
                    "max-concurrency-declared",
                    f"r{pt.c}: point.yaml max_supported_concurrency {short(raw)} differs from system_desc.json's {c_max}.",
                    file=pt.file("point.yaml"),
                    point=pt.key,
                    pointer="/max_supported_concurrency",
                    fix="Declare the same maximum supported concurrency in point.yaml and system_desc.json.",
                )
        if c_max is not None:
            fixed = [pt.c for pt in pts if pt.offline != "dedicated"]
            top = max(fixed) if fixed else None
            note = "" if top is None or top >= c_max else f"; the highest measured point is r{top}"
            self.f.info("max-concurrency-declared", f"max_supported_concurrency = {c_max}{note}", file=where)
        return c_max

    # -- regions: placement and coverage

    def regions(
        self, pts: list[_Point], c_max: int | None, where: str, *, override: int | None = None
    ) -> Regions | None:
        if c_max is None:
            self.f.warning(
                "region-basis",
                "No readable max_supported_concurrency, so region boundaries cannot be "
                "computed and region rules were skipped.",
                file=where,
                fix="Declare max_supported_concurrency in every point's system_desc.json.",
            )
            return None
        fixed = [pt.c for pt in pts if pt.offline != "dedicated"] or [pt.c for pt in pts]
        ultra = self.rs.ultra_low_max
        c_min = override if override is not None else min(min(fixed), ultra)
        if override is not None and override not in {pt.c for pt in pts if pt.offline != "dedicated"}:
            self.f.error(
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
                margin_fraction=self.rs.margin_fraction,
                c_min_overridden=override is not None,
            )
        except RegionError as exc:
            self.f.error(
                "region-computation",
                f"Region boundaries cannot be computed: {exc}.",
                file=where,
                fix=f"max_supported_concurrency must exceed {ultra}.",
            )
            return None
        if override is not None:
            self.f.info(
                "region-basis",
                f"C_min = {c_min} declared by c_min_override; Ultra Low Concurrency spans 1\u2013{c_min}",
                file=where,
            )
        else:
            self.f.info("region-basis", f"C_min = {c_min} derived from all {len(pts)} points", file=where)
        for pt in pts:
            pt.result.extra["regions"] = regions.to_dict()
            if pt.offline == "dedicated":
                pt.region = "offline"
                pt.result.extra["region"] = "offline"
                continue
            region = regions.classify(pt.c)
            pt.region = region
            pt.result.extra["region"] = region
            file = pt.file("point.yaml")
            if region is None:
                self.f.error(
                    "concurrency-in-range",
                    f"r{pt.c}: concurrency {pt.c} is above the margin end {regions.margin.end} "
                    f"({1 + self.rs.margin_fraction:.2f} x C_max {c_max}).",
                    file=file,
                    point=pt.key,
                    fix="Raise max_supported_concurrency or drop the point.",
                )
                continue
            declared = pt.yaml.get("region")
            if (
                isinstance(declared, str)
                and declared != "submitters_choice"
                and declared in (self.rs.get("regions", "names", default=[]) or [])
            ):
                if declared != region:
                    self.f.warning(
                        "region-placement",
                        f"Declared region {declared!r} does not match concurrency {pt.c} (computed {region!r}).",
                        file=file,
                        point=pt.key,
                        pointer="/region",
                        fix=f"Declare region: {region} (boundaries {regions.to_dict()}).",
                    )
        present = [pt.c for pt in pts if pt.offline != "dedicated"]
        ultra_pts = sorted(c for c in present if regions.ultra_low.contains(c))
        ultra = regions.ultra_low.end
        if ultra_pts:
            self.f.info(
                "ultra-low-concurrency-coverage",
                f"Ultra Low Concurrency covered: {ultra_pts} (\u2264 {ultra})",
                file=where,
            )
        else:
            self.f.error(
                "ultra-low-concurrency-coverage",
                f"No point at concurrency 1\u2013{ultra}.",
                file=where,
                fix=f"Measure at least one point at concurrency \u2264 {ultra}.",
            )
        margin_high = bool(self.rs.get("regions", "margin_counts_for_high", default=False))
        for rule, label, name in (
            ("low-concurrency-coverage", "Low Concurrency", "low_concurrency"),
            ("med-concurrency-coverage", "Medium Concurrency", "med_concurrency"),
            ("high-concurrency-coverage", "High Concurrency", "high_concurrency"),
        ):
            bounds = getattr(regions, name)
            covered = sorted(
                c
                for c in present
                if regions.classify(c) == name
                or (margin_high and name == "high_concurrency" and regions.classify(c) == "margin")
            )
            if covered:
                self.f.info(rule, f"{label} region covered: {covered} (range {bounds})", file=where)
            else:
                self.f.error(
                    rule,
                    f"No point in the {label} region (range {bounds}).",
                    file=where,
                    fix=f"Measure at least one point at a concurrency in {bounds}.",
                )
        return regions

    # -- c_min_override (system_desc.json): unanimous, an integer in 1..32, a measured point

    def c_min_override(self, pts: list[_Point], where: str) -> tuple[int | None, bool]:
        """The curve's declared C_min, and whether the region rules may run (False after an error)."""
        if not any(pt.sd is not None and "c_min_override" in pt.sd for pt in pts):
            return None, True
        ultra = self.rs.ultra_low_max
        values: set[int] = set()
        ok = True
        for pt in pts:
            file = pt.file("system_desc.json")
            if pt.sd is None or "c_min_override" not in pt.sd:
                self.f.error(
                    "c-min-override",
                    f"r{pt.c}: no c_min_override; every point on a curve must declare "
                    "the same c_min_override or all must omit it.",
                    file=file,
                    point=pt.key,
                    pointer="/c_min_override",
                    fix="Declare the same c_min_override in every point.",
                )
                ok = False
                continue
            value = pt.sd["c_min_override"]
            if type(value) is not int or not 1 <= value <= ultra:
                self.f.error(
                    "c-min-override",
                    f"r{pt.c}: c_min_override must be a JSON integer in [1,{ultra}], got {short(value)}.",
                    file=file,
                    point=pt.key,
                    pointer="/c_min_override",
                )
                ok = False
                continue
            values.add(value)
        if len(values) > 1:
            self.f.error(
                "c-min-override",
                f"Conflicting c_min_override declarations on this curve: {sorted(values)}.",
                file=where,
                fix="Declare one c_min_override for the whole curve.",
            )
            ok = False
        if not ok or not values:
            return None, False
        return values.pop(), True

    # -- point count and Offline

    def point_count_and_offline(self, pts: list[_Point], c_max: int | None, where: str) -> None:
        agentic = any(pt.agentic for pt in pts)
        declared = [pt for pt in pts if pt.offline in ("dedicated", "elected")]
        minimum = (
            self.rs.min_points_dedicated_offline
            if any(pt.offline == "dedicated" for pt in declared) and not agentic
            else self.rs.min_points
        )
        n = len(pts)
        if n < minimum:
            self.f.error(
                "point-count",
                f"{n} points < minimum {minimum}.",
                file=where,
                fix=f"Submit at least {minimum} load points for the curve.",
            )
        else:
            self.f.info("point-count", f"Point count OK: {n}", file=where)
        if n > self.rs.max_points:
            self.f.error("point-cap", f"{n} points > maximum {self.rs.max_points}.", file=where)
        if agentic:
            if declared:
                self.f.error(
                    "offline-point-present", "An agentic curve may not carry an Offline point.", file=where
                )
            return
        if len(declared) > 1:
            self.f.error(
                "offline-point-present",
                f"{len(declared)} points declare Offline ({', '.join(f'r{p.c}' for p in declared)}); exactly one may.",
                file=where,
            )
            return
        if not declared:
            self.f.error(
                "offline-point-present",
                "No point declares offline: dedicated or elected.",
                file=where,
                fix="Elect the C_max point (offline: elected) or add a dedicated Offline run.",
            )
            return
        off = declared[0]
        off.result.extra["offline"] = off.offline
        if off.offline == "elected":
            if c_max is not None and off.c != c_max:
                self.f.error(
                    "offline-point-present",
                    f"The elected Offline point r{off.c} is not at C_max = {c_max}.",
                    file=where,
                    fix="Elect the point measured at max_supported_concurrency.",
                )
                return
            self.f.info("offline-point-present", f"Offline point: r{off.c} (elected)", file=where)
            return
        self.f.info("offline-point-present", f"Offline point: r{off.c} (dedicated)", file=where)
        if c_max is None:
            return
        if off.c < c_max:
            self.f.warning(
                "offline-ordering", f"Dedicated Offline concurrency {off.c} < C_max {c_max}.", file=where
            )
        at_cmax = next((pt for pt in pts if pt.c == c_max and pt is not off), None)
        off_tps, cmax_tps = off.system_tps(), at_cmax.system_tps() if at_cmax else None
        margin = float(self.rs.get("offline", "dedicated_tps_margin", default=0.98))
        if off_tps is not None and cmax_tps is not None:
            floor = margin * cmax_tps
            if off_tps < floor:
                self.f.warning(
                    "offline-ordering",
                    f"Dedicated Offline system_tps {off_tps:.3f} < {margin} x system_tps at C_max "
                    f"({cmax_tps:.3f}) = {floor:.3f}.",
                    file=where,
                    fix=f"A dedicated Offline run must reach the C_max throughput within {1 - margin:.0%}.",
                )
            else:
                self.f.info(
                    "offline-ordering",
                    f"Dedicated Offline system_tps {off_tps:.3f} \u2265 {floor:.3f}",
                    file=where,
                )

    # -- seeds

    def seeds(self, pts: list[_Point], where: str) -> None:
        declared = {hashable(pt.yaml.get("seed_set")) for pt in pts if pt.yaml.get("seed_set") is not None}
        if len(declared) > 1:
            self.f.error(
                "seed-set-consistency",
                f"Points bind different seed sets: {', '.join(sorted(map(short, declared)))}.",
                file=where,
                fix="Use one published seed set for every point.",
            )
        elif declared:
            self.f.info(
                "seed-set-consistency", f"All points bind seed set {short(next(iter(declared)))}", file=where
            )
        for pt in pts:
            set_id = pt.yaml.get("seed_set")
            if set_id is None:
                continue
            file = pt.file("point.yaml")
            published = self.rs.seed_sets.get(set_id) if isinstance(set_id, str) else None
            if published is None:
                self.f.error(
                    "seed-set-membership",
                    f"r{pt.c}: seed_set {short(set_id)} is not a published set "
                    f"({', '.join(self.rs.seed_sets) or 'none'}).",
                    file=file,
                    point=pt.key,
                    pointer="/seed_set",
                )
                continue
            runtime = dig(pt.yaml, "runtime_settings", "runtime")
            runtime = runtime if isinstance(runtime, dict) else {}
            mismatched = []
            for name, expected in published.seeds.items():
                value = runtime.get(name)
                if value is None and name in _SEED_FIELDS:  # v0.7 spellings
                    value = runtime.get(_SEED_FIELDS[name])
                if value != expected or isinstance(value, bool):
                    mismatched.append(f"point.yaml {name}={short(value)} (expected {expected})")
            # What the client actually ran: config.yaml, not only the declaration.
            if pt.config is not None:
                cfg_runtime = dig(pt.config, "settings", "runtime")
                cfg_runtime = cfg_runtime if isinstance(cfg_runtime, dict) else {}
                for name, cfg_name in _SEED_FIELDS.items():
                    value = cfg_runtime.get(cfg_name)
                    if value != published.seeds[name] or isinstance(value, bool):
                        mismatched.append(
                            f"config.yaml settings.runtime.{cfg_name}={short(value)} "
                            f"(expected {published.seeds[name]})"
                        )
                value = dig(pt.config, "model_params", "seed")
                if value is not None and value != published.seeds["model_seed"]:
                    mismatched.append(
                        f"config.yaml model_params.seed={short(value)} "
                        f"(expected {published.seeds['model_seed']})"
                    )
            if mismatched:
                self.f.error(
                    "seed-runtime-match",
                    f"r{pt.c}: seeds differ from seed set {published.id}: " + "; ".join(mismatched),
                    file=file,
                    point=pt.key,
                    fix=f"Run the client with the seeds of published set {published.id}.",
                )
            cohort = pt.yaml.get("target_cohort")
            if (
                isinstance(cohort, str)
                and published.adoption_cohorts
                and cohort not in published.adoption_cohorts
            ):
                self.f.error(
                    "seed-set-adoption",
                    f"r{pt.c}: seed set {published.id} may not be adopted for cohort {cohort} "
                    f"(allowed: {', '.join(published.adoption_cohorts)}).",
                    file=file,
                    point=pt.key,
                )

    # -- speculative decoding (section 2.9.4): approved drafter, approval lead time

    def drafters(self, model: str, pts: list[_Point], where: str) -> None:
        speculative = [pt for pt in pts if pt.yaml_ok and pt.yaml.get("speculative_decoding")]
        if not speculative:
            return
        benchmark = next(
            (
                pt.yaml["model_name"]
                for pt in pts
                if isinstance(pt.yaml.get("model_name"), str) and pt.yaml.get("model_name")
            ),
            model,
        )
        spec = self.rs.get("drafters", default={}) or {}
        lead = int(spec.get("approval_lead_cohorts", 2))
        approved = [
            e for e in spec.get("approved") or [] if isinstance(e, dict) and e.get("benchmark") == benchmark
        ]

        def matches(entry: dict, declared: dict) -> bool:
            if entry.get("weight_checksum") is not None:
                return declared.get("weight_checksum") == entry["weight_checksum"]
            if entry.get("target_checksum") is not None:
                return (
                    declared.get("target_checksum") == entry["target_checksum"]
                    and bool(entry.get("configuration"))
                    and declared.get("configuration") == entry["configuration"]
                )
            return False

        for pt in speculative:
            file = pt.file("point.yaml")
            declared = pt.yaml["speculative_decoding"]
            declared = declared if isinstance(declared, dict) else {}
            if not approved:
                self.f.error(
                    "approved-drafter",
                    f"Point {pt.c} uses speculative decoding, but no drafter is approved "
                    f"for {benchmark!r}; section 2.9.4 disallows speculative decoding for a benchmark with no "
                    "approved drafter.",
                    file=file,
                    point=pt.key,
                    pointer="/speculative_decoding",
                    fix="Run without speculative decoding, or wait until a drafter is approved.",
                )
                continue
            entry = next((e for e in approved if matches(e, declared)), None)
            if entry is None:
                self.f.error(
                    "approved-drafter",
                    f"Point {pt.c}: declared drafter matches no approved entry for "
                    f"{benchmark!r}; an entry is identified by weight checksum, or by target checksum plus "
                    "configuration.",
                    file=file,
                    point=pt.key,
                    pointer="/speculative_decoding",
                    fix="Declare weight_checksum (or target_checksum and configuration) of an approved "
                    "drafter.",
                )
                continue
            self.f.info(
                "approved-drafter",
                f"Point {pt.c}: drafter matches an approved entry "
                f"({entry.get('model_id') or entry.get('target_checksum')})",
                file=file,
                point=pt.key,
            )
            target, approved_in = (
                cohort_key(pt.yaml.get("target_cohort")),
                cohort_key(entry.get("approved_cohort")),
            )
            if target is None or approved_in is None:
                self.f.warning(
                    "drafter-approval-lead-time",
                    f"Point {pt.c}: lead time unevaluable \u2014 "
                    f"target_cohort={short(pt.yaml.get('target_cohort'))}, "
                    f"approved_cohort={short(entry.get('approved_cohort'))}.",
                    file=file,
                    point=pt.key,
                )
                continue
            earliest = cohort_after(approved_in, lead)
            if target < earliest:
                self.f.error(
                    "drafter-approval-lead-time",
                    f"Point {pt.c}: drafter approved in {cohort_name(approved_in)}, so the earliest usable "
                    f"target_cohort is {cohort_name(earliest)} ({lead} cohorts later); this submission "
                    f"targets {cohort_name(target)}.",
                    file=file,
                    point=pt.key,
                    pointer="/target_cohort",
                    fix=f"Target cohort {cohort_name(earliest)} or later.",
                )
            else:
                self.f.info(
                    "drafter-approval-lead-time",
                    f"Point {pt.c}: target_cohort {cohort_name(target)} \u2265 "
                    f"earliest usable {cohort_name(earliest)}",
                    file=file,
                    point=pt.key,
                )

    # -- load pattern and streaming, from what the client ran

    def load_and_streaming(self, pt: _Point) -> None:
        allowed = self.rs.get("load_patterns", default=[]) or []
        file = pt.file("point.yaml")
        lp = dig(pt.yaml, "runtime_settings", "load_pattern")
        dedicated = pt.offline == "dedicated"
        if pt.yaml_ok and not dedicated and lp is not None and lp not in allowed:
            self.f.error(
                "load-pattern",
                f"r{pt.c}: load pattern {short(lp)} is not one of {', '.join(allowed)}.",
                file=file,
                point=pt.key,
                pointer="/runtime_settings/load_pattern",
            )
        if pt.config is None:
            return
        cfile = pt.file("config.yaml")
        ctype = dig(pt.config, "settings", "load_pattern", "type")
        target = dig(pt.config, "settings", "load_pattern", "target_concurrency")
        if not dedicated:
            if ctype not in allowed:
                self.f.error(
                    "load-pattern",
                    f"r{pt.c}: the client ran load pattern {short(ctype)}; "
                    f"the rules allow {', '.join(allowed)} (fixed concurrency).",
                    file=cfile,
                    point=pt.key,
                    pointer="/settings/load_pattern/type",
                    fix="Run the client with --load-pattern concurrency.",
                )
            elif ctype == "concurrency" and target != pt.c:
                self.f.error(
                    "load-pattern",
                    f"r{pt.c}: the client ran target_concurrency {short(target)}, not {pt.c}.",
                    file=cfile,
                    point=pt.key,
                    pointer="/settings/load_pattern/target_concurrency",
                    fix="Place each run in the r<C> folder of the concurrency it ran at.",
                )
            streaming = dig(pt.config, "model_params", "streaming")
            if streaming not in ("on", True, "true"):
                self.f.error(
                    "streaming-config",
                    f"r{pt.c}: the client ran with streaming {short(streaming)}; "
                    "the rules require streaming on.",
                    file=cfile,
                    point=pt.key,
                    pointer="/model_params/streaming",
                    fix="Run the client with --streaming on.",
                )

    # -- warmup

    def warmup(self, pt: _Point) -> None:
        if not pt.yaml_ok:
            return
        file = pt.file("point.yaml")
        w = pt.yaml.get("warmup")
        if not isinstance(w, dict):
            self.f.error(
                "warmup-present",
                f"Point {pt.c}: no warmup declaration.",
                file=file,
                point=pt.key,
                fix="Declare the warmup (duration_s, requests_issued, requests_completed, data_source, "
                "concurrency) in point.yaml.",
            )
            return
        issued, completed = count(w.get("requests_issued")), count(w.get("requests_completed"))
        problems = []
        for key in ("requests_issued", "requests_completed", "concurrency"):
            if count(w.get(key)) is None:
                problems.append(f"{key} {short(w.get(key))} is not a non-negative integer")
        duration = finite(w.get("duration_s"))
        if duration is None or not 0 <= duration <= 86400:
            problems.append(f"duration_s {short(w.get('duration_s'))} is not 0..86400 seconds")
        if issued is not None and completed is not None and completed > issued:
            problems.append(f"requests_completed {completed} > requests_issued {issued}")
        if problems:
            self.f.error(
                "warmup-present",
                f"Point {pt.c}: warmup declaration invalid: " + "; ".join(problems),
                file=file,
                point=pt.key,
                pointer="/warmup",
            )
        disabled = not duration and not issued
        retained = w.get("logs_retained")
        if not disabled and retained is not True:
            self.f.warning(
                "warmup-logs-retained",
                f"Point {pt.c}: warmup logs not declared retained.",
                file=file,
                point=pt.key,
                pointer="/warmup/logs_retained",
                fix="Keep the warmup requests in events.jsonl and set warmup.logs_retained: true.",
            )
        # The raw log's warmup: sample.issued lines before the first start_performance_tracking.
        logged = count(dig(pt.result.recomputed, "warmup", "issued"))
        if logged is not None and issued is not None and logged != issued:
            self.f.warning(
                "warmup-log-mismatch",
                f"r{pt.c}: point.yaml declares {issued} warmup requests issued, but events.jsonl issues "
                f"{logged} before start_performance_tracking.",
                file=file,
                point=pt.key,
                pointer="/warmup/requests_issued",
                fix=f"Declare warmup.requests_issued: {logged}, the warmup the client actually ran.",
            )

    # -- steady-state block (section 4.4): vocabulary, and status consistent with the window

    def steady_state(self, pt: _Point) -> None:
        if not pt.yaml_ok or "steady_state" not in pt.yaml:
            return
        file = pt.file("point.yaml")
        block = pt.yaml.get("steady_state")
        if not isinstance(block, dict):
            self.f.error(
                "steady-state-valid",
                f"r{pt.c}: steady_state must be a mapping (status, verdict, window, "
                f"state), got {short(block)}.",
                file=file,
                point=pt.key,
                pointer="/steady_state",
            )
            return
        spec = self.rs.get("steady_state", default={}) or {}
        statuses, verdicts = list(spec.get("statuses") or []), list(spec.get("verdicts") or [])
        gating = list(spec.get("gating_states") or [])
        official, min_n = spec.get("official_status", "windowable"), int(spec.get("min_trend_n", 4))
        status, verdict = block.get("status"), block.get("verdict")
        state = block.get("state") if isinstance(block.get("state"), dict) else {}
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
            self.f.error(
                "steady-state-valid",
                f"r{pt.c}: " + "; ".join(bad),
                file=file,
                point=pt.key,
                pointer="/steady_state",
                fix="Report the steady-state block with the section 4.4 vocabulary.",
            )
        else:
            self.f.info(
                "steady-state-valid",
                f"r{pt.c}: steady_state status={status!r} verdict={verdict!r}",
                file=file,
                point=pt.key,
            )
        if status is None:
            return
        window = block.get("window") if isinstance(block.get("window"), dict) else {}
        start, end = window.get("super_pass_start"), window.get("super_pass_end")
        spans = end - start + 1 if finite(start) is not None and finite(end) is not None else None
        problems = []
        if status == official:
            if spans is not None and spans < min_n:
                problems.append(
                    f"status {official!r} over {spans:g} super-pass(es); section 4.4 needs \u2265 {min_n}"
                )
            drifting = sorted(
                str(k) for k, v in state.items() if isinstance(v, str) and v.startswith("Drifting")
            )
            if drifting:
                problems.append(
                    f"status {official!r} with drifting gating metric(s): {', '.join(drifting)}; "
                    "every one must be a Plateau"
                )
        elif status == "insufficient_passes" and spans is not None and spans >= min_n:
            problems.append(
                f"status 'insufficient_passes' over {spans:g} super-pass(es), which meets the "
                f"\u2265 {min_n} floor"
            )
        if problems:
            self.f.error(
                "steady-state-consistency",
                f"r{pt.c}: " + "; ".join(problems),
                file=file,
                point=pt.key,
                pointer="/steady_state/status",
                fix="Report the status the detector gives for the window (section 4.4 status table).",
            )
        else:
            self.f.info(
                "steady-state-consistency",
                f"r{pt.c}: steady_state status {status!r} consistent with the reported window",
                file=file,
                point=pt.key,
            )

    # -- duration and minimum query count

    def duration_and_queries(self, pt: _Point, regions: Regions | None) -> None:
        s = pt.summary
        file = pt.file("result_summary.json")
        if s is None:
            return
        window = dig(pt.yaml, "steady_state", "window", "duration_s")
        status = dig(pt.yaml, "steady_state", "status")
        official = self.rs.get("steady_state", "official_status", default="windowable")
        if pt.yaml_ok:
            if not isinstance(pt.yaml.get("steady_state"), dict):
                self.f.warning(
                    "steady-state-basis",
                    f"Point {pt.c}: no steady_state block; metrics are whole-run, which \u00a74.4 makes "
                    "the fallback rather than the official basis",
                    file=file,
                    point=pt.key,
                )
            elif status != official:
                self.f.warning(
                    "steady-state-basis",
                    f"Point {pt.c}: steady_state status {short(status)} is not {official!r}; "
                    "the whole-run result is the official one",
                    file=file,
                    point=pt.key,
                )
        if regions is not None and pt.region is not None and pt.offline != "dedicated":
            min_ms = self.rs.min_duration_ms(pt.c, agentic=pt.agentic)
            if finite(window) is not None and window > 0:
                duration_ms, basis = window * 1000.0, "steady-state window"
            else:
                d = finite(s.get("duration_ns"))
                duration_ms, basis = (None, "") if d is None else (d / 1e6, "whole-run")
            pt.result.extra["min_duration_ms"] = min_duration = min_ms
            if duration_ms is not None and duration_ms < min_duration:
                self.f.warning(
                    "point-duration",
                    f"Point {pt.c} ({pt.region}): {basis} duration {duration_ms:.0f} ms < minimum "
                    f"{min_duration} ms",
                    file=file,
                    point=pt.key,
                    fix=f"Run the point for at least {min_duration // 1000} s.",
                )
        dataset = pt.yaml.get("dataset")
        if pt.yaml_ok and pt.offline != "dedicated":
            size = self.rs.datasets.get(dataset) if isinstance(dataset, str) else None
            completed = count(s.get("n_samples_completed"))
            if size is None:
                self.f.info(
                    "min-query-count",
                    f"r{pt.c}: dataset {short(dataset)} has no size in {self.rs.name}; "
                    "the full-pass rule is not gated.",
                    file=file,
                    point=pt.key,
                )
            elif completed is not None and completed < size:
                self.f.error(
                    "min-query-count",
                    f"r{pt.c}: {completed} completed queries < one full pass of {dataset} ({size}).",
                    file=file,
                    point=pt.key,
                    fix=f"Issue at least {size} queries ({dataset}).",
                )

    # -- metric consistency

    def metric_consistency(self, pt: _Point) -> None:
        file = pt.file("result_summary.json")
        tol = self.rs.relative_tolerance
        for label, s in (("claimed", pt.result.claimed), ("recomputed", pt.result.recomputed)):
            if not isinstance(s, dict):
                continue
            self._accounting(pt, s, label, file)
        s = pt.summary
        if s is None:
            return
        duration = finite(s.get("duration_ns"))
        if duration is None or duration <= 0:
            self.f.error(
                "metric-consistency-duration",
                f"r{pt.c}: duration_ns {short(s.get('duration_ns'))} is not a positive number.",
                file=file,
                point=pt.key,
                pointer="/duration_ns",
            )
        total = finite(dig(s, "output_sequence_lengths", "total"))
        if total is None or total < 0:
            self.f.error(
                "metric-consistency-output-tokens",
                f"r{pt.c}: output_sequence_lengths.total {short(dig(s, 'output_sequence_lengths', 'total'))} "
                "is not a non-negative number.",
                file=file,
                point=pt.key,
                pointer="/output_sequence_lengths/total",
            )
        derived_tps = pt.system_tps()
        # Stored values: the file's system_tps when present, and always the client's own tps (the
        # official checker compares only when the file carries system_tps).
        if derived_tps is not None:
            for key in ("system_tps", "tps"):
                stored = pt.stored.get(key)
                if stored is None:
                    continue
                stored_n = finite(stored)
                if stored_n is None or abs(stored_n - derived_tps) > tol * max(abs(derived_tps), 1e-9):
                    self.f.error(
                        "metric-consistency-system-tps",
                        f"r{pt.c}: stored {key} {short(stored)} differs from the derived system_tps "
                        f"{derived_tps:.4f} ({pt.basis}: output tokens / duration) by more than {tol:.0%}.",
                        file=file,
                        point=pt.key,
                        pointer=f"/{key}",
                        fix="Report the client's result_summary.json unchanged.",
                    )
        if pt.offline == "dedicated":
            return
        p90 = pt.tpot_p90_ms()
        if p90 is None or p90 <= 0:
            raw = percentile(s.get("tpot"), 90.0)
            self.f.error(
                "metric-consistency-tpot-p90",
                f"r{pt.c}: TPOT P90 {short(raw)} is missing, not finite or not > 0 ({pt.basis}).",
                file=file,
                point=pt.key,
                pointer="/tpot/percentiles/90.0",
                fix="Stream every response so TPOT can be measured.",
            )
            return
        derived_tpu = 1000.0 / p90
        stored = pt.stored.get("tps_per_user")
        claimed_p90 = finite(percentile(dig(pt.result.claimed, "tpot"), 90.0))
        candidates = []
        if stored is not None:
            candidates.append(("stored tps_per_user", stored))
        if pt.basis == "recomputed" and claimed_p90 is not None and claimed_p90 > 0:
            candidates.append(("1000 / claimed TPOT P90", 1000.0 / (claimed_p90 / 1e6)))
        for label, value in candidates:
            value_n = finite(value)
            if value_n is None or abs(value_n - derived_tpu) > tol * derived_tpu:
                self.f.error(
                    "metric-consistency-tps-per-user",
                    f"r{pt.c}: {label} {short(value)} differs from 1000 / TPOT P90 = {derived_tpu:.4f} "
                    f"({pt.basis}) by more than {tol:.0%}.",
                    file=file,
                    point=pt.key,
                    fix="tps_per_user is 1000 / TPOT P90 in ms; report the client's values unchanged.",
                )
        e2e = pt.stored.get("e2e_interactivity", pt.stored.get("e2e_avg_interactivity"))
        if e2e is not None and finite(e2e) is None:
            self.f.error(
                "agentic-metric-consistency",
                f"r{pt.c}: e2e interactivity {short(e2e)} is not a number.",
                file=file,
                point=pt.key,
            )

    def _accounting(self, pt: _Point, s: dict, label: str, file: str) -> None:
        issued, completed, failed = (
            s.get(k) for k in ("n_samples_issued", "n_samples_completed", "n_samples_failed")
        )
        ci, cc, cf = count(issued), count(completed), count(failed)
        if ci is None or cc is None or cf is None:
            self.f.error(
                "metric-consistency-accounting",
                f"r{pt.c} ({label}): sample counts must be non-negative integers "
                f"(issued {short(issued)}, completed {short(completed)}, failed {short(failed)}).",
                file=file,
                point=pt.key,
            )
            return
        if cc != ci or cf > cc:
            self.f.error(
                "metric-consistency-accounting",
                f"r{pt.c} ({label}): {ci} issued, {cc} completed, {cf} failed; the client counts failed "
                "requests inside completed, so completed must equal issued and failed must not exceed it.",
                file=file,
                point=pt.key,
                fix="Let every issued request complete (or fail) before the run ends.",
            )
        elif cf:
            self.f.info(
                "metric-consistency-accounting",
                f"r{pt.c} ({label}): {ci} issued, {cc} completed of which {cf} failed: consistent. "
                + OFFICIAL_ACCOUNTING_NOTE,
                file=file,
                point=pt.key,
            )

    # -- tps_utilization

    def tps_utilization(self, pts: list[_Point]) -> None:
        values = {pt.key: pt.system_tps() for pt in pts}
        best = max((v for v in values.values() if v is not None), default=None)
        if not best or best <= 0:
            return
        tol = float(self.rs.get("tolerances", "tps_utilization_abs", default=0.1))
        for pt in pts:
            if values[pt.key] is None:
                continue
            util = values[pt.key] / best
            pt.result.extra["tps_utilization"] = util
            stored = dig(pt.sd, "tps_utilization")
            if stored is None:
                continue
            stored_n = finite(stored)
            if stored_n is None or abs(stored_n - util) > tol:
                self.f.error(
                    "tps-utilization",
                    f"r{pt.c}: tps_utilization {short(stored)} differs from system_tps / max system_tps "
                    f"= {util:.4f} by more than {tol}.",
                    file=pt.file("system_desc.json"),
                    point=pt.key,
                    pointer="/tps_utilization",
                )

    # -- accuracy

    def accuracy(self, model: str, pts: list[_Point], regions: Regions | None, where: str) -> None:
        rules = self.rs.models.get(model) or next(
            (
                self.rs.models.get(pt.yaml.get("model_name"))
                for pt in pts
                if isinstance(pt.yaml.get("model_name"), str) and pt.yaml.get("model_name") in self.rs.models
            ),
            None,
        )
        agentic = any(pt.agentic for pt in pts)
        # An inline-only result (the performance run's own score, agentic) is not an accuracy run.
        with_acc = [
            pt for pt in pts if pt.pin.files.get("accuracy_results.json") and self._has_accuracy_run(pt)
        ]
        if not (agentic and self._agentic_targets(model, pts) is not None):  # agentic gates differ (below)
            for pt in with_acc:
                self._accuracy_point(pt, rules)
        if regions is None:
            return
        candidates, owner = self._band_matching(with_acc, regions)
        labels = {
            "ultra_low": "Ultra Low Concurrency",
            "low_concurrency": "Low Concurrency",
            "med_concurrency": "Medium Concurrency",
            "high_concurrency": "High Concurrency",
        }
        missing = [labels[b] for b in labels if b not in owner]
        filled = set(owner.values())
        extra = [c for c, _, elected in candidates if c not in filled and not elected]
        n = 4 if agentic else 5
        if missing:
            self.f.error(
                "accuracy-coverage",
                f"No accuracy run in: {', '.join(missing)}.",
                file=where,
                fix="Run the accuracy dataset at one point per mandatory region plus the Offline point.",
            )
        if extra:
            self.f.error(
                "accuracy-coverage",
                f"Accuracy results at {', '.join(f'r{c}' for c in extra)} exceed the "
                f"N = {n} mandatory points.",
                file=where,
                fix="Keep exactly one accuracy run per region.",
            )
        if not missing and not extra:
            self.f.info(
                "accuracy-coverage",
                f"Accuracy present in all four mandatory bands ({len(with_acc)} point(s) "
                f"carry an accuracy run; N={n})",
                file=where,
            )
        for pt in pts:
            if pt.offline in ("dedicated", "elected") and not agentic:
                if pt not in with_acc:
                    self.f.error(
                        "accuracy-coverage",
                        f"The Offline point r{pt.c} has no accuracy run.",
                        file=where,
                        point=pt.key,
                    )

    @staticmethod
    def _band_matching(with_acc: list[_Point], regions: Regions) -> tuple[list, dict[str, int]]:
        """Each accuracy result fills at most one mandatory band (maximum bipartite matching, elected last)."""
        candidates = []
        for pt in with_acc:
            if pt.offline == "dedicated":
                continue
            bands = []
            if regions.ultra_low.contains(pt.c):
                bands.append("ultra_low")
            region = regions.classify(pt.c)
            if region in ("low_concurrency", "med_concurrency", "high_concurrency"):
                bands.append(region)
            candidates.append((pt.c, bands, pt.offline == "elected"))
        candidates.sort(key=lambda c: c[2])
        owner: dict[str, int] = {}
        options = {c: b for c, b, _ in candidates}

        def augment(c: int, seen: set[str]) -> bool:
            for band in options[c]:
                if band in seen:
                    continue
                seen.add(band)
                if band not in owner or augment(owner[band], seen):
                    owner[band] = c
                    return True
            return False

        for c, _, _ in candidates:
            augment(c, set())
        return candidates, owner

    # -- accuracy entries (accuracy_results.json), shared by the single-turn and agentic gates

    @staticmethod
    def _entries(acc: Any) -> dict[str, dict]:
        scores = acc.get("accuracy_scores", acc) if isinstance(acc, dict) else None
        if isinstance(scores, list):
            return {
                e["dataset_name"]: e
                for e in scores
                if isinstance(e, dict) and isinstance(e.get("dataset_name"), str)
            }
        if isinstance(scores, dict):
            return {str(k): v for k, v in scores.items() if isinstance(v, dict)}
        return {}

    def _inline_name(self, entries: dict[str, dict]) -> str | None:
        perf = self.rs.get("agentic_accuracy", "performance_dataset_type", default="performance")
        for name, entry in entries.items():
            if entry.get("dataset_type") == perf:
                return name
        legacy = entries.get(perf)
        return perf if legacy is not None and "dataset_type" not in legacy else None

    def _has_accuracy_run(self, pt: _Point) -> bool:
        if pt.accuracy is None:
            return True  # unreadable: reported by the loader; counted as present, as before
        entries = self._entries(pt.accuracy)
        if not entries:
            return True  # accuracy-results-valid reports it
        inline = self._inline_name(entries)
        return any(name != inline for name in entries)

    _META_KEYS = frozenset(
        {
            "dataset_name",
            "num_samples",
            "status",
            "extractor",
            "ground_truth_column",
            "n_repeats",
            "complete",
            "unit_samples",
            "total_samples",
            "num_repeats",
            "duration_s",
            "dataset_type",
            "response_counts",
        }
    )

    def _metric_scores(self, entry: dict) -> dict[str, float]:
        raw = entry.get("score")
        if isinstance(raw, dict):
            items = raw.items()
        elif raw is not None:
            items = [("score", raw)]
        else:
            items = [(k, v) for k, v in entry.items() if k not in self._META_KEYS]
        out = {}
        for k, v in items:
            try:
                value = float(v) if not isinstance(v, bool) and isinstance(v, int | float | str) else None
            except (TypeError, ValueError, OverflowError):
                value = None
            if value is not None and math.isfinite(value):
                out[str(k)] = value
        return out

    def _dataset_score(self, pt: _Point, dataset: str, rule: str) -> float | None:
        """One dataset's score as a percentage; scorers report fractions, so anything outside [0, 1] is an error."""
        entry = self._entries(pt.accuracy).get(dataset)
        scores = self._metric_scores(entry) if entry is not None else {}
        if not scores:
            return None
        value = scores.get("score", next(iter(scores.values())))
        if not 0.0 <= value <= 1.0:
            self.f.error(
                rule,
                f"r{pt.c}: `{dataset}` score {value} is not a fraction in [0, 1], which is what the "
                "reference scorer reports.",
                file=pt.file("accuracy_results.json"),
                point=pt.key,
            )
            return None
        return value * 100.0

    def _agentic_targets(self, model: str, pts: list[_Point]) -> dict | None:
        names = [model] + [
            pt.yaml.get("model_name") for pt in pts if isinstance(pt.yaml.get("model_name"), str)
        ]
        for name in names:
            block = self.rs.get("models", name, "agentic_accuracy")
            if isinstance(block, dict):
                return block
        return None

    # -- agentic accuracy (section 4.3): inline at every point, SWE-bench mean of N bands, OSL per-turn range

    def agentic_accuracy(self, model: str, pts: list[_Point], regions: Regions | None, where: str) -> None:
        if not pts or not all(pt.agentic for pt in pts if pt.yaml_ok) or not any(pt.yaml_ok for pt in pts):
            return
        targets = self._agentic_targets(model, pts)
        if targets is None:
            self.f.warning(
                "agentic-accuracy",
                f"Agentic curve for model {model!r}, which is not one of the agentic "
                f"benchmarks {self.rs.name} publishes thresholds for \u2014 no agentic accuracy gate "
                "applied.",
                file=where,
            )
            return
        inline_min, swe_min = finite(targets.get("inline_min")), finite(targets.get("swebench_min"))
        osl = targets.get("osl_range")
        if inline_min is None and swe_min is None:
            self.f.warning(
                "agentic-accuracy",
                f"{model}: the accuracy thresholds are TBD, so no agentic accuracy gate can be applied.",
                file=where,
            )
            return
        spec = self.rs.get("agentic_accuracy", default={}) or {}
        if inline_min is not None:
            missing = []
            for pt in sorted((p for p in pts if p.yaml_ok), key=lambda p: p.c):
                entries = self._entries(pt.accuracy) if pt.accuracy is not None else {}
                name = self._inline_name(entries)
                if name is None or not self._metric_scores(entries[name]):
                    missing.append(pt.c)
                    continue
                score = self._dataset_score(pt, name, "agentic-accuracy-inline")
                if score is None:
                    continue
                if score < inline_min:
                    self.f.error(
                        "agentic-accuracy-inline",
                        f"r{pt.c}: inline accuracy {score:.2f} < {inline_min} required for {model}.",
                        file=pt.file("accuracy_results.json"),
                        point=pt.key,
                    )
                else:
                    self.f.info(
                        "agentic-accuracy-inline",
                        f"r{pt.c}: inline accuracy {score:.2f} \u2265 {inline_min}",
                        file=pt.file("accuracy_results.json"),
                        point=pt.key,
                    )
            if missing:
                perf = spec.get("performance_dataset_type", "performance")
                self.f.error(
                    "agentic-accuracy-inline",
                    f"No inline accuracy score at {', '.join(f'r{c}' for c in missing)} (an accuracy entry "
                    f"with `dataset_type: {perf}` and a score); every submitted point must clear the inline "
                    "threshold.",
                    file=where,
                    fix="Submit each point's accuracy_results.json as the client writes it, with inline "
                    "accuracy scoring on the performance dataset.",
                )
        if swe_min is not None and regions is not None:
            dataset = spec.get("swebench_dataset", "swe_bench")
            n_required = int(spec.get("swebench_mean_of_n", 4))
            by_c = {pt.c: pt for pt in pts}
            with_acc = [pt for pt in pts if pt.accuracy is not None and self._has_accuracy_run(pt)]
            candidates, owner = self._band_matching(with_acc, regions)
            assignment = {c: band for band, c in owner.items()}
            by_band: dict[str, list[tuple[int, float]]] = {}
            for c, bands, _ in candidates:
                score = self._dataset_score(by_c[c], dataset, "agentic-accuracy-swebench")
                band = assignment.get(c) or (bands[0] if bands else None)
                if score is not None and band is not None:
                    by_band.setdefault(band, []).append((c, score))
            if not by_band:
                self.f.warning(
                    "agentic-accuracy-swebench",
                    f"No mandatory-band point reports a `{dataset}` accuracy "
                    "score; official agentic submissions must enable SWE-bench accuracy.",
                    file=where,
                )
            else:
                for band, results in by_band.items():
                    if len(results) > 1:
                        self.f.warning(
                            "agentic-accuracy-swebench",
                            f"{band.replace('_', ' ')} has {len(results)} SWE-bench results "
                            f"({', '.join(f'r{c}' for c, _ in results)}); one per region is expected, so "
                            "they are averaged into one value for the band.",
                            file=where,
                        )
                band_scores = [sum(v for _, v in r) / len(r) for r in by_band.values()]
                mean, n = sum(band_scores) / len(band_scores), len(band_scores)
                basis = f"mean of {n} band(s)" + ("" if n == n_required else f" ({n_required} required)")
                if mean < swe_min:
                    self.f.error(
                        "agentic-accuracy-swebench",
                        f"SWE-bench {basis} = {mean:.2f} < {swe_min} required for {model}.",
                        file=where,
                    )
                elif n != n_required:
                    self.f.warning(
                        "agentic-accuracy-swebench",
                        f"SWE-bench {basis} = {mean:.2f} \u2265 {swe_min}, but "
                        f"section 4.3 averages one result from each of the {n_required} mandatory regions.",
                        file=where,
                    )
                else:
                    self.f.info(
                        "agentic-accuracy-swebench",
                        f"SWE-bench {basis} = {mean:.2f} \u2265 {swe_min}",
                        file=where,
                    )
        if isinstance(osl, list | tuple) and len(osl) == 2 and all(finite(v) is not None for v in osl):
            low, high = float(osl[0]), float(osl[1])
            field = spec.get("osl_full_run_field", "output_sequence_lengths_full_run")
            missing = []
            for pt in sorted(pts, key=lambda p: p.c):
                if not pt.stored:
                    continue
                avg = finite(dig(pt.stored, field, "output_sequence_lengths", "avg"))
                if avg is None:
                    missing.append(pt.c)
                elif low <= avg <= high:
                    self.f.info(
                        "agentic-osl-range",
                        f"r{pt.c}: full-run OSL per-turn mean {avg:.1f} within {low:g}\u2013{high:g} tokens",
                        file=pt.file("result_summary.json"),
                        point=pt.key,
                    )
                else:
                    self.f.error(
                        "agentic-osl-range",
                        f"r{pt.c}: full-run OSL per-turn mean {avg:.1f} outside "
                        f"{low:g}\u2013{high:g} tokens required for {model}.",
                        file=pt.file("result_summary.json"),
                        point=pt.key,
                        pointer=f"/{field}/output_sequence_lengths/avg",
                    )
            if missing:
                self.f.warning(
                    "agentic-osl-range",
                    f"No `{field}.output_sequence_lengths.avg` in result_summary.json "
                    f"for {', '.join(f'r{c}' for c in missing)}; the windowed output_sequence_lengths is "
                    "not the field to gate.",
                    file=where,
                )

    def _accuracy_point(self, pt: _Point, rules: Any) -> None:
        file = pt.file("accuracy_results.json")
        acc = pt.accuracy
        if acc is None:
            return  # unreadable: the loader reported it
        scores = acc.get("accuracy_scores")
        entries = (
            scores
            if isinstance(scores, list)
            else list(scores.values())
            if isinstance(scores, dict)
            else None
        )
        if not entries or not all(isinstance(e, dict) for e in entries):
            self.f.error(
                "accuracy-results-valid",
                f"r{pt.c}: accuracy_scores must be a non-empty list of objects.",
                file=file,
                point=pt.key,
                pointer="/accuracy_scores",
            )
            return
        total = 0
        metrics: dict[str, list[tuple[float, float]]] = {}
        for e in entries:
            samples = count(e.get("total_samples"))
            if samples is None:
                unit, rep = (
                    count(e.get("unit_samples", e.get("num_samples"))),
                    count(e.get("num_repeats", e.get("n_repeats", 1))),
                )
                samples = None if unit is None else unit * max(rep or 1, 1)
            if samples is None:
                self.f.error(
                    "accuracy-results-valid",
                    f"r{pt.c}: dataset {short(e.get('dataset_name'))} states no sample count.",
                    file=file,
                    point=pt.key,
                )
                continue
            total += samples
            for key, value in e.items():
                if key in ("score",) or key.lower() in {
                    t.metric for t in (rules.accuracy_targets if rules else ())
                }:
                    v = finite(value)
                    if v is not None:
                        metrics.setdefault(key.lower(), []).append((v, float(min(samples, 10**15))))
        pt.result.extra["accuracy"] = {
            "samples": total,
            "scores": {
                k: sum(v * w for v, w in pairs) / (sum(w for _, w in pairs) or 1)
                for k, pairs in metrics.items()
            },
        }
        if rules is None or rules.accuracy_min_samples is None:
            self.f.warning(
                "accuracy-gate",
                f"r{pt.c}: {self.rs.name} has no accuracy thresholds for this model.",
                file=file,
                point=pt.key,
            )
            return
        if total < rules.accuracy_min_samples:
            self.f.error(
                "accuracy-sample-count",
                f"{total} samples (issued) < required {rules.accuracy_min_samples}",
                file=file,
                point=pt.key,
                fix=f"Run the full accuracy dataset ({rules.accuracy_min_samples} samples).",
            )
        scores = pt.result.extra["accuracy"]["scores"]
        gated = False
        for target in rules.accuracy_targets:
            score = scores.get(target.metric)
            if score is None and list(scores) == ["score"] and len(rules.accuracy_targets) == 1:
                score = scores["score"]
            if score is None:
                continue
            gated = True
            if 0.0 <= score <= 1.0 and target.lower > 1.0:
                score *= 100.0  # scorers report fractions; targets are percentages
            upper = target.upper
            if score < target.lower or (upper is not None and score > upper):
                bound = (
                    f"[{target.lower:.4f}, {upper:.4f}]"
                    if upper is not None
                    else f"\u2265 {target.lower:.4f}"
                )
                self.f.error(
                    "accuracy-gate",
                    f"r{pt.c}: {target.metric} = {score:.4f} outside {bound} (hard gate).",
                    file=file,
                    point=pt.key,
                )
        if not gated:
            self.f.warning(
                "accuracy-gate",
                f"r{pt.c}: none of the gated metrics ({', '.join(t.metric for t in rules.accuracy_targets)}) "
                f"is reported (found: {', '.join(sorted(scores)) or 'none'}), so the accuracy gate cannot "
                "be evaluated.",
                file=file,
                point=pt.key,
                fix="Score the accuracy run with the benchmark's official metrics.",
            )

    # -- power per point

    def power_point(self, pt: _Point, prov: Any) -> None:
        power: dict[str, Any] = {}
        tps = pt.system_tps()
        if prov is not None:
            kw = prov.point_power_kw(pt.yaml.get("nodes_used"))
            power.update({"provisioned_kw": prov.provisioned_kw, "point_power_kw": kw, "method": prov.method})
            if kw and tps is not None:
                power["system_tps_per_kw"] = tps / kw
                stored = pt.stored.get("system_tps_per_kw")
                tol = float(self.rs.get("tolerances", "tps_per_kw_relative", default=0.01))
                if stored is not None and (
                    finite(stored) is None or abs(finite(stored) - tps / kw) > tol * (tps / kw)
                ):
                    self.f.error(
                        "metric-consistency-tps-per-kw",
                        f"r{pt.c}: stored system_tps_per_kw {short(stored)} differs from "
                        f"{tps:.3f} / {kw:.2f} kW = {tps / kw:.4f}.",
                        file=pt.file("result_summary.json"),
                        point=pt.key,
                    )
        folder = pt.pin.files.get("power")
        if folder is not None:
            measured = self.measured_power(pt, Path(folder), prov, tps)
            if measured is not None:
                power["measured"] = measured
        if power:
            pt.result.extra["power"] = power

    def measured_power(self, pt: _Point, folder: Path, prov: Any, tps: float | None) -> dict | None:
        file = pt.file("power")
        mp = self.rs.get("measured_power", default={}) or {}
        try:
            manifest = read_manifest(folder)
            trace = load_trace(folder, manifest)
            mono0, unix0 = clock_anchor(manifest)
        except TraceError as exc:
            self.f.error(
                "power-trace-unreadable",
                f"r{pt.c}: {exc}.",
                file=file,
                point=pt.key,
                fix="Provide power/manifest.json and a PTDaemon spl.txt or CSV trace as docs/power.md describes.",
            )
            return None
        if isinstance(pt.result.recomputed, dict):
            # The recompute already read the whole log; a second pass over it would be slow and could disagree.
            window = pt.result.recomputed.get("window_ns")
        else:
            events = pt.pin.files.get("events")
            window = scan_window_ns(Path(events)) if events is not None else None
        if not (
            isinstance(window, list | tuple)
            and len(window) == 2
            and all(count(v) is not None for v in window)
            and window[1] > window[0]
        ):
            self.f.error(
                "power-window-coverage",
                f"r{pt.c}: no measurement window (events.jsonl start/stop of "
                "performance tracking), so the trace cannot be aligned.",
                file=file,
                point=pt.key,
            )
            return None
        start_s = (window[0] - mono0 + unix0) / 1e9
        stop_s = (window[1] - mono0 + unix0) / 1e9
        tokens = finite(dig(pt.summary, "output_sequence_lengths", "total"))
        m = analyse_trace(trace, (start_s, stop_s), output_tokens=tokens, system_tps=tps)
        m.meter = manifest.get("meter") if isinstance(manifest.get("meter"), str) else None
        min_cov = float(mp.get("min_window_coverage", 0.99))
        if m.coverage is None or m.coverage < min_cov:
            self.f.error(
                "power-window-coverage",
                f"r{pt.c}: the trace covers {0 if m.coverage is None else m.coverage:.1%} of the "
                f"{m.window_s:.1f} s measurement window (needs {min_cov:.0%}).",
                file=file,
                point=pt.key,
                fix="Start the power meter before the run and stop it after; check the clock anchor.",
            )
        max_gap = float(mp.get("max_gap_s", 5.0))
        if m.max_gap_s is not None and m.max_gap_s > max_gap and m.coverage and m.coverage >= min_cov:
            self.f.warning(
                "power-gap",
                f"r{pt.c}: the trace has a {m.max_gap_s:.1f} s gap inside the window (limit {max_gap} s).",
                file=file,
                point=pt.key,
            )
        max_interval = float(mp.get("max_sample_interval_s", 1.0))
        if m.median_interval_s is not None and m.median_interval_s > max_interval:
            self.f.warning(
                "power-sample-interval",
                f"r{pt.c}: median sample interval {m.median_interval_s:.2f} s > {max_interval} s.",
                file=file,
                point=pt.key,
                fix="Sample power at least once a second.",
            )
        declared = finite(manifest.get("sample_interval_s"))
        if declared is not None and m.median_interval_s is not None and m.median_interval_s > 2 * declared:
            self.f.warning(
                "power-sample-interval",
                f"r{pt.c}: manifest declares {declared} s sampling but the trace "
                f"has a median interval of {m.median_interval_s:.2f} s.",
                file=file,
                point=pt.key,
            )
        if m.nonpositive_samples:
            sev = "error" if m.avg_power_w is None else "warning"
            self.f.add(
                "power-nonpositive-samples",
                sev,
                f"r{pt.c}: {m.nonpositive_samples} of {m.samples_in_window} samples in the window are \u2264 0 W "
                "(meter errors); they are left out of the average.",
                file=file,
                point=pt.key,
            )
        elif m.samples_in_window == 0:
            self.f.error(
                "power-window-coverage",
                f"r{pt.c}: no power sample lies inside the measurement window.",
                file=file,
                point=pt.key,
            )
        if prov is not None and prov.provisioned_kw and m.avg_power_w is not None:
            tol = float(mp.get("above_provisioned_tolerance", 0.05))
            limit_w = prov.provisioned_kw * 1000.0 * (1 + tol)
            if m.avg_power_w > limit_w:
                self.f.warning(
                    "power-above-provisioned",
                    f"r{pt.c}: measured average {m.avg_power_w:.0f} W exceeds provisioned "
                    f"{prov.provisioned_kw:.2f} kW by more than {tol:.0%}.",
                    file=file,
                    point=pt.key,
                    fix="Check that system_power.json provisions every component the meter sees.",
                )
        return m.to_dict()

    # -- per-point engagement (section 4.5.3): nodes_used and maximal data-parallel engagement

    def _parallelism(self, pt: _Point) -> dict[str, Any] | None:
        """TP/PP/EP/DP from the point's system_desc.json (top level, else config_summary); None if none is declared."""
        if pt.sd is None:
            return None
        summary = pt.sd.get("config_summary") if isinstance(pt.sd.get("config_summary"), dict) else {}
        fields = self.rs.get("engagement", "parallelism_fields", default=[]) or []
        values = {}
        for name in fields:
            value = pt.sd.get(name, summary.get(name))
            if value is None and name in pt.sd:
                value = summary.get(name)
            if isinstance(value, int) and not isinstance(value, bool):
                values[name] = value
        if not values:
            return None
        flag = pt.sd.get("disaggregated", summary.get("disaggregated"))
        if flag is None:
            flag = summary.get("disaggregated")
        values["disaggregated"] = flag is True or (
            isinstance(flag, int) and not isinstance(flag, bool) and flag > 1
        )
        return values

    def engagement(self, pt: _Point, prov: Any) -> None:
        if not pt.yaml_ok:
            return
        file = pt.file("point.yaml")
        sets = prov.sets
        para = self._parallelism(pt)
        replica = dp = None
        if para is not None:
            replica = (
                para.get("tensor_parallel", 1)
                * para.get("pipeline_parallel", 1)
                * para.get("expert_parallel", 1)
            )
            dp = para.get("data_parallel", 1)
        per_node_known = bool(sets) and all(s.get("accelerators_per_node") is not None for s in sets)
        # nodes-used
        declared = pt.yaml.get("nodes_used")
        if declared is not None:
            problems: list[str] = []
            by_set: dict[Any, int] = {}
            seen: set = set()
            entries = declared if isinstance(declared, list) else None
            if entries is None:
                problems.append(
                    f"nodes_used must be a list of {{system_node_ensemble_id, nodes}}, got {short(declared)}"
                )
            for entry in entries or []:
                ens = entry.get("system_node_ensemble_id") if isinstance(entry, dict) else None
                nodes = entry.get("nodes") if isinstance(entry, dict) else None
                if type(ens) is not int or type(nodes) is not int:
                    problems.append(f"entry {short(entry)} needs integer system_node_ensemble_id and nodes")
                    continue
                if ens in seen:
                    problems.append(f"system_node_ensemble_id {ens} is declared twice")
                    continue
                seen.add(ens)
                matches = [s for s in sets if s.get("ensemble") == ens]
                if len(matches) != 1:
                    problems.append(
                        f"system_node_ensemble_id {ens} matches {len(matches)} node sets in "
                        "system_power.json; it must resolve to exactly one"
                    )
                    continue
                if not 1 <= nodes <= matches[0]["nodes"]:
                    problems.append(
                        f"system_node_ensemble_id {ens}: nodes {nodes} must be a positive whole number "
                        f"no greater than N_s = {matches[0]['nodes']}"
                    )
                    continue
                by_set[id(matches[0])] = nodes
            spare_detail = None
            if not problems and para is not None and not para["disaggregated"] and per_node_known:
                engaged = {id(s): by_set.get(id(s), s["nodes"]) for s in sets}
                capacity = sum(engaged[id(s)] * s["accelerators_per_node"] for s in sets)
                used = dp * replica
                if capacity < used:
                    problems.append(
                        f"the declared nodes hold {capacity} accelerators, but the point's parallelism "
                        f"(DP {dp} x TP*PP*EP {replica}) engages {used}"
                    )
                else:
                    spare = [
                        s
                        for s in sets
                        if engaged[id(s)] > 0 and capacity - s["accelerators_per_node"] >= used
                    ]
                    if spare:
                        per = spare[0]["accelerators_per_node"] or 1
                        spare_detail = (
                            f"ceil({used} / {per}) = {-(-used // per)} nodes"
                            if len(sets) == 1
                            else f"{used} accelerators fit in fewer nodes"
                        )
            if problems:
                self.f.error(
                    "nodes-used",
                    f"r{pt.c}: " + "; ".join(problems),
                    file=file,
                    point=pt.key,
                    pointer="/nodes_used",
                    fix="Declare, per node type of system_power.json, the nodes this point engages.",
                )
            elif spare_detail:
                self.f.warning(
                    "nodes-used",
                    f"r{pt.c}: nodes_used declares more nodes than the point engages "
                    f"({spare_detail}); the extra nodes only raise this point's power denominator.",
                    file=file,
                    point=pt.key,
                    pointer="/nodes_used",
                )
            else:
                self.f.info(
                    "nodes-used",
                    f"r{pt.c}: nodes_used "
                    + ", ".join(
                        f"set {s.get('node_set_id')}: {by_set.get(id(s), s['nodes'])}/{s['nodes']}"
                        for s in sets
                    ),
                    file=file,
                    point=pt.key,
                )
        # maximal-engagement
        label = f"Point {pt.c}"
        if para is None:
            self.f.warning(
                "maximal-engagement",
                f"{label}: system_desc.json declares no tensor/pipeline/expert/data "
                "parallelism, so section 4.5.3's engagement cannot be checked.",
                file=file,
                point=pt.key,
                fix="Declare the point's parallelism in its system_desc.json.",
            )
            return
        if para["disaggregated"]:
            self.f.warning(
                "maximal-engagement",
                f"{label}: disaggregated serving \u2014 A_replica = TP x PP x EP does "
                "not describe a prefill/decode split, so engagement is left to peer review.",
                file=file,
                point=pt.key,
            )
            return
        if not per_node_known:
            self.f.warning(
                "maximal-engagement",
                f"{label}: accelerators per node are not known for every node set, "
                "so A_provisioned cannot be derived.",
                file=file,
                point=pt.key,
                fix="Give accelerator.count_per_node in system_power.json or accelerators_per_node in "
                "system_desc.json.",
            )
            return
        if (
            replica < 1
            or dp < 1
            or min(para.get(k, 1) for k in ("tensor_parallel", "pipeline_parallel", "expert_parallel")) < 1
        ):
            self.f.error(
                "maximal-engagement",
                f"{label}: TP, PP, EP and DP must each be at least 1.",
                file=pt.file("system_desc.json"),
                point=pt.key,
            )
            return
        a_prov = sum(s["nodes"] * s["accelerators_per_node"] for s in sets)
        dp_max = a_prov // replica
        formula = f"floor({a_prov} / {replica}) = {dp_max}"
        shortfall = pt.yaml.get("dp_shortfall")
        if dp > dp_max:
            self.f.error(
                "maximal-engagement",
                f"{label}: DP {dp} x A_replica {replica} = {dp * replica} accelerators, "
                f"more than the {a_prov} provisioned ({formula}).",
                file=file,
                point=pt.key,
                fix="Provision the accelerators the point uses in system_power.json.",
            )
        elif dp == dp_max:
            if shortfall is not None:
                self.f.warning(
                    "maximal-engagement",
                    f"{label}: DP {dp} = {formula}, engaging {dp * replica} of "
                    f"{a_prov}; dp_shortfall is declared but there is no shortfall.",
                    file=file,
                    point=pt.key,
                    pointer="/dp_shortfall",
                    fix="Remove dp_shortfall.",
                )
            else:
                self.f.info(
                    "maximal-engagement",
                    f"{label}: DP {dp} = {formula}, engaging {dp * replica} of {a_prov}",
                    file=file,
                    point=pt.key,
                )
        elif not isinstance(shortfall, dict):
            self.f.error(
                "maximal-engagement",
                f"{label}: DP {dp} is below {formula}, and the point declares no dp_shortfall (section 8.3).",
                file=file,
                point=pt.key,
                pointer="/dp_shortfall",
                fix="Run DP = floor(A_provisioned / A_replica) replicas, or declare dp_shortfall "
                "(dp_actual, dp_formula, reason).",
            )
        elif (
            shortfall.get("dp_actual") != dp
            or shortfall.get("dp_formula") != dp_max
            or not text(shortfall.get("reason"))
        ):
            self.f.error(
                "maximal-engagement",
                f"{label}: dp_shortfall declares DP {short(shortfall.get('dp_actual'))} "
                f"of {short(shortfall.get('dp_formula'))} (reason {short(shortfall.get('reason'))}), but the "
                f"point runs DP {dp} of {formula}.",
                file=file,
                point=pt.key,
                pointer="/dp_shortfall",
            )
        else:
            self.f.warning(
                "maximal-engagement",
                f"{label}: DP {dp} below {formula}, declared as a shortfall: "
                f"{shortfall.get('reason')!r} \u2014 subject to Methodology objection at peer review.",
                file=file,
                point=pt.key,
                pointer="/dp_shortfall",
            )

    # -- benchmark type

    def benchmark_type(self, pts: list[_Point], where: str) -> None:
        kinds = {pt.agentic for pt in pts if pt.yaml_ok}
        if len(kinds) > 1:
            self.f.error(
                "benchmark-type-consistency", "Some points are agentic and some single-turn.", file=where
            )


def run_rules(layout: Layout, report: Report, *, ruleset: str | Ruleset = "endpoints-v1.0") -> None:
    """Add every rule finding to report.findings and per-point facts to PointResult.extra."""
    rs = ruleset if isinstance(ruleset, Ruleset) else load_ruleset(ruleset)
    report.ruleset = rs.name
    RuleRun(layout, report, rs).run()
