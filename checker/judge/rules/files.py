"""Descriptor files against the fields and types the official tools require, under the official rule ids.

The schemas are named by the rule set (`official_schemas:`), so a new round can change them with its
rule file. A point.yaml failing its schema is not read by the point rules (point-rules-skipped), a
result summary failing its schema is not judged by the metric rules, and an accuracy file failing
its schema fills no accuracy band: the official checker does the same.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError

from checker.judge.rules.state import Point, RuleRun
from checker.read.loaders import json_pointer

SCHEMA_DIR = Path(__file__).resolve().parents[2] / "schemas"
MAX_FINDINGS_PER_FILE = 20


@cache
def _validator(relative: str) -> Draft202012Validator:
    path = (SCHEMA_DIR / relative).resolve()
    if SCHEMA_DIR not in path.parents:
        raise ValueError(f"schema {relative!r} is outside checker/schemas/")
    schema = json.loads(path.read_text(encoding="utf-8"))
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def _field(parts: Any) -> str:
    return ".".join(str(part) for part in parts) or "(top level)"


def _problem(error: ValidationError) -> tuple[str, str]:
    """(field, problem) worded as the official checker words its field errors."""
    field = _field(error.absolute_path)
    if error.validator == "required":
        missing = str(error.message).split("'")[1] if "'" in error.message else ""
        return _field([*error.absolute_path, missing]), "required, but missing"
    if (
        error.validator == "anyOf"
        and isinstance(error.instance, dict)
        and "host_memory_configuration" in str(error.schema)
    ):
        return field, "a node type must give host_processor_core_count or host_processor_vcpu_count"
    if error.validator in ("anyOf", "type"):
        return field, f"expected another type, got {json.dumps(error.instance, default=str)[:60]}"
    if error.validator == "pattern":
        return field, f"{json.dumps(error.instance, default=str)[:60]} is not an accepted value"
    if error.validator == "maxLength":
        return field, f"{json.dumps(error.instance)[:60]} is longer than {error.validator_value} characters"
    return field, str(error.message)[:200]


def check_official_files(run: RuleRun, point: Point) -> None:
    """Validate each descriptor of one point against its official schema; mark what the rules may read."""
    schemas = run.ruleset.get("official_schemas", default={}) or {}
    for name, spec in schemas.items():
        data = _parsed(point, name)
        if data is None:
            continue
        errors = sorted(
            _validator(str(spec["schema"])).iter_errors(data), key=lambda e: list(map(str, e.absolute_path))
        )
        if name == "point.yaml" and not errors:
            for field, problem in _warmup_problems(data):
                _report(run, point, name, spec["rule"], field, problem, "/" + field.replace(".", "/"))
                point.officially_invalid.add(name)
        if name == "accuracy_results.json" and not errors:
            errors_text = _duplicate_datasets(data)
            if errors_text:
                _report(run, point, name, spec["rule"], "accuracy_scores", errors_text, "/accuracy_scores")
                point.officially_invalid.add(name)
        for index, error in enumerate(errors):
            if index == MAX_FINDINGS_PER_FILE:
                break
            field, problem = _problem(error)
            _report(run, point, name, spec["rule"], field, problem, json_pointer(error.absolute_path))
        if errors:
            point.officially_invalid.add(name)
    if "point.yaml" in point.officially_invalid:
        point.yaml_ok = False
    if point.input.files.get("point.yaml") is None or not point.yaml_ok:
        run.findings.warning(
            "point-rules-skipped",
            f"{point.folder_name}/: point.yaml is missing or invalid, so the rules that read it (region "
            "placement, metric consistency, power) were not run for this point; fixing it may report more",
            file=point.file("point.yaml"),
            point=point.key,
            fix="Fix point.yaml as the point-config-valid / measurement-points-present findings say.",
        )


def _parsed(point: Point, name: str) -> Any:
    if name == "point.yaml":
        return point.yaml if point.yaml_ok else None
    if name == "system_desc.json":
        return point.system_description
    if name == "result_summary.json":
        return point.stored or None
    if name == "accuracy_results.json":
        return point.accuracy
    return None


def _warmup_problems(data: dict) -> list[tuple[str, str]]:
    """The official warmup model's own checks: counts that cannot be, and a zero concurrency with work."""
    warmup = data.get("warmup")
    if not isinstance(warmup, dict):
        return []
    numbers: dict[str, float] = {}
    for key in ("requests_issued", "requests_completed", "concurrency", "duration_s"):
        value: Any = warmup.get(key)
        try:
            numbers[key] = float(value)
        except (TypeError, ValueError, OverflowError):
            return []
    problems = []
    if numbers["requests_completed"] > numbers["requests_issued"]:
        problems.append(
            (
                "warmup.requests_completed",
                f"warmup requests_completed ({warmup['requests_completed']}) exceeds requests_issued "
                f"({warmup['requests_issued']})",
            )
        )
    if numbers["concurrency"] == 0 and (numbers["duration_s"] or numbers["requests_issued"]):
        problems.append(
            (
                "warmup.concurrency",
                "warmup concurrency must be positive when duration or requests are nonzero",
            )
        )
    return problems


def _duplicate_datasets(data: dict) -> str | None:
    scores = data.get("accuracy_scores")
    if not isinstance(scores, list):
        return None
    names = [entry.get("dataset_name") for entry in scores if isinstance(entry, dict)]
    duplicates = sorted({str(n) for n in names if names.count(n) > 1})
    return f"dataset {duplicates[0]!r} appears more than once" if duplicates else None


def _report(run: RuleRun, point: Point, name: str, rule: str, field: str, problem: str, pointer: str) -> None:
    run.findings.error(
        rule,
        f"{name}, field `{field}`: {problem}",
        file=point.file(name),
        point=point.key,
        pointer=pointer,
        fix=f"Write {name} with the fields and types the official tools require "
        "(see the rule set's official_schemas).",
    )
