"""A generated corpus of hostile tool outputs for `portal import` and previews, made from the real fixtures
(tests/fixtures/importers): every number of a file replaced by an extreme or a wrong type, each numeric field
alone replaced, deep nesting, truncation, and a claim of two million requests.

`hostile_corpus(out)` writes each case into its own folder under `out` and returns {case name: folder};
`mutation(name)` says what a case changed, `original_case(out, tool)` writes the tool's output unchanged."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).parents[2] / "tests" / "fixtures" / "importers"

# One small real output per tool: (the folder to copy, the JSON files in it to make hostile).
BASES: dict[str, tuple[Path, list[str]]] = {
    "guidellm": (FIXTURES / "guidellm", ["benchmarks-errors.json"]),
    "aiperf": (FIXTURES / "aiperf" / "c1", ["profile_export_aiperf.json", "profile_export.jsonl"]),
    "inference_perf": (
        FIXTURES / "inference_perf" / "c1",
        [
            "per_request_lifecycle_metrics.json",
            "stage_0_lifecycle_metrics.json",
            "summary_lifecycle_metrics.json",
        ],
    ),
    "vllm_bench": (FIXTURES / "vllm_bench", ["c1.json"]),
}
HUGE_INT = 10**400
HOSTILE_VALUES: dict[str, Any] = {
    "1e308": 1e308,
    "-1e308": -1e308,
    "400-digit": HUGE_INT,
    "-400-digit": -HUGE_INT,
    "string": "12",
    "bool": True,
    "null": None,
    "list": [1],
    "object": {"a": 1},
    "negative": -1,
    "zero": 0,
}
# Per-field cases use the values that broke the importers before: extremes and wrong types.
FIELD_VALUES = ("1e308", "-1e308", "400-digit", "string")
# What the importers must name by file and field: a value of the wrong type where a number belongs, or a number
# out of range (beyond +-(2^63 - 1), or negative where the tool never writes one). null reads as absent.
WRONG_TYPES = ("string", "bool", "list", "object")
OUT_OF_RANGE = ("1e308", "-1e308", "400-digit", "-400-digit", "negative")
TWO_MILLION = 2_000_000
DEEP = "__deep__"


def _map_numbers(value: Any, replace: Callable[[str, Any], Any], key: str = "") -> Any:
    if isinstance(value, dict):
        return {k: _map_numbers(v, replace, k) for k, v in value.items()}
    if isinstance(value, list):
        return [_map_numbers(v, replace, key) for v in value]
    if isinstance(value, int | float) and not isinstance(value, bool):
        return replace(key, value)
    return value


def _numeric_keys(value: Any, found: set[str], key: str = "") -> set[str]:
    if isinstance(value, dict):
        for k, v in value.items():
            _numeric_keys(v, found, k)
    elif isinstance(value, list):
        for v in value:
            _numeric_keys(v, found, key)
    elif isinstance(value, int | float) and not isinstance(value, bool):
        found.add(key)
    return found


def _load(path: Path) -> Any:
    if path.suffix == ".jsonl":
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return json.loads(path.read_text())


def _dump(path: Path, data: Any) -> None:
    if path.suffix == ".jsonl":
        path.write_text("".join(json.dumps(record) + "\n" for record in data))
    else:
        path.write_text(json.dumps(data))


def _case(out: Path, name: str, tool: str) -> Path:
    folder, _ = BASES[tool]
    target = out / name
    if folder.name == "guidellm":
        target.mkdir(parents=True)
        shutil.copy(folder / "benchmarks-errors.json", target / "benchmarks-errors.json")
    elif folder.name == "vllm_bench":
        target.mkdir(parents=True)
        shutil.copy(folder / "c1.json", target / "c1.json")
    else:
        shutil.copytree(folder, target, ignore=shutil.ignore_patterns("*.sh"))
    return target


def _claim_two_million(key: str, value: Any) -> Any:
    counting = any(word in key for word in ("count", "completed", "total", "requests", "num_"))
    return TWO_MILLION if counting and isinstance(value, int) else value


def original_case(out: Path, tool: str) -> Path:
    """The tool's output as it was written, in a folder like a case's (named `<tool>-original`)."""
    return _case(out, f"{tool}-original", tool)


@dataclass(frozen=True)
class Mutation:
    """What one case of the corpus changed: `kind` is every, field, two-million, truncated or deep; `value` the
    label of HOSTILE_VALUES put in; `key` the field replaced (field cases); `files` the files that hold it."""

    tool: str
    kind: str
    value: str | None = None
    key: str | None = None
    files: frozenset[str] = frozenset()


def mutation(name: str) -> Mutation:
    tool = next(t for t in BASES if name.startswith(f"{t}-"))
    rest = name[len(tool) + 1 :]
    if rest.startswith("every-"):
        return Mutation(tool, "every", value=rest.removeprefix("every-"), files=frozenset(BASES[tool][1]))
    if rest.startswith("field-"):
        rest = rest.removeprefix("field-")
        value = next(v for v in sorted(FIELD_VALUES, key=len, reverse=True) if rest.endswith(f"-{v}"))
        key = rest[: -len(value) - 1]
        return Mutation(tool, "field", value=value, key=key, files=_files_with(tool, key))
    return Mutation(tool, rest.split("-")[0] if not rest.startswith("two-million") else "two-million")


@cache
def _files_with(tool: str, key: str) -> frozenset[str]:
    folder, files = BASES[tool]
    wanted = "" if key == "item" else key
    return frozenset(f for f in files if wanted in _numeric_keys(_load(folder / f), set()))


def hostile_corpus(out: Path) -> dict[str, Path]:
    cases: dict[str, Path] = {}
    for tool, (folder, files) in BASES.items():
        originals = {name: _load(folder / name) for name in files}
        # every number of every file replaced by one hostile value
        for label, hostile in HOSTILE_VALUES.items():
            name = f"{tool}-every-{label}"
            target = _case(out, name, tool)
            for file, data in originals.items():
                _dump(target / file, _map_numbers(data, lambda _k, _v, h=hostile: h))
            cases[name] = target
        # each numeric field alone (in every file that has it)
        keys = sorted(set().union(*(_numeric_keys(data, set()) for data in originals.values())))
        for key in keys:
            for label in FIELD_VALUES:
                name = f"{tool}-field-{key or 'item'}-{label}"
                target = _case(out, name, tool)
                hostile = HOSTILE_VALUES[label]
                for file, data in originals.items():
                    _dump(
                        target / file,
                        _map_numbers(data, lambda k, v, h=hostile, key=key: h if k == key else v),
                    )
                cases[name] = target
        # a claim of two million requests in every count
        name = f"{tool}-two-million-requests"
        target = _case(out, name, tool)
        for file, data in originals.items():
            _dump(target / file, _map_numbers(data, _claim_two_million))
        cases[name] = target
        # truncated in the middle, and nested 100,000 deep
        for file in files:
            name = f"{tool}-truncated-{file}"
            target = _case(out, name, tool)
            raw = (folder / file).read_bytes()
            (target / file).write_bytes(raw[: len(raw) // 2])
            cases[name] = target
            # every number of the file replaced by an array nested 100,000 deep
            name = f"{tool}-deep-{file}"
            target = _case(out, name, tool)
            _dump(target / file, _map_numbers(originals[file], lambda _k, _v: DEEP))
            text = (target / file).read_text().replace(json.dumps(DEEP), "[" * 100_000 + "]" * 100_000)
            (target / file).write_text(text)
            cases[name] = target
    return cases
