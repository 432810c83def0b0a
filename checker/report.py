"""Findings, per-point results and the Report that every check returns."""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from typing import Any

SEVERITIES = ("error", "warning", "info")


@dataclass
class Finding:
    """One observation about the input: a stable rule id, a severity and an actionable sentence."""

    rule: str
    severity: str
    message: str
    file: str | None = None
    line: int | None = None
    pointer: str | None = None
    point: str | None = None  # "<system>/<model>/r<C>" when the finding belongs to one load point
    fix: str | None = None

    def __post_init__(self) -> None:
        if self.severity not in SEVERITIES:
            raise ValueError(f"unknown severity {self.severity!r}")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class Findings(list):
    """A list of findings with helpers that keep call sites short."""

    def add(self, rule: str, severity: str, message: str, **where: Any) -> Finding:
        finding = Finding(rule=rule, severity=severity, message=message, **where)
        self.append(finding)
        return finding

    def error(self, rule: str, message: str, **where: Any) -> Finding:
        return self.add(rule, "error", message, **where)

    def warning(self, rule: str, message: str, **where: Any) -> Finding:
        return self.add(rule, "warning", message, **where)

    def info(self, rule: str, message: str, **where: Any) -> Finding:
        return self.add(rule, "info", message, **where)


@dataclass
class PointResult:
    """One load point: where it came from, what the submitter claimed and what the portal recomputed."""

    system: str
    model: str
    concurrency: int
    source: str
    claimed: dict[str, Any] | None = None
    recomputed: dict[str, Any] | None = None
    extra: dict[str, Any] = field(default_factory=dict)  # power, region, accuracy ...

    @property
    def key(self) -> str:
        return f"{self.system}/{self.model}/r{self.concurrency}"

    def to_dict(self) -> dict[str, Any]:
        out = {
            "system": self.system,
            "model": self.model,
            "concurrency": self.concurrency,
            "source": self.source,
            "claimed": self.claimed,
            "recomputed": self.recomputed,
        }
        out.update(self.extra)
        return out


@dataclass
class Report:
    """Everything one check produced; serialises to the documented JSON form (docs/report-format.md)."""

    points: list[PointResult] = field(default_factory=list)
    findings: Findings = field(default_factory=Findings)
    curves: list[dict[str, Any]] = field(default_factory=list)
    checker_version: str = ""
    ruleset: str | None = None
    inputs: list[str] = field(default_factory=list)
    unreadable: bool = False  # no input could be read at all (CLI exit 2)
    official: dict[str, Any] | None = (
        None  # the official checker's verdict when it was run (checker.cli.official_cross_check)
    )

    @property
    def verdict(self) -> str:
        return "fail" if any(f.severity == "error" for f in self.findings) else "pass"

    def counts(self) -> dict[str, int]:
        out = {s: 0 for s in SEVERITIES}
        for f in self.findings:
            out[f.severity] += 1
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": "endpoints-portal-report/1",
            "verdict": self.verdict,
            "checker_version": self.checker_version,
            "ruleset": self.ruleset,
            "inputs": self.inputs,
            "counts": self.counts(),
            "points": [p.to_dict() for p in self.points],
            "curves": self.curves,
            "findings": [f.to_dict() for f in self.findings],
            **({"official": self.official} if self.official is not None else {}),
        }

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(json_safe(self.to_dict()), indent=indent, allow_nan=False, default=str)


def json_safe(value: Any) -> Any:
    """The same structure with NaN/Infinity (which hostile inputs can carry) replaced by None."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    return value
