"""Versioned rule parameters (durations, counts, targets, seed sets) loaded from checker/rulesets/*.yaml."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

RULESETS_DIR = Path(__file__).parents[1] / "rulesets"
DEFAULT_RULESET = "endpoints-v1.0"
_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


class RulesetError(ValueError):
    """The named ruleset does not exist or its file is malformed (an operator error, not a submitter's)."""


@dataclass(frozen=True)
class AccuracyTarget:
    """One accuracy metric's gate: score (percent) within [reference*min_fraction, reference*max_fraction]."""

    metric: str
    reference: float
    min_fraction: float
    max_fraction: float | None = None

    @property
    def lower(self) -> float:
        return self.reference * self.min_fraction

    @property
    def upper(self) -> float | None:
        return None if self.max_fraction is None else self.reference * self.max_fraction


@dataclass(frozen=True)
class ModelRules:
    """What the ruleset knows about one benchmark model."""

    name: str
    accuracy_min_samples: int | None = None
    accuracy_targets: tuple[AccuracyTarget, ...] = ()
    # accuracy_results.json dataset_name -> the metrics gated from that dataset's entries; "*" for any dataset
    # not named. Without the table, every target metric is gated from every dataset (as officially).
    accuracy_gated_metrics: dict[str, tuple[str, ...]] = field(default_factory=dict)
    reference_latency_limits_ms: dict[str, float] = field(default_factory=dict)

    def gated_metrics(self, dataset: Any) -> tuple[str, ...]:
        """The target metrics gated from an accuracy entry of `dataset` (accuracy_results.json dataset_name)."""
        table = self.accuracy_gated_metrics
        if not table:
            return tuple(target.metric for target in self.accuracy_targets)
        if isinstance(dataset, str) and dataset in table:
            return table[dataset]
        return table.get("*", ())


@dataclass(frozen=True)
class SeedSet:
    """A published seed set and the cohorts in which a new submission may adopt it."""

    id: str
    seeds: dict[str, int]
    adoption_cohorts: tuple[str, ...] = ()
    published_cohort: str | None = None


@dataclass(frozen=True)
class Ruleset:
    """All parameters of one rules version; `raw` keeps the file for anything not typed here."""

    name: str
    raw: dict[str, Any]
    models: dict[str, ModelRules]
    datasets: dict[str, int]
    seed_sets: dict[str, SeedSet]

    def get(self, *keys: str, default: Any = None) -> Any:
        node: Any = self.raw
        for key in keys:
            if not isinstance(node, dict) or key not in node:
                return default
            node = node[key]
        return node

    # Short accessors for the parameters most rules read.
    @property
    def min_points(self) -> int:
        return int(self.get("points", "min", default=7))

    @property
    def min_points_dedicated_offline(self) -> int:
        return int(self.get("points", "min_with_dedicated_offline", default=8))

    @property
    def max_points(self) -> int:
        return int(self.get("points", "max", default=32))

    @property
    def ultra_low_max(self) -> int:
        return int(self.get("regions", "ultra_low_max", default=32))

    @property
    def margin_fraction(self) -> float:
        return float(self.get("regions", "margin_fraction", default=0.10))

    @property
    def relative_tolerance(self) -> float:
        return float(self.get("tolerances", "relative", default=0.01))

    @property
    def description(self) -> str:
        return str(self.get("description", default="") or "")

    @property
    def preview(self) -> bool:
        """A preview rule set (demos, tests of short sample runs): its results are never official and never rank
        with the results of an official rule set."""
        return self.get("preview", default=False) is True

    @property
    def duration_severity(self) -> str:
        """The severity of rule point-duration (a point shorter than the minimum): "error" unless the rule set
        says "warning" (a preview)."""
        return "warning" if self.get("duration_below_minimum", default="error") == "warning" else "error"

    def min_duration_ms(self, concurrency: int, *, agentic: bool) -> int:
        table = self.get("duration_ms", "agentic" if agentic else "single_turn", default={}) or {}
        if concurrency <= self.ultra_low_max:
            return int(table.get("ultra_low", 600_000))
        return int(table.get("other", 1_200_000))


def _number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise RulesetError(f"{where} must be a finite number, got {value!r}")
    return float(value)


def parse_ruleset(raw: Any, *, name: str) -> Ruleset:
    """Validate and type a ruleset mapping; raises RulesetError with the offending key."""
    if not isinstance(raw, dict):
        raise RulesetError(f"ruleset {name}: top level must be a mapping")
    models: dict[str, ModelRules] = {}
    for model_name, spec in (raw.get("models") or {}).items():
        spec = spec or {}
        if not isinstance(spec, dict):
            raise RulesetError(f"ruleset {name}: models.{model_name} must be a mapping")
        acc = spec.get("accuracy") or {}
        targets = []
        for metric, t in (acc.get("targets") or {}).items():
            where = f"ruleset {name}: models.{model_name}.accuracy.targets.{metric}"
            if not isinstance(t, dict):
                raise RulesetError(f"{where} must be a mapping")
            targets.append(
                AccuracyTarget(
                    metric=str(metric).lower(),
                    reference=_number(t.get("reference"), f"{where}.reference"),
                    min_fraction=_number(t.get("min_fraction", 1.0), f"{where}.min_fraction"),
                    max_fraction=None
                    if t.get("max_fraction") is None
                    else _number(t.get("max_fraction"), f"{where}.max_fraction"),
                )
            )
        min_samples = acc.get("min_samples")
        gated: dict[str, tuple[str, ...]] = {}
        known = {target.metric for target in targets}
        table = acc.get("gated_metrics") or {}
        if not isinstance(table, dict):
            raise RulesetError(
                f"ruleset {name}: models.{model_name}.accuracy.gated_metrics must be a mapping"
            )
        for dataset, metrics in table.items():
            where = f"ruleset {name}: models.{model_name}.accuracy.gated_metrics.{dataset}"
            if not isinstance(metrics, list) or not all(isinstance(m, str) for m in metrics):
                raise RulesetError(f"{where} must be a list of metric names")
            unknown = sorted({m.lower() for m in metrics} - known)
            if unknown:
                raise RulesetError(f"{where} names metrics without a target: {', '.join(unknown)}")
            gated[str(dataset)] = tuple(m.lower() for m in metrics)
        models[str(model_name)] = ModelRules(
            name=str(model_name),
            accuracy_min_samples=None if min_samples is None else int(min_samples),
            accuracy_targets=tuple(targets),
            accuracy_gated_metrics=gated,
            reference_latency_limits_ms=dict(spec.get("reference_latency_limits_ms") or {}),
        )
    datasets = {}
    for ds, size in (raw.get("datasets") or {}).items():
        if isinstance(size, bool) or not isinstance(size, int) or size <= 0:
            raise RulesetError(f"ruleset {name}: datasets.{ds} must be a positive integer")
        datasets[str(ds)] = size
    seed_sets = {}
    for set_id, spec in (raw.get("seed_sets") or {}).items():
        if not isinstance(spec, dict):
            raise RulesetError(f"ruleset {name}: seed_sets.{set_id} must be a mapping")
        seeds = {}
        for key in ("scheduler_rng_seed", "sample_index_rng_seed", "model_seed"):
            value = spec.get(key)
            if isinstance(value, bool) or not isinstance(value, int):
                raise RulesetError(f"ruleset {name}: seed_sets.{set_id}.{key} must be an integer")
            seeds[key] = value
        seed_sets[str(set_id)] = SeedSet(
            id=str(set_id),
            seeds=seeds,
            adoption_cohorts=tuple(str(c) for c in spec.get("adoption_cohorts") or ()),
            published_cohort=None if spec.get("published_cohort") is None else str(spec["published_cohort"]),
        )
    return Ruleset(
        name=str(raw.get("name") or name), raw=raw, models=models, datasets=datasets, seed_sets=seed_sets
    )


def available_rulesets() -> list[str]:
    return sorted(p.stem for p in RULESETS_DIR.glob("*.yaml"))


def _merged(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """`base` with `override`'s keys laid over it, mappings merged key by key (lists and scalars replaced)."""
    merged = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _merged(merged[key], value)
        else:
            merged[key] = value
    return merged


def _read_raw(name: str, seen: tuple[str, ...]) -> dict[str, Any]:
    if not isinstance(name, str) or not _NAME_RE.fullmatch(name):
        raise RulesetError(f"invalid ruleset name {name!r}")
    if name in seen:
        raise RulesetError(f"ruleset {seen[0]}: `extends` loops through {name}")
    path = RULESETS_DIR / f"{name}.yaml"
    if not path.is_file():
        raise RulesetError(f"unknown ruleset {name!r}; available: {', '.join(available_rulesets())}")
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise RulesetError(f"ruleset {name}: {exc}") from exc
    if not isinstance(raw, dict):
        raise RulesetError(f"ruleset {name}: top level must be a mapping")
    base = raw.get("extends")
    if base is None:
        return raw
    # A derived rule set (e.g. a preview) names its base and lists only what it changes.
    own = {key: value for key, value in raw.items() if key != "extends"}
    return _merged(_read_raw(str(base), (*seen, name)), own)


def load_ruleset(name: str = DEFAULT_RULESET) -> Ruleset:
    """Load a packaged ruleset by name (e.g. "endpoints-v1.0"); RulesetError when unknown or malformed. A file with
    `extends: BASE` holds only what differs from BASE (endpoints-v1.0-preview)."""
    return parse_ruleset(_read_raw(name, ()), name=name)
