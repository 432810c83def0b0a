"""Safe readers for the descriptors (JSON, YAML) of a load point; the raw log's reader is checker.read.raw_logs.

Every problem with a descriptor becomes a finding and the loader returns None; nothing here raises
on bad input.

Rule ids emitted here (docs/input-safety.md has examples and fixes):
  file-too-large, file-unreadable, invalid-utf8, json-syntax, json-nonfinite, json-nul, json-duplicate-key,
  yaml-syntax, yaml-nonfinite, yaml-nul, yaml-duplicate-key, yaml-alias, descriptor-not-object.
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
import os
import re
import threading
from collections import OrderedDict
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import yaml

from checker.report import Findings

_BOM = b"\xef\xbb\xbf"
_MAX_REPORTED = 20  # per file and per rule, so a hostile file cannot flood the report


# --------------------------------------------------------------------------------------------- common


def _read_bounded(
    path: Path, *, display: str, findings: Findings, limits: Any, point: str | None
) -> bytes | None:
    cap = limits.max_descriptor_bytes
    try:
        size = os.stat(path).st_size
        if size > cap:
            findings.error(
                "file-too-large",
                f"{display} is {size} bytes, more than the {cap}-byte limit for a descriptor",
                file=display,
                point=point,
                fix="Upload the file exactly as the official tools wrote it; descriptors are small.",
            )
            return None
        with open(path, "rb") as fh:
            data = fh.read(cap + 1)
    except OSError as exc:
        findings.error(
            "file-unreadable",
            f"cannot read {display}: {exc.strerror or exc}",
            file=display,
            point=point,
            fix="Re-create the archive; the file could not be opened.",
        )
        return None
    if len(data) > cap:  # grew while reading
        findings.error("file-too-large", f"{display} is more than {cap} bytes", file=display, point=point)
        return None
    return data


def _decode(data: bytes, *, display: str, findings: Findings, point: str | None) -> str | None:
    if data.startswith(_BOM):
        data = data[len(_BOM) :]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        findings.error(
            "invalid-utf8",
            f"{display} is not valid UTF-8 (byte 0x{data[exc.start]:02x} at line {line})",
            file=display,
            line=line,
            point=point,
            fix="Save the file as UTF-8; do not edit the tool's output by hand.",
        )
        return None


def _read_text(path: Path, *, display: str, findings: Findings, limits: Any, point: str | None) -> str | None:
    """The descriptor's text, read bounded and decoded; None (with a finding) when it cannot be."""
    data = _read_bounded(path, display=display, findings=findings, limits=limits, point=point)
    if data is None:
        return None
    return _decode(data, display=display, findings=findings, point=point)


def json_pointer(parts: Any) -> str:
    """RFC 6901 pointer of a path of keys and indexes ("" for the top level); a NUL in a key shows as \\u0000."""
    return "".join(
        "/" + str(p).replace("~", "~0").replace("/", "~1").replace("\x00", "\\u0000") for p in parts
    )


def nul_pointers(obj: Any) -> list[str]:
    """Pointers of the keys and strings that hold a NUL character (U+0000), in document order.

    JSON may carry NUL as \\u0000 and YAML as "\\0", but no text the portal stores (PostgreSQL text and jsonb)
    can hold it, and no official tool writes it: a descriptor holding one is refused with a finding."""
    found: list[str] = []
    stack: list[tuple[Any, list[Any]]] = [(obj, [])]
    while stack:
        node, where = stack.pop()
        if isinstance(node, str):
            if "\x00" in node:
                found.append(json_pointer(where))
        elif isinstance(node, dict):
            for key in node:
                if isinstance(key, str) and "\x00" in key:
                    found.append(json_pointer([*where, key]))
            stack.extend((v, [*where, k]) for k, v in reversed(list(node.items())))
        elif isinstance(node, list):
            stack.extend((v, [*where, i]) for i, v in reversed(list(enumerate(node))))
    return found


def _refuse_nul(obj: Any, *, rule: str, display: str, findings: Findings, point: str | None) -> bool:
    """True (with findings) when `obj` holds a NUL character anywhere in its text."""
    pointers = nul_pointers(obj)
    for pointer in pointers[:_MAX_REPORTED]:
        findings.error(
            rule,
            f"{display} holds a NUL character (\\u0000) at {pointer or '/'}; descriptors hold printable text only",
            file=display,
            pointer=pointer,
            point=point,
            fix="Upload the file exactly as the official tools wrote it: they never write a NUL character.",
        )
    return bool(pointers)


def _not_object(obj: Any, *, display: str, findings: Findings, point: str | None) -> bool:
    if isinstance(obj, dict):
        return False
    findings.error(
        "descriptor-not-object",
        f"{display} must hold an object (a mapping of keys) at its top level, found {type(obj).__name__}",
        file=display,
        point=point,
        line=1,
        fix="Use the file as the official tools wrote it.",
    )
    return True


# --------------------------------------------------------------------------------------------- JSON


class _NonFinite:
    __slots__ = ("token",)

    def __init__(self, token: str) -> None:
        self.token = token


def _parse_float(token: str) -> Any:
    """A JSON number that overflows a float (1e999) is as non-finite as Infinity."""
    value = float(token)
    return value if math.isfinite(value) else _NonFinite(token)


_JSON_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|(-?Infinity|NaN)')


def load_json(
    path: str | Path,
    *,
    display: str,
    findings: Findings,
    limits: Any,
    point: str | None = None,
    expect_object: bool = True,
) -> Any | None:
    """Parse a JSON descriptor; on any problem add findings and return None.

    Refuses files over limits.max_descriptor_bytes (file-too-large), invalid UTF-8 (invalid-utf8, with
    line), syntax errors (json-syntax, with line), NaN/Infinity (json-nonfinite, with line and JSON
    pointer) and a non-object top level when `expect_object` (descriptor-not-object). Duplicate keys
    give a json-duplicate-key warning (the last value wins, as in every JSON parser) but still load.
    """
    text = _read_text(Path(path), display=display, findings=findings, limits=limits, point=point)
    if text is None:
        return None
    dupes: list[tuple[dict[str, Any], str]] = []  # (the object, the repeated key); keeps ids unique
    parsed = _parse_json_text(text, dupes, display=display, findings=findings, point=point)
    if parsed is None:
        return None
    obj = parsed[0]
    nonfinite: list[str] = []
    dup_where: dict[int, str] = {}
    _walk_json(obj, [], nonfinite, dup_where, {id(d) for d, _ in dupes})
    if nonfinite:
        _report_nonfinite(text, nonfinite, display=display, findings=findings, point=point)
        return None
    if _refuse_nul(obj, rule="json-nul", display=display, findings=findings, point=point):
        return None
    _report_duplicate_keys(text, dupes, dup_where, display=display, findings=findings, point=point)
    if expect_object and _not_object(obj, display=display, findings=findings, point=point):
        return None
    return obj


def _parse_json_text(
    text: str,
    dupes: list[tuple[dict[str, Any], str]],
    *,
    display: str,
    findings: Findings,
    point: str | None,
) -> tuple[Any] | None:
    """The parsed document (in a 1-tuple: JSON null is a value) with its repeated keys added to `dupes`;
    None, with a json-syntax finding, when it does not parse."""

    def pairs_hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        repeated = []
        for key, value in pairs:
            if key in out:
                repeated.append(key)
                out.pop(key)  # the surviving (last) value takes its place in document order
            out[key] = value
        dupes.extend((out, key) for key in repeated)
        return out

    try:
        obj = json.loads(
            text, object_pairs_hook=pairs_hook, parse_constant=_NonFinite, parse_float=_parse_float
        )
    except json.JSONDecodeError as exc:
        findings.error(
            "json-syntax",
            f"{display} is not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})",
            file=display,
            line=exc.lineno,
            point=point,
            fix="Upload the file exactly as the official tools wrote it.",
        )
        return None
    except (RecursionError, ValueError) as exc:
        msg = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
        findings.error(
            "json-syntax",
            f"{display} cannot be parsed: {msg}",
            file=display,
            point=point,
            fix="Upload the file exactly as the official tools wrote it.",
        )
        return None
    return (obj,)


def _report_nonfinite(
    text: str, nonfinite: list[str], *, display: str, findings: Findings, point: str | None
) -> None:
    """json-nonfinite at each NaN or Infinity (the first _MAX_REPORTED), with its line and pointer."""
    lines = [text.count("\n", 0, m.start()) + 1 for m in _JSON_TOKENS.finditer(text) if m.group(1)]
    for n, pointer in enumerate(nonfinite[:_MAX_REPORTED]):
        line = lines[n] if n < len(lines) else None
        findings.error(
            "json-nonfinite",
            f"{display} holds a non-finite number (NaN or Infinity) at {pointer or '/'}; JSON allows only finite numbers",
            file=display,
            line=line,
            pointer=pointer,
            point=point,
            fix="Re-run or re-export: a metric that is NaN or Infinity means the run produced no valid value.",
        )


def _report_duplicate_keys(
    text: str,
    dupes: list[tuple[dict[str, Any], str]],
    dup_where: dict[int, str],
    *,
    display: str,
    findings: Findings,
    point: str | None,
) -> None:
    """json-duplicate-key, a warning per repeated key (the first _MAX_REPORTED): the last value is used."""
    for holder, key in dupes[:_MAX_REPORTED]:
        where = dup_where.get(id(holder), "")
        pointer = where + json_pointer([key])
        findings.warning(
            "json-duplicate-key",
            f"{display} repeats the key {key!r} in the object at {where or '/'}; the last value is used",
            file=display,
            line=_second_key_line(text, key),
            pointer=pointer,
            point=point,
            fix="Remove the repeated key so the file has one unambiguous value.",
        )


def _walk_json(
    obj: Any, path: list[Any], nonfinite: list[str], dup_where: dict[int, str], dup_ids: set[int]
) -> None:
    stack: list[tuple[Any, list[Any]]] = [(obj, path)]
    while stack:
        node, where = stack.pop()
        if isinstance(node, _NonFinite):
            nonfinite.append(json_pointer(where))
        elif isinstance(node, dict):
            if id(node) in dup_ids:
                dup_where[id(node)] = json_pointer(where)
            stack.extend((v, [*where, k]) for k, v in reversed(list(node.items())))
        elif isinstance(node, list):
            stack.extend((v, [*where, i]) for i, v in reversed(list(enumerate(node))))


def _second_key_line(text: str, key: str) -> int | None:
    needle = re.compile(re.escape(json.dumps(key)) + r"\s*:")
    found = list(needle.finditer(text))
    if len(found) < 2:
        return None
    return text.count("\n", 0, found[1].start()) + 1


# --------------------------------------------------------------------------------------------- YAML


class _Refused(Exception):
    def __init__(self, rule: str, message: str, line: int | None) -> None:
        super().__init__(message)
        self.rule = rule
        self.line = line


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses aliases, and records duplicate keys and non-finite floats with their line."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.duplicates: list[tuple[str, int]] = []
        self.nonfinite: list[int] = []

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise _Refused(
                "yaml-alias",
                "uses a YAML alias (*name); aliases are not accepted in descriptors",
                event.start_mark.line + 1,
            )
        return super().compose_node(parent, index)

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            try:
                key = self.construct_object(key_node, deep=True)
                hash(key)
            except TypeError:
                continue  # SafeLoader reports unhashable keys itself
            if key in seen:
                self.duplicates.append((str(key), key_node.start_mark.line + 1))
            seen.add(key)
        return super().construct_mapping(node, deep=deep)

    def construct_yaml_float(self, node: Any) -> float:
        value = super().construct_yaml_float(node)
        if not math.isfinite(value):
            self.nonfinite.append(node.start_mark.line + 1)
        return value


def _construct_map(loader: _StrictLoader, node: yaml.MappingNode) -> Iterator[dict]:
    """SafeLoader's mapping constructor bound to _StrictLoader (so construct_mapping above records duplicates)."""
    return loader.construct_yaml_map(node)


_StrictLoader.add_constructor("tag:yaml.org,2002:float", _StrictLoader.construct_yaml_float)
_StrictLoader.add_constructor("tag:yaml.org,2002:map", _construct_map)


class _Parsed(NamedTuple):
    """What parsing one YAML text found, kept so that the same text is parsed once per process."""

    obj: Any = None
    refused: tuple[str, str, int | None] | None = None  # (rule, message, line)
    syntax: tuple[str, int | None] | None = None  # (problem, line)
    unparsable: str | None = None  # RecursionError / ValueError text
    duplicates: tuple[tuple[str, int], ...] = ()
    nonfinite: tuple[int, ...] = ()


_PARSED_KEPT = 128  # descriptors are at most limits.max_descriptor_bytes each
_parsed: OrderedDict[bytes, _Parsed] = OrderedDict()
_parsed_lock = threading.Lock()


def _parse_yaml(text: str) -> _Parsed:
    """The strict parse of `text`, from this process's memo when the same text was parsed before: a check reads
    each run archive's YAML descriptors at several stages (inputs, schema, rules, assembly), and every point of a
    curve carries the same ones, so the pure-Python parse (about 10 ms for a run's config) is paid once. The
    memo holds the outcome (the object, or what refused it); load_yaml gives each caller its own copy."""
    key = hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()
    with _parsed_lock:
        found = _parsed.get(key)
        if found is not None:
            _parsed.move_to_end(key)
            return found
    loader = _StrictLoader(text)
    try:
        parsed = _Parsed(obj=loader.get_single_data())
    except _Refused as exc:
        parsed = _Parsed(refused=(exc.rule, str(exc), exc.line))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        line = mark.line + 1 if mark is not None else None
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        parsed = _Parsed(syntax=(problem, line))
    except (RecursionError, ValueError) as exc:
        parsed = _Parsed(unparsable=str(exc) or "nested too deeply")
    finally:
        loader.dispose()
    if parsed.refused is None and parsed.syntax is None and parsed.unparsable is None:
        parsed = parsed._replace(duplicates=tuple(loader.duplicates), nonfinite=tuple(loader.nonfinite))
    with _parsed_lock:
        _parsed[key] = parsed
        while len(_parsed) > _PARSED_KEPT:
            _parsed.popitem(last=False)
    return parsed


def load_yaml(
    path: str | Path,
    *,
    display: str,
    findings: Findings,
    limits: Any,
    point: str | None = None,
    expect_object: bool = True,
) -> Any | None:
    """Parse a YAML descriptor with yaml.safe_load semantics; on any problem add findings and return None.

    Same refusals as load_json (file-too-large, invalid-utf8, yaml-syntax with line, yaml-nonfinite
    for .nan/.inf, descriptor-not-object) plus yaml-alias (anchors/aliases are refused: they are how
    "billion laughs" bombs are built). Duplicate keys give a yaml-duplicate-key warning.
    """
    text = _read_text(Path(path), display=display, findings=findings, limits=limits, point=point)
    if text is None:
        return None
    parsed = _parse_yaml(text)
    if parsed.refused is not None:
        rule, message, line = parsed.refused
        findings.error(
            rule,
            f"{display} {message}",
            file=display,
            line=line,
            point=point,
            fix="Write the value out in full instead of referring to an anchor.",
        )
        return None
    if parsed.syntax is not None:
        problem, line = parsed.syntax
        findings.error(
            "yaml-syntax",
            f"{display} is not valid YAML: {problem}" + (f" (line {line})" if line else ""),
            file=display,
            line=line,
            point=point,
            fix="Upload the file exactly as the official tools wrote it.",
        )
        return None
    if parsed.unparsable is not None:
        findings.error(
            "yaml-syntax",
            f"{display} cannot be parsed: {parsed.unparsable}",
            file=display,
            point=point,
            fix="Upload the file exactly as the official tools wrote it.",
        )
        return None
    for line in parsed.nonfinite[:_MAX_REPORTED]:
        findings.error(
            "yaml-nonfinite",
            f"{display} holds a non-finite number (.nan or .inf) at line {line}",
            file=display,
            line=line,
            point=point,
            fix="Replace it with the finite value the run produced.",
        )
    if parsed.nonfinite:
        return None
    obj = copy.deepcopy(parsed.obj)  # the memo's object is never handed out: callers may change theirs
    if _refuse_nul(obj, rule="yaml-nul", display=display, findings=findings, point=point):
        return None
    for key, line in parsed.duplicates[:_MAX_REPORTED]:
        findings.warning(
            "yaml-duplicate-key",
            f"{display} repeats the key {key!r} at line {line}; the last value is used",
            file=display,
            line=line,
            point=point,
            fix="Remove the repeated key so the file has one unambiguous value.",
        )
    if expect_object and _not_object(obj, display=display, findings=findings, point=point):
        return None
    return obj


def load_descriptor_quietly(path: Path | None, *, limits: Any) -> dict[str, Any] | None:
    """The top-level object of a descriptor (YAML for .yaml/.yml, else JSON), or None when absent or unreadable.

    For code that only needs a value (grouping, assembly): no findings, the schema check reports why.
    """
    if path is None:
        return None
    loader = load_yaml if Path(path).suffix in (".yaml", ".yml") else load_json
    return loader(path, display="", findings=Findings(), limits=limits)
