"""Accuracy: coverage of the mandatory bands, the per-point gates, and the agentic gates (section 4.3)."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from checker.judge.rules.common import count, dig, short
from checker.judge.rules.state import Point, RuleRun, curve_is_agentic
from checker.recompute.numbers import finite
from checker.recompute.regions import Regions


def check_accuracy(
    run: RuleRun, model: str, points: list[Point], regions: Regions | None, where: str
) -> None:
    declared = [point.yaml.get("model_name") for point in points]
    model_rules = run.ruleset.models.get(model) or next(
        (
            run.ruleset.models[name]
            for name in declared
            if isinstance(name, str) and name in run.ruleset.models
        ),
        None,
    )
    agentic = curve_is_agentic(points)
    # An inline-only result (the performance run's own score, agentic) is not an accuracy run.
    with_acc = [
        point
        for point in points
        if point.input.files.get("accuracy_results.json") and _has_accuracy_run(run, point)
    ]
    if not (agentic and _agentic_targets(run, model, points) is not None):  # agentic gates differ (below)
        for point in with_acc:
            _check_accuracy_point(run, point, model_rules)
    if regions is None:
        return
    candidates, owner = _band_matching(with_acc, regions)
    labels = {
        "ultra_low": "Ultra Low Concurrency",
        "low_concurrency": "Low Concurrency",
        "med_concurrency": "Medium Concurrency",
        "high_concurrency": "High Concurrency",
    }
    missing = [labels[bands] for bands in labels if bands not in owner]
    filled = set(owner.values())
    extra = [
        concurrency for concurrency, _, elected in candidates if concurrency not in filled and not elected
    ]
    n = 4 if agentic else 5
    if missing:
        run.findings.error(
            "accuracy-coverage",
            f"No accuracy run in: {', '.join(missing)}.",
            file=where,
            fix="Run the accuracy dataset at one point per mandatory region plus the Offline point.",
        )
    if extra:
        run.findings.error(
            "accuracy-coverage",
            f"Accuracy results at {', '.join(f'r{concurrency}' for concurrency in extra)} exceed the "
            f"N = {n} mandatory points.",
            file=where,
            fix="Keep exactly one accuracy run per region.",
        )
    if not missing and not extra:
        run.findings.info(
            "accuracy-coverage",
            f"Accuracy present in all four mandatory bands ({len(with_acc)} point(s) "
            f"carry an accuracy run; N={n})",
            file=where,
        )
    for point in points:
        if point.offline in ("dedicated", "elected") and not agentic:
            if point not in with_acc:
                run.findings.error(
                    "accuracy-coverage",
                    f"The Offline point r{point.concurrency} has no accuracy run.",
                    file=where,
                    point=point.key,
                )


def _band_matching(with_acc: list[Point], regions: Regions) -> tuple[list, dict[str, int]]:
    """Each accuracy result fills at most one mandatory band (maximum bipartite matching, elected last)."""
    candidates = []
    for point in with_acc:
        if point.offline == "dedicated":
            continue
        bands = []
        if regions.ultra_low.contains(point.concurrency):
            bands.append("ultra_low")
        region = regions.classify(point.concurrency)
        if region in ("low_concurrency", "med_concurrency", "high_concurrency"):
            bands.append(region)
        candidates.append((point.concurrency, bands, point.offline == "elected"))
    candidates.sort(key=lambda candidate: candidate[2])
    owner: dict[str, int] = {}
    options = {concurrency: bands for concurrency, bands, _ in candidates}

    def augment(concurrency: int, seen: set[str]) -> bool:
        for band in options[concurrency]:
            if band in seen:
                continue
            seen.add(band)
            if band not in owner or augment(owner[band], seen):
                owner[band] = concurrency
                return True
        return False

    for concurrency, _, _ in candidates:
        augment(concurrency, set())
    return candidates, owner


def _entries(accuracy: Any) -> dict[str, dict]:
    scores = accuracy.get("accuracy_scores", accuracy) if isinstance(accuracy, dict) else None
    if isinstance(scores, list):
        return {
            entry["dataset_name"]: entry
            for entry in scores
            if isinstance(entry, dict) and isinstance(entry.get("dataset_name"), str)
        }
    if isinstance(scores, dict):
        return {str(k): v for k, v in scores.items() if isinstance(v, dict)}
    return {}


def _inline_name(run: RuleRun, entries: dict[str, dict]) -> str | None:
    performance_type = run.ruleset.get("agentic_accuracy", "performance_dataset_type", default="performance")
    for name, entry in entries.items():
        if entry.get("dataset_type") == performance_type:
            return name
    legacy = entries.get(performance_type)
    return performance_type if legacy is not None and "dataset_type" not in legacy else None


def _has_accuracy_run(run: RuleRun, point: Point) -> bool:
    if point.accuracy is None or "accuracy_results.json" in point.officially_invalid:
        return False  # unreadable or invalid (reported as accuracy-valid): fills no band, as officially
    entries = _entries(point.accuracy)
    if not entries:
        return False
    inline = _inline_name(run, entries)
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


def _metric_scores(run: RuleRun, entry: dict) -> dict[str, float]:
    raw = entry.get("score")
    items: Iterable[tuple[Any, Any]]
    if isinstance(raw, dict):
        items = raw.items()
    elif raw is not None:
        items = [("score", raw)]
    else:
        items = [(k, v) for k, v in entry.items() if k not in _META_KEYS]
    out = {}
    for k, v in items:
        try:
            value = float(v) if not isinstance(v, bool) and isinstance(v, int | float | str) else None
        except (TypeError, ValueError, OverflowError):
            value = None
        if value is not None and math.isfinite(value):
            out[str(k)] = value
    return out


def _dataset_score(run: RuleRun, point: Point, dataset: str, rule: str) -> float | None:
    """One dataset's score as a percentage; scorers report fractions, so anything outside [0, 1] is an error."""
    entry = _entries(point.accuracy).get(dataset)
    scores = _metric_scores(run, entry) if entry is not None else {}
    if not scores:
        return None
    value = scores.get("score", next(iter(scores.values())))
    if not 0.0 <= value <= 1.0:
        run.findings.error(
            rule,
            f"r{point.concurrency}: `{dataset}` score {value} is not a fraction in [0, 1], which is what the "
            "reference scorer reports.",
            file=point.file("accuracy_results.json"),
            point=point.key,
        )
        return None
    return value * 100.0


def _agentic_targets(run: RuleRun, model: str, points: list[Point]) -> dict | None:
    declared = [point.yaml.get("model_name") for point in points]
    names = [model] + [name for name in declared if isinstance(name, str)]
    for name in names:
        block = run.ruleset.get("models", name, "agentic_accuracy")
        if isinstance(block, dict):
            return block
    return None


def check_agentic_accuracy(
    run: RuleRun, model: str, points: list[Point], regions: Regions | None, where: str
) -> None:
    if (
        not points
        or not all(point.agentic for point in points if point.yaml_ok)
        or not any(point.yaml_ok for point in points)
    ):
        return
    targets = _agentic_targets(run, model, points)
    if targets is None:
        run.findings.warning(
            "agentic-accuracy",
            f"Agentic curve for model {model!r}, which is not one of the agentic "
            f"benchmarks {run.ruleset.name} publishes thresholds for \u2014 no agentic accuracy gate "
            "applied.",
            file=where,
        )
        return
    inline_min, swe_min = finite(targets.get("inline_min")), finite(targets.get("swebench_min"))
    osl = targets.get("osl_range")
    if inline_min is None and swe_min is None:
        run.findings.warning(
            "agentic-accuracy",
            f"{model}: the accuracy thresholds are TBD, so no agentic accuracy gate can be applied.",
            file=where,
        )
        return
    spec = run.ruleset.get("agentic_accuracy", default={}) or {}
    if inline_min is not None:
        check_inline_accuracy(run, model, points, inline_min, spec, where)
    if swe_min is not None and regions is not None:
        check_swebench_accuracy(run, model, points, regions, swe_min, spec, where)
    if isinstance(osl, list | tuple) and len(osl) == 2 and all(finite(v) is not None for v in osl):
        check_agentic_osl(run, model, points, osl, spec, where)


def check_inline_accuracy(
    run: RuleRun, model: str, points: list[Point], inline_min: float, spec: dict, where: str
) -> None:
    """agentic-accuracy-inline: every submitted point's inline score clears the model's threshold."""
    missing = []
    for point in sorted((point for point in points if point.yaml_ok), key=lambda point: point.concurrency):
        entries = _entries(point.accuracy) if point.accuracy is not None else {}
        name = _inline_name(run, entries)
        if name is None or not _metric_scores(run, entries[name]):
            missing.append(point.concurrency)
            continue
        score = _dataset_score(run, point, name, "agentic-accuracy-inline")
        if score is None:
            continue
        if score < inline_min:
            run.findings.error(
                "agentic-accuracy-inline",
                f"r{point.concurrency}: inline accuracy {score:.2f} < {inline_min} required for {model}.",
                file=point.file("accuracy_results.json"),
                point=point.key,
            )
        else:
            run.findings.info(
                "agentic-accuracy-inline",
                f"r{point.concurrency}: inline accuracy {score:.2f} \u2265 {inline_min}",
                file=point.file("accuracy_results.json"),
                point=point.key,
            )
    if missing:
        performance_type = spec.get("performance_dataset_type", "performance")
        run.findings.error(
            "agentic-accuracy-inline",
            f"No inline accuracy score at {', '.join(f'r{concurrency}' for concurrency in missing)} (an accuracy entry "
            f"with `dataset_type: {performance_type}` and a score); every submitted point must clear the inline "
            "threshold.",
            file=where,
            fix="Submit each point's accuracy_results.json as the client writes it, with inline "
            "accuracy scoring on the performance dataset.",
        )


def check_swebench_accuracy(
    run: RuleRun, model: str, points: list[Point], regions: Regions, swe_min: float, spec: dict, where: str
) -> None:
    """agentic-accuracy-swebench: the mean of one SWE-bench result per mandatory region clears the threshold."""
    dataset = spec.get("swebench_dataset", "swe_bench")
    n_required = int(spec.get("swebench_mean_of_n", 4))
    by_concurrency = {point.concurrency: point for point in points}
    with_acc = [point for point in points if point.accuracy is not None and _has_accuracy_run(run, point)]
    candidates, owner = _band_matching(with_acc, regions)
    assignment = {concurrency: band for band, concurrency in owner.items()}
    by_band: dict[str, list[tuple[int, float]]] = {}
    for concurrency, bands, _ in candidates:
        score = _dataset_score(run, by_concurrency[concurrency], dataset, "agentic-accuracy-swebench")
        band = assignment.get(concurrency) or (bands[0] if bands else None)
        if score is not None and band is not None:
            by_band.setdefault(band, []).append((concurrency, score))
    if not by_band:
        run.findings.warning(
            "agentic-accuracy-swebench",
            f"No mandatory-band point reports a `{dataset}` accuracy "
            "score; official agentic submissions must enable SWE-bench accuracy.",
            file=where,
        )
    else:
        for band, results in by_band.items():
            if len(results) > 1:
                run.findings.warning(
                    "agentic-accuracy-swebench",
                    f"{band.replace('_', ' ')} has {len(results)} SWE-bench results "
                    f"({', '.join(f'r{concurrency}' for concurrency, _ in results)}); one per region is expected, so "
                    "they are averaged into one value for the band.",
                    file=where,
                )
        band_scores = [sum(v for _, v in results) / len(results) for results in by_band.values()]
        mean, n = sum(band_scores) / len(band_scores), len(band_scores)
        basis = f"mean of {n} band(s)" + ("" if n == n_required else f" ({n_required} required)")
        if mean < swe_min:
            run.findings.error(
                "agentic-accuracy-swebench",
                f"SWE-bench {basis} = {mean:.2f} < {swe_min} required for {model}.",
                file=where,
            )
        elif n != n_required:
            run.findings.warning(
                "agentic-accuracy-swebench",
                f"SWE-bench {basis} = {mean:.2f} \u2265 {swe_min}, but "
                f"section 4.3 averages one result from each of the {n_required} mandatory regions.",
                file=where,
            )
        else:
            run.findings.info(
                "agentic-accuracy-swebench",
                f"SWE-bench {basis} = {mean:.2f} \u2265 {swe_min}",
                file=where,
            )


def check_agentic_osl(
    run: RuleRun, model: str, points: list[Point], osl: Any, spec: dict, where: str
) -> None:
    """agentic-osl-range: each point's full-run OSL per-turn mean lies within the model's range."""
    low, high = float(osl[0]), float(osl[1])
    field = spec.get("osl_full_run_field", "output_sequence_lengths_full_run")
    missing = []
    for point in sorted(points, key=lambda point: point.concurrency):
        if not point.stored:
            continue
        # The raw log's every answered turn (checker.recompute.replay, docs/agentic.md) when there is one: the client
        # never writes the field; else the stored field, as the official checker reads it.
        recomputed = point.result.recomputed if isinstance(point.result.recomputed, dict) else {}
        avg = finite(dig(recomputed, "output_sequence_lengths_full_run", "output_sequence_lengths", "avg"))
        basis = " (recomputed from the raw log's turns)"
        if avg is None:
            avg, basis = finite(dig(point.stored, field, "output_sequence_lengths", "avg")), ""
        if avg is None:
            missing.append(point.concurrency)
        elif low <= avg <= high:
            run.findings.info(
                "agentic-osl-range",
                f"r{point.concurrency}: full-run OSL per-turn mean {avg:.1f}{basis} within {low:g}\u2013{high:g} "
                "tokens",
                file=point.file("result_summary.json"),
                point=point.key,
            )
        else:
            run.findings.error(
                "agentic-osl-range",
                f"r{point.concurrency}: full-run OSL per-turn mean {avg:.1f}{basis} outside "
                f"{low:g}\u2013{high:g} tokens required for {model}.",
                file=point.file("result_summary.json"),
                point=point.key,
                pointer=f"/{field}/output_sequence_lengths/avg" if not basis else None,
            )
    if missing:
        run.findings.warning(
            "agentic-osl-range",
            f"No `{field}.output_sequence_lengths.avg` in result_summary.json "
            f"for {', '.join(f'r{concurrency}' for concurrency in missing)}; the windowed output_sequence_lengths is "
            "not the field to gate.",
            file=where,
        )


def _check_accuracy_point(run: RuleRun, point: Point, model_rules: Any) -> None:
    file = point.file("accuracy_results.json")
    accuracy = point.accuracy
    if accuracy is None or "accuracy_results.json" in point.officially_invalid:
        return  # unreadable (the loader reported it) or invalid (accuracy-valid reported it)
    scores = accuracy.get("accuracy_scores")
    entries = (
        scores if isinstance(scores, list) else list(scores.values()) if isinstance(scores, dict) else None
    )
    if not entries or not all(isinstance(entry, dict) for entry in entries):
        run.findings.error(
            "accuracy-valid",
            f"r{point.concurrency}: accuracy_scores must be a non-empty list of objects.",
            file=file,
            point=point.key,
            pointer="/accuracy_scores",
        )
        return
    unnamed = str(run.ruleset.get("accuracy_scores", "unnamed_score", default="score"))
    total = _record_accuracy_scores(run, point, entries, model_rules, unnamed)
    if model_rules is None or model_rules.accuracy_min_samples is None:
        run.findings.warning(
            "accuracy-gate",
            f"r{point.concurrency}: {run.ruleset.name} has no accuracy thresholds for this model.",
            file=file,
            point=point.key,
        )
        return
    if total < model_rules.accuracy_min_samples:
        run.findings.error(
            "accuracy-sample-count",
            f"{total} samples (issued) < required {model_rules.accuracy_min_samples}",
            file=file,
            point=point.key,
            fix=f"Run the full accuracy dataset ({model_rules.accuracy_min_samples} samples).",
        )
    _check_accuracy_targets(run, point, model_rules, unnamed)


def _record_accuracy_scores(
    run: RuleRun, point: Point, entries: list[dict], model_rules: Any, unnamed: str
) -> int:
    """The point's accuracy samples and its sample-weighted score per gated metric, kept in the point's
    result (extra.accuracy); returns the samples issued."""
    file = point.file("accuracy_results.json")
    total = 0
    metrics: dict[str, list[tuple[float, float]]] = {}
    for entry in entries:
        samples = count(entry.get("total_samples"))
        if samples is None:
            unit_samples, repeats = (
                count(entry.get("unit_samples", entry.get("num_samples"))),
                count(entry.get("num_repeats", entry.get("n_repeats", 1))),
            )
            samples = None if unit_samples is None else unit_samples * max(repeats or 1, 1)
        if samples is None:
            run.findings.error(
                "accuracy-valid",
                f"r{point.concurrency}: dataset {short(entry.get('dataset_name'))} states no sample count.",
                file=file,
                point=point.key,
            )
            continue
        total += samples
        # the rule set's gated metrics of this entry's dataset (models.<m>.accuracy.gated_metrics), and the
        # scorer's unnamed primary score (accuracy_scores.unnamed_score)
        gated_here = set(model_rules.gated_metrics(entry.get("dataset_name")) if model_rules else ())
        for key, value in entry.items():
            if key == unnamed or key.lower() in gated_here:
                v = finite(value)
                if v is not None:
                    metrics.setdefault(key.lower(), []).append((v, float(min(samples, 10**15))))
    point.result.extra["accuracy"] = {
        "samples": total,
        "scores": {
            k: sum(v * w for v, w in pairs) / (sum(w for _, w in pairs) or 1) for k, pairs in metrics.items()
        },
    }
    return total


def _check_accuracy_targets(run: RuleRun, point: Point, model_rules: Any, unnamed: str) -> None:
    """accuracy-gate: each of the model's gated metrics within its target (scorers' fractions read as percent)."""
    file = point.file("accuracy_results.json")
    scores = point.result.extra["accuracy"]["scores"]
    fractions = run.ruleset.get("accuracy_scores", "fractions", default=True) is True
    gated = False
    for target in model_rules.accuracy_targets:
        score = scores.get(target.metric)
        if score is None and list(scores) == [unnamed] and len(model_rules.accuracy_targets) == 1:
            score = scores[unnamed]
        if score is None:
            continue
        gated = True
        if fractions and 0.0 <= score <= 1.0 and target.lower > 1.0:
            score *= 100.0  # scorers report fractions; targets are percentages
        upper = target.upper
        if score < target.lower or (upper is not None and score > upper):
            bound = (
                f"[{target.lower:.4f}, {upper:.4f}]" if upper is not None else f"\u2265 {target.lower:.4f}"
            )
            run.findings.error(
                "accuracy-gate",
                f"r{point.concurrency}: {target.metric} = {score:.4f} outside {bound} (hard gate).",
                file=file,
                point=point.key,
            )
    if not gated:
        run.findings.warning(
            "accuracy-gate",
            f"r{point.concurrency}: none of the gated metrics ({', '.join(target.metric for target in model_rules.accuracy_targets)}) "
            f"is reported (found: {', '.join(sorted(scores)) or 'none'}), so the accuracy gate cannot "
            "be evaluated.",
            file=file,
            point=point.key,
            fix="Score the accuracy run with the benchmark's official metrics.",
        )


def check_accuracy_present(run: RuleRun) -> None:
    if not run.points:
        return
    if any(point.input.files.get("accuracy_results.json") for point in run.points):
        run.findings.info("accuracy-present", "At least one curve carries accuracy results.")
    else:
        run.findings.error(
            "accuracy-present",
            "No point carries accuracy_results.json.",
            fix="Run the accuracy dataset at the mandatory points and include accuracy_results.json.",
        )
