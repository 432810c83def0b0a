"""Reading a submitter's system_desc.json with the checker's own safe loader and JSON Schema, and the key
facts the system pages show. Reads only: registering and updating are services."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.conf import settings

from checker.read.inputs import Limits
from checker.read.loaders import load_json
from checker.read.schema_check import validate
from checker.report import Findings
from portal.parsers import json_depth_exceeds
from portal.textsafety import UNSTORABLE_CODE, field_path, unstorable_at

SCHEMA_NAME = "system_desc"


@dataclass
class DescriptionProblem:
    """One reason a system_desc.json was refused: the checker's rule id, where (JSON pointer) and why."""

    rule: str
    message: str
    pointer: str = ""
    line: int | None = None
    fix: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "message": self.message,
            "pointer": self.pointer,
            "line": self.line,
            "fix": self.fix,
        }


@dataclass
class DescriptionRead:
    description: dict | None
    problems: list[DescriptionProblem] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.description is not None and not self.problems


def _problems(findings) -> list[DescriptionProblem]:
    return [
        DescriptionProblem(
            rule=f.rule, message=f.message, pointer=f.pointer or "", line=f.line, fix=f.fix or ""
        )
        for f in findings
        if f.severity == "error"
    ]


def system_desc_validate(description: Any, *, display: str = "system_desc.json") -> list[DescriptionProblem]:
    """Schema violations of an already parsed description (the checker's system_desc schema), and text the
    database cannot store."""
    max_depth = settings.PORTAL_API_JSON_MAX_DEPTH
    if json_depth_exceeds(description, max_depth):  # before the schema check, which recurses per level
        return [
            DescriptionProblem(
                rule="json-too-deep",
                message=f"{display} nests arrays/objects more than {max_depth} levels deep.",
                pointer="/",
                fix="Upload the system_desc.json your run folders carry; it is a few levels deep.",
            )
        ]
    findings = Findings()
    validate(description, SCHEMA_NAME, display=display, findings=findings)
    problems = _problems(findings)
    unstorable = unstorable_at(description)
    if unstorable:  # PostgreSQL cannot store it: refused like a schema problem, at its place, listed first
        path, why = unstorable
        pointer = "".join("/" + str(part).replace("~", "~0").replace("/", "~1") for part in path) or "/"
        problems.insert(
            0,
            DescriptionProblem(
                rule=UNSTORABLE_CODE,
                message=f"{display} {field_path(path)} {why}.",
                pointer=pointer,
                fix="Remove the character (a NUL, or a lone \\ud800-\\udfff escape) from the file.",
            ),
        )
    return problems


def system_desc_read(stream, *, display: str = "system_desc.json") -> DescriptionRead:
    """Parse an uploaded system_desc.json: at most PORTAL_SYSTEM_DESC_MAX_BYTES (read no further), through
    checker.read.loaders.load_json (UTF-8, syntax, NaN, duplicate keys) and the checker's JSON Schema."""
    cap = settings.PORTAL_SYSTEM_DESC_MAX_BYTES
    data = stream.read(cap + 1)
    if len(data) > cap:
        return DescriptionRead(
            None,
            [
                DescriptionProblem(
                    rule="file-too-large",
                    message=f"{display} is larger than {cap:,} bytes.",
                    fix="A system description is a small JSON file; upload the system_desc.json of your run folders.",
                )
            ],
        )
    findings = Findings()
    with tempfile.TemporaryDirectory(prefix="portal-sysdesc-") as folder:
        path = Path(folder) / "system_desc.json"
        path.write_bytes(data)
        description = load_json(
            path, display=display, findings=findings, limits=Limits(max_descriptor_bytes=cap)
        )
    problems = _problems(findings)
    if description is None:
        return DescriptionRead(
            None,
            problems or [DescriptionProblem(rule="json-syntax", message=f"{display} could not be read.")],
        )
    problems += system_desc_validate(description, display=display)
    return DescriptionRead(description, problems)


# --- key facts for the pages -----------------------------------------------------------------


def _text(value) -> str:
    return "" if value is None else str(value)


def system_desc_facts(description: dict | None) -> dict[str, Any]:
    """Accelerators, nodes and software of a description, for people (missing values are just left out)."""
    description = description if isinstance(description, dict) else {}
    node_types = [n for n in description.get("node_types") or [] if isinstance(n, dict)]
    nodes, accelerators = [], []
    total_nodes = total_accelerators = 0
    for node in node_types:
        count = node.get("number_of_nodes") if isinstance(node.get("number_of_nodes"), int) else 0
        total_nodes += count
        node_accelerators = []
        for acc in node.get("accelerator_info") or []:
            if not isinstance(acc, dict):
                continue
            per_node = (
                acc.get("accelerators_per_node") if isinstance(acc.get("accelerators_per_node"), int) else 0
            )
            total_accelerators += per_node * count
            entry = {
                "model": _text(acc.get("accelerator_model_name")) or "?",
                "per_node": per_node,
                "total": per_node * count,
                "memory": " ".join(
                    filter(
                        None,
                        [
                            _text(acc.get("accelerator_memory_capacity")),
                            _text(acc.get("accelerator_memory_type")),
                        ],
                    )
                ),
                "interconnect": _text(acc.get("accelerator_interconnect")),
            }
            node_accelerators.append(entry)
            accelerators.append(entry)
        nodes.append(
            {
                "count": count,
                "cpu": _text(node.get("host_processor_model_name")),
                "cpus_per_node": node.get("host_processors_per_node"),
                "memory": _text(node.get("host_memory_capacity")),
                "accelerators": node_accelerators,
                "os": _text(node.get("operating_system")),
                "backend": _text(node.get("inference_backend")),
                "driver": _text(node.get("driver")),
            }
        )
    software = [
        (label, value)
        for label, value in (
            ("Serving framework", _text(description.get("serving_framework"))),
            *[("Inference backend", n["backend"]) for n in nodes if n["backend"]],
            *[("Driver", n["driver"]) for n in nodes if n["driver"]],
            *[("Operating system", n["os"]) for n in nodes if n["os"]],
        )
        if value
    ]
    # Shown on pages: the words, not system_desc.json's field names.
    parallel = {
        label: description.get(key)
        for key, label in (
            ("tensor_parallel", "Tensor parallel"),
            ("pipeline_parallel", "Pipeline parallel"),
            ("expert_parallel", "Expert parallel"),
            ("data_parallel", "Data parallel"),
        )
        if description.get(key) is not None
    }
    return {
        "system_name": _text(description.get("system_name")),
        "organisation": _text(description.get("submitter_org_names")),
        "availability": _text(description.get("system_availability_status")),
        "division": _text(description.get("division")),
        "category": _text(description.get("system_category")),
        "size": _text(description.get("system_size")),
        "total_nodes": total_nodes,
        "total_accelerators": total_accelerators,
        "nodes": nodes,
        "accelerators": accelerators,
        "software": list(dict.fromkeys(software)),
        "parallel": parallel,
    }
