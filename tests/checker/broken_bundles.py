"""Broken variants of the sample bundle: one per official check that editing files can trigger.

Each variant starts from the sample bundle's AX-8000 curve (AX-4000 removed: one curve, one system)
and changes files the way a submitter might get them wrong. `official` names the official rule the
edit is meant to trigger; tests/checker/test_broken_bundles.py runs both checkers on every variant.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tests.checker.bundle_layout import BUNDLE

SYSTEM = Path("results/Acme_AX-8000")
CURVE = SYSTEM / "llama3_1-8b"
POWER = SYSTEM / "system_power.json"
POINTS = (1, 2, 4, 8, 16, 32, 64)


def base_copy(dest: Path) -> Path:
    """The sample bundle with only the AX-8000 curve, under dest/AcmeCompute/<submission>/."""
    root = dest / "AcmeCompute" / BUNDLE.name
    other = BUNDLE / "results" / "Acme_AX-4000"
    shutil.copytree(BUNDLE, root, ignore=lambda folder, names: names if Path(folder) == other else [])
    (root / "results" / "Acme_AX-4000").rmdir()
    return root


def edit(root: Path, rel: str | Path, change: Callable[[Any], Any]) -> None:
    """Load a YAML or JSON file, let `change` mutate it in place, write it back."""
    path = root / rel
    is_yaml = path.suffix == ".yaml"
    data = yaml.safe_load(path.read_text()) if is_yaml else json.loads(path.read_text())
    change(data)
    path.write_text(yaml.safe_dump(data, sort_keys=False) if is_yaml else json.dumps(data, indent=1))


def point_file(c: int, name: str) -> Path:
    return CURVE / f"r{c}" / name


def every_point(name: str, change: Callable[[Any], Any], points=None) -> Callable[[Path], None]:
    """Edit `name` in the given points, or in every point folder the bundle still has."""

    def apply(root: Path) -> None:
        for c in points or POINTS:
            if points is not None or (root / point_file(c, name)).is_file():
                edit(root, point_file(c, name), change)

    return apply


def one_point(c: int, name: str, change: Callable[[Any], Any]) -> Callable[[Path], None]:
    return every_point(name, change, points=(c,))


def remove(*rels: str | Path) -> Callable[[Path], None]:
    def apply(root: Path) -> None:
        for rel in rels:
            path = root / rel
            shutil.rmtree(path) if path.is_dir() else path.unlink()

    return apply


def both(*steps: Callable[[Path], None]) -> Callable[[Path], None]:
    def apply(root: Path) -> None:
        for step in steps:
            step(root)

    return apply


def setter(**values: Any) -> Callable[[dict], None]:
    return lambda d: d.update(values)


def dropper(*keys: str) -> Callable[[dict], None]:
    def change(d: dict) -> None:
        for key in keys:
            d.pop(key, None)

    return change


def nested(path: str, value: Any) -> Callable[[dict], None]:
    """Set a dotted path (creating mappings on the way); value DROP deletes the key."""

    def change(d: dict) -> None:
        *parents, last = path.split(".")
        node = d
        for key in parents:
            node = node.setdefault(key, {})
        if value is DROP:
            node.pop(last, None)
        else:
            node[last] = value

    return change


DROP = object()


def node_type(change: Callable[[dict], None]) -> Callable[[dict], None]:
    return lambda d: change(d["node_types"][0])


def rename_point(old: int, new: int) -> Callable[[Path], None]:
    def apply(root: Path) -> None:
        (root / CURVE / f"r{old}").rename(root / CURVE / f"r{new}")

    return apply


@dataclass(frozen=True)
class Variant:
    """One broken bundle: its name, the official rule it targets and the edit that breaks it."""

    name: str
    official: str
    apply: Callable[[Path], None]


def _c_max(value: int) -> Callable[[Path], None]:
    return both(
        every_point("system_desc.json", setter(max_supported_concurrency=value)),
        every_point("point.yaml", setter(max_supported_concurrency=value)),
    )


def _summary_value(c: int, **values: Any) -> Callable[[Path], None]:
    return one_point(c, "result_summary.json", setter(**values))


def _accuracy_entry(change: Callable[[dict], None], points=(1,)) -> Callable[[Path], None]:
    return every_point("accuracy_results.json", lambda d: change(d["accuracy_scores"][0]), points=points)


def _power(change: Callable[[dict], None]) -> Callable[[Path], None]:
    def apply(root: Path) -> None:
        edit(root, POWER, change)

    return apply


def _node_set(change: Callable[[dict], None]) -> Callable[[dict], None]:
    return lambda d: change(d["node_sets"][0])


def _fabric(**changes: Any) -> Callable[[Path], None]:
    """Two nodes joined by a present E.4 scale-out fabric (2 x 2 NICs of 400 Gb/s = 1.6 Tb/s, one 51.2 Tb/s
    D.4 reference switch), then `changes` to it; the stated totals are dropped (the NICs change them)."""
    fabric: dict[str, Any] = {
        "present": True,
        "cabling": "passive",
        "required_bandwidth_tbps": 1.6,
        "nics": {"count_per_node": 2, "bandwidth_per_nic_gbps": 400, "counted": True},
        "switches": [{"model": "SN5610", "count": 1, "bandwidth_tbps": 51.2}],
    }
    for path, value in changes.items():
        nested(path.replace("__", "."), value)(fabric)

    def change(d: dict) -> None:
        d["node_sets"][0]["nodes_provisioned"] = 2
        d["scale_out"] = fabric
        d.pop("computed", None)
        d.pop("provisioned_power_kw", None)

    return both(_power(change), every_point("system_desc.json", node_type(setter(number_of_nodes=2))))


def _steady_state(status: str, verdict: str, start: int = 0, end: int = 5) -> dict:
    return {
        "status": status,
        "verdict": verdict,
        "state": {"ttft": "Plateau", "tpot": "Plateau", "system_tps": "Plateau"},
        "window": {"super_pass_start": start, "super_pass_end": end, "duration_s": 1300.0},
    }


VARIANTS: tuple[Variant, ...] = (
    # ---------------------------------------------------------------- structure
    Variant("docs-dir-missing", "required-dir", remove("docs")),
    Variant("src-dir-missing", "src-dir", remove("src")),
    Variant("src-readme-missing", "src-readme", remove("src/acme-serve/README.md")),
    Variant("point-yaml-missing", "measurement-points-present", remove(point_file(8, "point.yaml"))),
    Variant("system-desc-missing", "system-description-present", remove(point_file(8, "system_desc.json"))),
    Variant("result-summary-missing", "result-summary-present", remove(point_file(8, "result_summary.json"))),
    Variant("config-yaml-missing", "config-file-present", remove(point_file(8, "config.yaml"))),
    Variant(
        "config-yaml-not-a-mapping",
        "config-file-present",
        lambda root: (root / point_file(8, "config.yaml")).write_text("- just\n- a list\n"),
    ),
    Variant(
        "accuracy-missing-everywhere",
        "accuracy-present",
        remove(*(point_file(c, "accuracy_results.json") for c in (1, 4, 16, 64))),
    ),
    Variant(
        "model-dir-without-points",
        "point-dirs",
        lambda root: (root / SYSTEM / "gpt-oss-120b").mkdir(),
    ),
    Variant(
        "system-dir-without-model",
        "benchmark-model-dir",
        lambda root: (root / "results" / "Acme_AX-9000").mkdir(),
    ),
    # ---------------------------------------------------------------- system description
    Variant(
        "system-desc-field-missing",
        "system-description-valid",
        every_point("system_desc.json", node_type(dropper("driver"))),
    ),
    Variant(
        "system-desc-wrong-type",
        "system-description-valid",
        every_point("system_desc.json", setter(system_node_ensemble_count="one")),
    ),
    Variant(
        "system-desc-division-unknown",
        "system-description-valid",
        every_point("system_desc.json", setter(division="Open")),
    ),
    Variant(
        "system-desc-short-name-too-long",
        "system-description-valid",
        every_point("system_desc.json", setter(shortened_system_name="Acme AX-8000 Extended Edition")),
    ),
    Variant(
        "system-desc-available-without-url",
        "system-description-valid",
        every_point("system_desc.json", setter(availability_url=None)),
    ),
    Variant(
        "system-desc-no-core-count",
        "system-description-valid",
        every_point(
            "system_desc.json",
            node_type(setter(host_processor_core_count=None, host_processor_vcpu_count=None)),
        ),
    ),
    Variant(
        "system-desc-differs",
        "system-description-consistency",
        one_point(8, "system_desc.json", setter(system_name="Acme AX-8001")),
    ),
    Variant(
        "system-desc-invalid-at-one-point",
        "system-description-consistency",
        one_point(8, "system_desc.json", node_type(dropper("filesystem"))),
    ),
    Variant(
        "tps-utilization-wrong",
        "tps-utilization",
        one_point(8, "system_desc.json", setter(tps_utilization=0.9)),
    ),
    # ---------------------------------------------------------------- point.yaml
    Variant(
        "point-dirname-concurrency",
        "point-dirname-concurrency",
        one_point(16, "point.yaml", setter(concurrency=12)),
    ),
    Variant(
        "point-warmup-completed-exceeds-issued",
        "point-config-valid",
        one_point(8, "point.yaml", nested("warmup.requests_completed", 99)),
    ),
    Variant(
        "point-field-wrong-type",
        "point-config-valid",
        one_point(8, "point.yaml", setter(max_supported_concurrency="many")),
    ),
    Variant(
        "point-disclosure-incomplete",
        "point-disclosure-complete",
        one_point(8, "point.yaml", dropper("link_to_model")),
    ),
    Variant("offline-value-unknown", "offline-declared", one_point(64, "point.yaml", setter(offline="yes"))),
    Variant("region-unknown", "region-declared", one_point(8, "point.yaml", setter(region="low"))),
    Variant(
        "region-misplaced", "region-placement", one_point(8, "point.yaml", setter(region="high_concurrency"))
    ),
    Variant(
        "target-cohort-malformed",
        "target-cohort",
        one_point(8, "point.yaml", setter(target_cohort="2026-12")),
    ),
    Variant(
        "shared-src-missing",
        "shared-path-resolution",
        every_point("point.yaml", setter(shared_src="src/missing")),
    ),
    Variant(
        "load-pattern-poisson",
        "load-pattern",
        one_point(8, "point.yaml", nested("runtime_settings.load_pattern", "poisson")),
    ),
    Variant("warmup-missing", "warmup-present", one_point(8, "point.yaml", dropper("warmup"))),
    Variant(
        "warmup-logs-not-retained",
        "warmup-logs-retained",
        one_point(8, "point.yaml", nested("warmup.logs_retained", False)),
    ),
    Variant(
        "warmup-logs-undeclared",
        "warmup-logs-retained",
        one_point(8, "point.yaml", nested("warmup.logs_retained", DROP)),
    ),
    Variant(
        "warmup-salted",
        "warmup-salt",
        one_point(8, "point.yaml", nested("runtime_settings.warmup.salt", True)),
    ),
    Variant(
        "seed-set-missing-v07-seeds",
        "seed-config-legacy",
        every_point("point.yaml", dropper("seed_set")),
    ),
    Variant(
        "seed-set-missing-seeds-42",
        "seed-config-legacy",
        both(
            every_point("point.yaml", dropper("seed_set")),
            every_point("point.yaml", nested("runtime_settings.runtime.scheduler_rng_seed", 42)),
            every_point("point.yaml", nested("runtime_settings.runtime.sample_index_rng_seed", 42)),
        ),
    ),
    Variant("seed-set-differs", "seed-set-consistency", one_point(8, "point.yaml", setter(seed_set="B"))),
    Variant("seed-set-unpublished", "seed-set-membership", every_point("point.yaml", setter(seed_set="Z"))),
    Variant(
        "seed-runtime-differs",
        "seed-runtime-match",
        one_point(8, "point.yaml", nested("runtime_settings.runtime.model_seed", 1)),
    ),
    Variant(
        "seed-set-out-of-window",
        "seed-set-adoption",
        every_point("point.yaml", setter(target_cohort="2027-06-C0")),
    ),
    Variant(
        "model-name-misspelt",
        "model-name-valid",
        every_point("point.yaml", setter(model_name="llama3.1-8b")),
    ),
    Variant(
        "model-name-unknown",
        "model-name-valid",
        every_point("point.yaml", setter(model_name="mistral-7b")),
    ),
    Variant(
        "model-name-other-folder",
        "model-name-consistency",
        every_point("point.yaml", setter(model_name="gpt-oss-120b")),
    ),
    Variant(
        "model-name-differs",
        "config-consistency-model",
        one_point(8, "point.yaml", setter(model_name="gpt-oss-120b")),
    ),
    Variant(
        "dataset-differs",
        "config-consistency-dataset",
        one_point(8, "point.yaml", setter(dataset="other_prompts")),
    ),
    Variant(
        "benchmark-type-mixed",
        "benchmark-type-consistency",
        one_point(8, "point.yaml", nested("runtime_settings.load_pattern", "agentic_inference")),
    ),
    Variant(
        "steady-state-bad-status",
        "steady-state-valid",
        one_point(8, "point.yaml", setter(steady_state=_steady_state("great", "STEADY STATE"))),
    ),
    Variant(
        "steady-state-too-short",
        "steady-state-consistency",
        one_point(8, "point.yaml", setter(steady_state=_steady_state("windowable", "STEADY STATE", 0, 1))),
    ),
    Variant(
        "steady-state-low-confidence",
        "steady-state-basis",
        one_point(
            8, "point.yaml", setter(steady_state=_steady_state("insufficient_passes", "not found", 0, 1))
        ),
    ),
    Variant(
        "speculative-decoding-unapproved",
        "approved-drafter",
        one_point(
            8,
            "point.yaml",
            setter(speculative_decoding={"model_id": "acme/drafter", "weight_checksum": "git-sha1:00"}),
        ),
    ),
    # ---------------------------------------------------------------- regions, counts, Offline
    Variant("c-max-too-low", "region-computation", _c_max(24)),
    Variant("point-above-margin", "concurrency-in-range", _c_max(40)),
    Variant(
        "c-min-override-not-a-point",
        "c-min-override",
        every_point("system_desc.json", setter(c_min_override=3)),
    ),
    Variant(
        "c-min-override-partial",
        "c-min-override",
        one_point(1, "system_desc.json", setter(c_min_override=2)),
    ),
    Variant("too-few-points", "point-count", remove(CURVE / "r2")),
    Variant("no-high-point", "high-concurrency-coverage", remove(CURVE / "r32", CURVE / "r64")),
    Variant("no-medium-point", "med-concurrency-coverage", remove(CURVE / "r8", CURVE / "r16")),
    Variant("no-offline", "offline-point-present", one_point(64, "point.yaml", dropper("offline"))),
    Variant(
        "offline-elected-below-c-max",
        "offline-point-present",
        both(
            one_point(64, "point.yaml", dropper("offline")),
            one_point(32, "point.yaml", setter(offline="elected")),
        ),
    ),
    Variant(
        "min-query-count-short",
        "min-query-count",
        every_point("point.yaml", setter(dataset="cnn_dailymail")),
    ),
    # ---------------------------------------------------------------- metrics
    Variant(
        "accounting-failed-inside-completed",
        "metric-consistency-accounting",
        _summary_value(8, n_samples_failed=4),
    ),
    Variant(
        "accounting-completed-short",
        "metric-consistency-accounting",
        _summary_value(8, n_samples_completed=150),
    ),
    Variant("duration-zero", "metric-consistency-duration", _summary_value(8, duration_ns=0)),
    Variant("system-tps-stored-wrong", "metric-consistency-system-tps", _summary_value(8, system_tps=1.0)),
    Variant(
        "tpot-p90-missing",
        "metric-consistency-tpot-p90",
        one_point(8, "result_summary.json", lambda d: d["tpot"]["percentiles"].pop("90.0")),
    ),
    Variant(
        "tps-per-user-stored-wrong", "metric-consistency-tps-per-user", _summary_value(8, tps_per_user=1.0)
    ),
    Variant(
        "tps-per-kw-stored-wrong", "metric-consistency-tps-per-kw", _summary_value(8, system_tps_per_kw=1.0)
    ),
    Variant("summary-wrong-type", "result-file-valid", _summary_value(8, n_samples_issued="many")),
    # ---------------------------------------------------------------- accuracy
    Variant(
        "accuracy-not-a-list",
        "accuracy-valid",
        one_point(16, "accuracy_results.json", setter(accuracy_scores="x")),
    ),
    Variant(
        "accuracy-entry-unnamed", "accuracy-valid", _accuracy_entry(setter(dataset_name=""), points=(16,))
    ),
    Variant("accuracy-band-missing", "accuracy-coverage", remove(point_file(16, "accuracy_results.json"))),
    Variant(
        "accuracy-extra-result",
        "accuracy-coverage",
        lambda root: shutil.copy(
            root / point_file(1, "accuracy_results.json"), root / point_file(2, "accuracy_results.json")
        ),
    ),
    # ---------------------------------------------------------------- power
    Variant("power-missing", "power-descriptor", remove(POWER)),
    Variant("power-cooling-mismatch", "power-descriptor", _power(setter(cooling="liquid"))),
    Variant("power-total-wrong", "power-descriptor", _power(setter(provisioned_power_kw=20.0))),
    Variant(
        "power-two-values",
        "power-descriptor",
        _power(_node_set(lambda n: n["components"]["cpu"]["tdp_per_unit"].update(value_kw=0.35))),
    ),
    Variant(
        "power-source-not-url",
        "power-descriptor",
        _power(_node_set(lambda n: n["components"]["cpu"]["tdp_per_unit"].update(source="the datasheet"))),
    ),
    Variant(
        "power-scale-out-single-node",
        "power-descriptor",
        _power(setter(scale_out={"present": True})),
    ),
    Variant(
        "power-scale-out-missing-on-two-nodes",
        "power-descriptor",
        both(
            _power(_node_set(setter(nodes_provisioned=2))),
            every_point("system_desc.json", node_type(setter(number_of_nodes=2))),
        ),
    ),
    Variant(
        "power-scale-out-bandwidth-below-nics",
        "power-descriptor",
        _fabric(required_bandwidth_tbps=0.8),
    ),
    Variant(
        "power-scale-out-bandwidth-above-nics",
        "power-descriptor",
        _fabric(required_bandwidth_tbps=3.2),
    ),
    Variant(
        "power-scale-out-switches-short",
        "power-descriptor",
        _fabric(switches=[{"model": "SN5610", "count": 1, "bandwidth_tbps": 1.0}]),
    ),
    Variant(
        "power-scale-out-nics-not-counted",
        "power-descriptor",
        _fabric(nics__counted=False),
    ),
    Variant(
        "power-scale-out-nics-counted-published",
        "power-descriptor",
        both(
            _fabric(),
            _power(
                _node_set(
                    lambda n: (
                        n.pop("components"),
                        n.update(
                            power_method="published_system",
                            published_power={
                                "value_w": 9000,
                                "source_type": "vendor_spec",
                                "source": "https://acme.example/specs/ax-8000",
                            },
                        ),
                    )
                )
            ),
        ),
    ),
    Variant(
        "power-unknown-ensemble", "power-descriptor", _power(_node_set(setter(system_node_ensemble_id=7)))
    ),
    Variant(
        "nodes-used-unknown-ensemble",
        "nodes-used",
        one_point(8, "point.yaml", setter(nodes_used=[{"system_node_ensemble_id": 7, "nodes": 1}])),
    ),
    Variant(
        "engagement-dp-short",
        "maximal-engagement",
        both(
            one_point(8, "system_desc.json", setter(data_parallel=4)),
            one_point(8, "system_desc.json", lambda d: d["config_summary"].update(data_parallel=4)),
        ),
    ),
)

VARIANTS_BY_NAME = {variant.name: variant for variant in VARIANTS}
SEVERITIES = ("error", "warning")
Key = tuple[str, str]


def official_results(root: Path) -> list[dict]:
    """The official checker's results through its Python API: the SubmissionChecker(path).run() that its
    `check-submission` command runs and writes with -o, without a process (and a PyPI version check) each."""
    from submission_checker.checker import SubmissionChecker

    return json.loads(SubmissionChecker(root).run().model_dump_json())["results"]


def judge(name: str, dest: str) -> tuple[str, set[Key], set[Key]]:
    """Build variant `name` under dest and run both checkers on it: (name, official keys, portal keys).
    A module-level function, so a process pool can run the corpus on every core."""
    from checker.cli.local_check import check

    root = base_copy(Path(dest))
    VARIANTS_BY_NAME[name].apply(root)
    official = {(r["rule"], r["severity"]) for r in official_results(root) if r.get("severity") in SEVERITIES}
    portal = {
        (f.rule, f.severity)
        for f in check([root], tokenizer=None, official=False, ruleset="endpoints-v1.0-preview").findings
        if f.severity in SEVERITIES
    }
    return name, official, portal
