"""The state one rule run shares: the layout, the report, the ruleset and each point's parsed descriptors."""

from __future__ import annotations

import re
from typing import Any

from checker.judge.rules.common import dig, percentile
from checker.judge.ruleset import Ruleset
from checker.read.inputs import Layout, Limits, PointInput
from checker.read.loaders import load_json, load_yaml
from checker.recompute.numbers import finite
from checker.recompute.replay import derive_official
from checker.report import Findings, PointResult, Report

_FOLDER_RE = re.compile(r"[rc](\d+)")


class Point:
    """One load point with its parsed descriptors and the metric basis the rules judge."""

    def __init__(self, point_input: PointInput, result: PointResult):
        self.input = point_input
        self.result = result
        self.key = point_input.key
        self.concurrency = point_input.concurrency
        self.yaml: dict = {}
        self.yaml_ok = False
        self.system_description: dict | None = None
        self.config: dict | None = None
        self.accuracy: dict | None = None
        self.stored: dict = {}  # result_summary.json exactly as stored (no derived keys)
        self.region: str | None = None
        self.officially_invalid: set[str] = set()  # descriptor files failing the official schema

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

    @property
    def folder_name(self) -> str:
        """The point folder's own name (r<C> in a bundle, c<C> in a run archive)."""
        return self.input.display.rstrip("/").rsplit("/", 1)[-1].rsplit(":", 1)[-1]

    @property
    def folder_concurrency(self) -> int | None:
        """The C of an r<C> / c<C> folder name, None when the folder is named otherwise."""
        match = _FOLDER_RE.fullmatch(self.folder_name)
        return int(match.group(1)) if match else None

    def file(self, name: str) -> str:
        return self.input.display_of(name)

    def system_tps(self) -> float | None:
        summary = self.summary or {}
        derived = _derived_tps(summary)
        return derived if derived is not None else finite(summary.get("system_tps"))

    def tpot_p90_ms(self) -> float | None:
        p90 = finite(percentile((self.summary or {}).get("tpot"), 90.0))
        return None if p90 is None else p90 / 1e6


def voting_points(points: list[Point]) -> list[Point]:
    """The points whose load pattern says the benchmark type: a dedicated Offline run has its own pattern."""
    return [point for point in points if point.yaml_ok and point.offline != "dedicated"]


def curve_is_agentic(points: list[Point]) -> bool:
    """A curve is agentic when every voting point declares agentic_inference (the official reading:
    a mixed curve is reported by benchmark-type-consistency and judged as single-turn)."""
    voting = voting_points(points)
    return bool(voting) and all(point.agentic for point in voting)


def _derived_tps(summary: dict) -> float | None:
    total = finite(dig(summary, "output_sequence_lengths", "total"))
    duration = finite(summary.get("duration_ns"))
    if total is None or duration is None or duration <= 0:
        return None
    return total / (duration / 1e9)


class RuleRun:
    """Holds the layout, report and ruleset of one run, and every point with its parsed descriptors.

    The checks of each area (checker.judge.rules.structure, .disclosure, ...) are functions taking it.
    """

    def __init__(self, layout: Layout, report: Report, ruleset: Ruleset, limits: Limits | None = None):
        self.layout = layout
        self.report = report
        self.ruleset = ruleset
        self.findings: Findings = report.findings
        self.limits = limits or Limits()
        by_key = {result.key: result for result in report.points}
        self.points: list[Point] = []
        for point_input in sorted(
            layout.points, key=lambda found: (found.system, found.model, found.concurrency)
        ):
            result = by_key.get(point_input.key)
            if result is None:  # rules run standalone (tests, tools): claimed straight from the file
                result = PointResult(
                    system=point_input.system,
                    model=point_input.model,
                    concurrency=point_input.concurrency,
                    source=point_input.source,
                )
                report.points.append(result)
            self.points.append(Point(point_input, result))

    def _load(self, point: Point, name: str, *, quiet: bool = False) -> Any:
        return self._load_into(point, name, Findings() if quiet else self.findings)

    def _load_into(self, point: Point, name: str, findings: Findings) -> Any:
        path = point.input.files.get(name)
        if path is None:
            return None
        loader = load_yaml if name.endswith(".yaml") else load_json
        try:
            return loader(
                path, display=point.file(name), findings=findings, limits=self.limits, point=point.key
            )
        except Exception as exc:  # noqa: BLE001 - a loader bug must not lose the rest of the report
            findings.error(
                "descriptor-unreadable",
                f"{name} could not be read: {type(exc).__name__}",
                file=point.file(name),
                point=point.key,
            )
            return None

    def load_point(self, point: Point) -> None:
        data = self._load(point, "point.yaml")
        if isinstance(data, dict):
            point.yaml, point.yaml_ok = data, True
        elif data is not None:
            self.findings.error(
                "point-config-valid",
                "point.yaml must be a mapping of disclosure fields.",
                file=point.file("point.yaml"),
                point=point.key,
            )
        system_description = self._load(point, "system_desc.json")
        point.system_description = system_description if isinstance(system_description, dict) else None
        config_findings = Findings()
        config = self._load_into(point, "config.yaml", config_findings)
        point.config = config if isinstance(config, dict) else None
        for finding in config_findings:  # a config.yaml that is no mapping: the official rule's id
            if finding.rule == "descriptor-not-object":
                finding.rule = "config-file-present"
            self.findings.append(finding)
        if config is not None and not isinstance(config, dict):
            self.findings.error(
                "config-file-present",
                "config.yaml must be a mapping (the client's run configuration).",
                file=point.file("config.yaml"),
                point=point.key,
            )
        accuracy = self._load(point, "accuracy_results.json")
        point.accuracy = accuracy if isinstance(accuracy, dict) else None
        stored = self._load(point, "result_summary.json", quiet=True)  # the lead's check reports its problems
        point.stored = stored if isinstance(stored, dict) else {}
        if point.result.claimed is None and point.stored:
            try:
                derived = derive_official(point.stored, concurrency=point.concurrency)
            except (ArithmeticError, TypeError, ValueError):  # hostile numbers; the rules below report them
                derived = {}
            point.result.claimed = {
                **point.stored,
                **{key: value for key, value in derived.items() if key not in point.stored},
            }
