"""Validates descriptors against the JSON Schemas shipped in checker/schemas/, one finding per violation.

Rule ids: schema-point, schema-system-desc, schema-result-summary, schema-accuracy-results,
schema-system-power, schema-cli-metadata (all errors). NaN/Infinity never reach here: the loaders
refuse them first (JSON Schema cannot see them).
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError

from checker.read.loaders import json_pointer, load_json, load_yaml
from checker.report import Findings

SCHEMA_DIR = Path(__file__).parents[1] / "schemas"
SCHEMAS = ("point", "system_desc", "result_summary", "accuracy_results", "system_power", "cli_metadata")
# logical file name (PointInput.files keys, bundle files) -> schema name
SCHEMA_FOR_FILE = {
    "point.yaml": "point",
    "system_desc.json": "system_desc",
    "result_summary.json": "result_summary",
    "accuracy_results.json": "accuracy_results",
    "system_power.json": "system_power",
    "cli_metadata.json": "cli_metadata",
}
MAX_FINDINGS_PER_FILE = 50


@cache
def validator(schema_name: str) -> Draft202012Validator:
    """The compiled validator for one schema (cached for the life of the process)."""
    if schema_name not in SCHEMAS:
        raise KeyError(f"unknown schema {schema_name!r}; known: {', '.join(SCHEMAS)}")
    schema = json.loads((SCHEMA_DIR / f"{schema_name}.schema.json").read_text(encoding="utf-8"))
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def rule_for(schema_name: str) -> str:
    return "schema-" + schema_name.replace("_", "-")


def _message(error: ValidationError) -> str:
    where = json_pointer(error.absolute_path) or "/"
    if error.validator == "required":
        return f"{where}: {error.message}"
    if error.validator == "type":
        expected = error.validator_value
        expected = " or ".join(expected) if isinstance(expected, list) else expected
        return f"{where}: expected {expected}, found {json.dumps(error.instance, default=str)[:80]}"
    return f"{where}: {error.message[:300]}"


def validate(
    obj: Any, schema_name: str, *, display: str, findings: Findings, point: str | None = None
) -> bool:
    """Add one error finding per schema violation of `obj`; True when it is valid.

    Each finding has rule schema-<name>, the file's display path, the JSON pointer of the offending
    value and a sentence naming the expected form. At most MAX_FINDINGS_PER_FILE are written per file.
    """
    rule = rule_for(schema_name)
    errors = sorted(
        validator(schema_name).iter_errors(obj), key=lambda e: (list(map(str, e.absolute_path)), e.validator)
    )
    for n, error in enumerate(errors):
        if n == MAX_FINDINGS_PER_FILE:
            findings.error(
                rule,
                f"{display}: {len(errors) - n} more schema violations were left out",
                file=display,
                point=point,
            )
            break
        findings.error(
            rule,
            f"{display} {_message(error)}",
            file=display,
            pointer=json_pointer(error.absolute_path),
            point=point,
            fix=f"Write this value as the official tools do (see checker/schemas/{schema_name}.schema.json).",
        )
    return not errors


def load_and_validate(
    path: Path, schema_name: str, *, display: str, findings: Findings, limits: Any, point: str | None = None
) -> dict[str, Any] | None:
    """Load a descriptor safely (YAML for .yaml/.yml, else JSON) and validate it; the object or None.

    Returns the object when it could be parsed, even if the schema found violations (the findings say
    so); None when it could not be read at all.
    """
    loader = load_yaml if path.suffix in (".yaml", ".yml") else load_json
    obj = loader(path, display=display, findings=findings, limits=limits, point=point)
    if obj is None:
        return None
    validate(obj, schema_name, display=display, findings=findings, point=point)
    return obj


def check_layout_descriptors(layout: Any, *, findings: Findings, limits: Any) -> None:
    """Load and schema-check every descriptor the layout found (points, system_power, cli_metadata)."""
    seen: set[Path] = set()
    for p in layout.points:
        for logical, schema_name in SCHEMA_FOR_FILE.items():
            path = p.files.get(logical)
            if path is None or path in seen:
                continue
            seen.add(path)
            load_and_validate(
                path,
                schema_name,
                display=p.display_of(logical),
                findings=findings,
                limits=limits,
                point=p.key,
            )
    for path in layout.system_power.values():
        if path not in seen:
            seen.add(path)
            load_and_validate(
                path, "system_power", display=layout.display_for(path), findings=findings, limits=limits
            )
    if layout.cli_metadata is not None:
        load_and_validate(
            layout.cli_metadata,
            "cli_metadata",
            display=layout.display_for(layout.cli_metadata),
            findings=findings,
            limits=limits,
        )
