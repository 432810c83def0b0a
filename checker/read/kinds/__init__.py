"""The registry of input kinds: each module of this package that defines `KIND` is one kind of input.

A kind detects its files, maps them to logical files and reads them into one per-request record type
(checker.read.kinds.base.RequestRecord). The official MLPerf Endpoints inputs are `bundle` (a submission bundle
folder, results/<system>/<model>/r<C>/) and `run_archives` (one official run folder per load point); the
importers read other benchmark tools' outputs (`portal import`, docs/importers.md). The layout finder and
the upload code ask this registry which kind a folder or a file is, never an if-chain of their own, and a
version's kind is the name the registry detected: adding a kind is adding one module here.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache
from pathlib import Path

from checker.read.kinds.base import ImportedPoint, ImportedRun, Importer, InputKind, RequestRecord

__all__ = [
    "ImportedPoint",
    "ImportedRun",
    "Importer",
    "InputKind",
    "RequestRecord",
    "detect_folder",
    "importer_for",
    "importers",
    "kind",
    "kinds",
]


@cache
def kinds() -> tuple[InputKind, ...]:
    """Every registered kind, in a fixed order (MLPerf Endpoints inputs first, then importers by name)."""
    found: list[InputKind] = []
    for module_info in pkgutil.iter_modules(__path__):
        if module_info.name.startswith("_") or module_info.name == "base":
            continue
        module = importlib.import_module(f"{__name__}.{module_info.name}")
        declared = getattr(module, "KIND", None)
        if declared is not None:
            found.append(declared)
    names = [k.name for k in found]
    if len(set(names)) != len(names):
        raise RuntimeError(f"two input kinds share a name: {sorted(names)}")
    return tuple(sorted(found, key=lambda k: (k.importer, getattr(k, "order", 0), k.name)))


def kind(name: str) -> InputKind:
    """The kind of that name; KeyError for an unknown one."""
    for candidate in kinds():
        if candidate.name == name:
            return candidate
    raise KeyError(name)


def importers() -> tuple[Importer, ...]:
    """The kinds that read other tools' outputs."""
    return tuple(k for k in kinds() if k.importer)  # type: ignore[misc]


def detect_folder(folder: Path, *, importer: bool = False) -> InputKind | None:
    """The first kind that recognises `folder` as one of its inputs (MLPerf inputs unless `importer`)."""
    for candidate in kinds():
        if candidate.importer == importer and candidate.detect_folder(folder):
            return candidate
    return None


def importer_for(path: Path) -> Importer | None:
    """The importer whose file `path` is (by name and first bytes), or None."""
    for candidate in importers():
        if candidate.claims(path):
            return candidate
    return None
