"""Finds the load points in the folders that archives were read into (or the user's own folders).

Grouping. A bundle point is results/<system>/<model>/r<C>/ and takes system and model from those
folder names. A run archive or folder takes its system from system_power.json `system_desc_id`
(which is the bundle's system folder name, e.g. "Acme_AX-8000"), else system_desc.json `system_name`
with spaces turned into "_"; its model from point.yaml `model_name`. Concurrency comes from point.yaml
`concurrency`, else config.yaml settings.load_pattern.target_concurrency, else the folder name c<C>/r<C>.

Display paths (what findings print in `file`), always "/"-separated:
  * archive member: "<archive file name>:<member path as stored>", e.g.
    "AX-8000_c1.tar.gz:c1/performance/result_summary.json";
  * bundle folder: relative to the folder holding <org>/, e.g.
    "AcmeCompute/acme-2026-12-C0-endpoints-001/results/Acme_AX-8000/llama3_1-8b/r1/point.yaml";
  * run folder given unpacked: relative to its parent, e.g. "c1/performance/result_summary.json";
  * a folder ends with "/" (PointInput.display, Layout.root_display), a whole archive is its name.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from checker.read import kinds
from checker.read.inputs.archive import RAW_LOG_NAMES, Budget, extract_archive, sniff_archive
from checker.read.inputs.limits import Limits
from checker.read.loaders import load_descriptor_quietly
from checker.report import Findings

# logical name -> where the file may sit inside a point folder (bundle layout first, run folder second)
POINT_FILES: dict[str, tuple[str, ...]] = {
    "point.yaml": ("point.yaml",),
    "system_desc.json": ("system_desc.json",),
    "result_summary.json": ("result_summary.json", "performance/result_summary.json"),
    "accuracy_results.json": ("accuracy_results.json", "accuracy/accuracy_results.json"),
    "config.yaml": ("config.yaml",),
    "report.txt": ("report.txt",),
    "sample_idx_map.json": ("sample_idx_map.json",),
    "final_snapshot.json": ("metrics/final_snapshot.json", "final_snapshot.json"),
    "system_power.json": ("system_power.json",),
}
# every point must have these (system_power.json sits one level up in a bundle); accuracy_results.json
# is only written at the points that ran the accuracy probe, and the raw log is checked by the pipeline (checker/cli/pipeline.py).
# Missing, these are reported by the rules under the official checker's ids (measurement-points-present,
# system-description-present, result-summary-present, config-file-present, power-descriptor), once.
REPORTED_BY_RULES = frozenset(
    {"point.yaml", "system_desc.json", "result_summary.json", "config.yaml", "system_power.json"}
)
REQUIRED_FILES = (
    "point.yaml",
    "system_desc.json",
    "result_summary.json",
    "config.yaml",
    "report.txt",
    "sample_idx_map.json",
    "final_snapshot.json",
    "system_power.json",
)
EVENTS_NAMES = RAW_LOG_NAMES

POINT_DIR = re.compile(r"^[rc](\d{1,7})$")


@dataclass
class PointInput:
    """One load point, its files found in the sandbox, in the bundle's point layout."""

    system: str
    model: str
    concurrency: int
    source: str  # "bundle" | "run-archive" | "run-folder"
    display: str  # how findings name this point's folder, e.g. "AX-8000_c1.tar.gz:c1/" or "results/S/M/r1/"
    dir: Path  # folder in the sandbox (or the user's own folder when given unpacked; never written to)
    # logical name -> file path. Logical names: point.yaml, system_desc.json, result_summary.json,
    # accuracy_results.json, config.yaml, report.txt, sample_idx_map.json, final_snapshot.json,
    # system_power.json (run archives carry their own copy), events (events.jsonl or events.jsonl.zst),
    # power (folder with a measured power trace, portal extension)
    files: dict[str, Path] = field(default_factory=dict)
    # logical name -> display path used in findings ("AX-8000_c1.tar.gz:c1/performance/result_summary.json")
    displays: dict[str, str] = field(default_factory=dict)

    @property
    def key(self) -> str:
        return f"{self.system}/{self.model}/r{self.concurrency}"

    @property
    def kind(self) -> str:
        """The registered input kind this point was read as (checker.read.kinds): "bundle" or "run_archives"."""
        return "bundle" if self.source == "bundle" else "run_archives"

    def display_of(self, name: str) -> str:
        return self.displays.get(name) or f"{self.display}{name}"

    def has(self, name: str) -> bool:
        return name in self.files


@dataclass
class Layout:
    """What the inputs hold, grouped: points by (system, model), plus bundle-level files."""

    kind: str  # a registered input kind's name (checker.read.kinds: "bundle" | "run_archives"), "mixed" or "empty"
    points: list[PointInput] = field(default_factory=list)
    root: Path | None = None  # bundle root (<org>/<submission_id>/) when the input was a bundle
    root_display: str = ""
    organisation: str | None = None
    submission_id: str | None = None
    system_power: dict[str, Path] = field(
        default_factory=dict
    )  # system -> results/<system>/system_power.json
    src_readmes: list[Path] = field(default_factory=list)
    docs: list[Path] = field(default_factory=list)
    cli_metadata: Path | None = None
    displays: dict[Path, str] = field(default_factory=dict)  # any sandbox path -> display path
    readable_inputs: int = 0  # how many of the given paths could be opened at all
    # bytes read out of archives, with Limits.inflated_before (what the inflation cap counts)
    inflated_bytes: int = 0
    # raw_logs=False: the raw logs read out of archives are empty placeholders; real path -> (SHA-256, size)
    raw_log_digests: dict[Path, tuple[str, int]] = field(default_factory=dict)

    def display_for(self, path: Path) -> str:
        """The display path of any file the layout found (falls back to the file name)."""
        return self.displays.get(path) or path.name

    def curves(self) -> dict[tuple[str, str], list[PointInput]]:
        out: dict[tuple[str, str], list[PointInput]] = {}
        for point in sorted(self.points, key=lambda point: (point.system, point.model, point.concurrency)):
            out.setdefault((point.system, point.model), []).append(point)
        return out


class _Input:
    """One user-given path as found: its sandbox (or own) folder and how to display paths inside it."""

    def __init__(self, base: Path, prefix: str) -> None:
        self.base = base
        self.prefix = prefix

    def display(self, path: Path, *, folder: bool = False) -> str:
        try:
            rel = path.relative_to(self.base).as_posix()
        except ValueError:
            rel = path.name
        rel = "" if rel == "." else rel
        return self.prefix + rel + ("/" if folder and rel else "")


def _is_file(path: Path) -> bool:
    return path.is_file() and not path.is_symlink()


def _is_dir(path: Path) -> bool:
    return path.is_dir() and not path.is_symlink()


def _subdirs(path: Path) -> list[Path]:
    try:
        return sorted(p for p in path.iterdir() if _is_dir(p))
    except OSError:
        return []


def _is_bundle_root(path: Path) -> bool:
    return kinds.kind("bundle").detect_folder(path)


def _is_run_folder(path: Path) -> bool:
    return kinds.kind("run_archives").detect_folder(path)


def _find(root: Path) -> tuple[list[Path], list[Path]]:
    """(bundle roots, run folders) at depth 0..2 below root, as the registry's kinds recognise them."""
    levels = [[root]]
    levels.append(_subdirs(root))
    levels.append([g for d in levels[1] for g in _subdirs(d)])
    bundles = [d for level in levels for d in level if _is_bundle_root(d)]
    if bundles:
        return bundles[:1] if bundles[0] == root else bundles, []
    for level in levels:
        runs = [d for d in level if _is_run_folder(d)]
        if runs:
            return [], runs
    return [], []


def _dig(obj: Any, *keys: str) -> Any:
    """obj[k1][k2]... through nested mappings, None as soon as a level is missing or not a mapping."""
    for key in keys:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(key)
    return obj


def _as_concurrency(value: Any) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    return None


def _system_id(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text.strip()).strip("_") or "unknown-system"


class _LayoutBuilder:
    """Collects the points and bundle-level files found, then settles duplicates and the layout kind."""

    def __init__(self, limits: Limits, findings: Findings) -> None:
        self.limits = limits
        self.findings = findings
        self.layout = Layout(kind="empty")
        self.sources: set[str] = set()

    def note(self, path: Path, display: str) -> None:
        self.layout.displays[path] = display

    def point(
        self,
        folder: Path,
        origin: _Input,
        *,
        source: str,
        system: str | None = None,
        model: str | None = None,
        system_power: Path | None = None,
    ) -> None:
        files, displays, events = self._point_files(folder, origin, system_power)
        concurrency, model, system = self._point_identity(folder, files, system=system, model=model)
        display = origin.display(folder, folder=True)
        point = PointInput(
            system=system,
            model=model,
            concurrency=concurrency,
            source=source,
            display=display,
            dir=folder,
            files=files,
            displays=displays,
        )
        if len(events) > 1:
            self.findings.warning(
                "events-ambiguous",
                f"{display} holds both events.jsonl and events.jsonl.zst; events.jsonl is used",
                file=displays["events"],
                point=point.key,
                fix="Keep only one copy of the raw log.",
            )
        self._check_required_files(point, folder, origin, source=source)
        self.layout.points.append(point)
        self.sources.add(point.kind)

    def _point_files(
        self, folder: Path, origin: _Input, system_power: Path | None
    ) -> tuple[dict[str, Path], dict[str, str], list[Path]]:
        """The point's files by logical name, how each is shown, and the raw logs found (the first is used)."""
        files: dict[str, Path] = {}
        displays: dict[str, str] = {}
        for logical, candidates in POINT_FILES.items():
            for rel in candidates:
                if _is_file(folder / rel):
                    files[logical] = folder / rel
                    break
        if system_power is not None and "system_power.json" not in files:
            files["system_power.json"] = system_power
        events = [folder / n for n in EVENTS_NAMES if _is_file(folder / n)]
        if events:
            files["events"] = events[0]
        if _is_dir(folder / "power"):
            files["power"] = folder / "power"
        for logical, path in files.items():
            displays[logical] = origin.display(path, folder=logical == "power")
            self.note(path, displays[logical])
        return files, displays, events

    def _point_identity(
        self, folder: Path, files: dict[str, Path], *, system: str | None, model: str | None
    ) -> tuple[int, str, str]:
        """The point's concurrency, model and system: from its descriptors, else its folder's name."""
        point_yaml = load_descriptor_quietly(files.get("point.yaml"), limits=self.limits) or {}
        concurrency = _as_concurrency(point_yaml.get("concurrency"))
        if concurrency is None:
            config = load_descriptor_quietly(files.get("config.yaml"), limits=self.limits)
            concurrency = _as_concurrency(_dig(config, "settings", "load_pattern", "target_concurrency"))
        if concurrency is None:
            match = POINT_DIR.match(folder.name)
            concurrency = int(match.group(1)) if match else 0
        model_name = point_yaml.get("model_name")
        model = model or (model_name if isinstance(model_name, str) and model_name else "unknown-model")
        if system is None:
            power = load_descriptor_quietly(files.get("system_power.json"), limits=self.limits) or {}
            system_description = (
                load_descriptor_quietly(files.get("system_desc.json"), limits=self.limits) or {}
            )
            if isinstance(power.get("system_desc_id"), str) and power["system_desc_id"].strip():
                system = _system_id(power["system_desc_id"])
            elif (
                isinstance(system_description.get("system_name"), str)
                and system_description["system_name"].strip()
            ):
                system = _system_id(system_description["system_name"])
            else:
                system = "unknown-system"
        return concurrency, model, system

    def _check_required_files(self, point: PointInput, folder: Path, origin: _Input, *, source: str) -> None:
        """required-file for each file the point must have that the rules do not report themselves."""
        files, display = point.files, point.display
        for logical in REQUIRED_FILES:
            if logical not in files and logical not in REPORTED_BY_RULES:
                if source == "bundle" and logical == "system_power.json":
                    where_display = origin.display(folder.parent.parent, folder=True) + "system_power.json"
                else:  # the official tools' place: a bundle's first candidate, a run folder's last
                    candidates = POINT_FILES[logical]
                    where_display = display + (
                        candidates[0]
                        if source == "bundle" or logical == "final_snapshot.json"
                        else candidates[-1]
                    )
                self.findings.error(
                    "required-file",
                    f"{point.key}: {logical} is missing (expected at {where_display})",
                    file=where_display,
                    point=point.key,
                    fix=f"Add {logical} as the official tools wrote it for this load point.",
                )

    def bundle(self, root: Path, origin: _Input, *, archive: bool) -> None:
        layout = self.layout
        if layout.root is None:
            layout.root = root
            layout.root_display = origin.display(root, folder=True)
            if root != origin.base or not archive:
                layout.submission_id = root.name
                layout.organisation = root.parent.name if root.parent != root else None
            if _is_file(root / "cli_metadata.json"):
                layout.cli_metadata = root / "cli_metadata.json"
                self.note(layout.cli_metadata, origin.display(layout.cli_metadata))
                meta = load_descriptor_quietly(layout.cli_metadata, limits=self.limits) or {}
                for attr, keys in (
                    ("submission_id", ("submission_id",)),
                    ("organisation", ("organisation", "organization", "org")),
                ):
                    for key in keys:
                        if getattr(layout, attr) is None and isinstance(meta.get(key), str):
                            setattr(layout, attr, meta[key])
        else:
            self.findings.warning(
                "input-multiple-bundles",
                f"more than one bundle was given; {origin.display(root, folder=True)} is read as extra points of "
                f"{layout.root_display}",
                file=origin.display(root, folder=True),
                fix="Check one bundle at a time.",
            )
        self.shared_docs(root, origin, docs_folder="docs")
        for system_dir in _subdirs(root / "results"):
            system = system_dir.name
            candidate = system_dir / "system_power.json"
            power: Path | None = None
            if _is_file(candidate):
                power = candidate
                layout.system_power.setdefault(system, power)
                self.note(power, origin.display(power))
            for model_dir in _subdirs(system_dir):
                for point_dir in _subdirs(model_dir):
                    self.point(
                        point_dir,
                        origin,
                        source="bundle",
                        system=system,
                        model=model_dir.name,
                        system_power=power,
                    )

    def runs(self, folders: list[Path], origin: _Input, *, source: str) -> None:
        for folder in folders:
            before = len(self.layout.points)
            self.point(folder, origin, source=source)
            point = self.layout.points[before]
            power = point.files.get("system_power.json")
            if power is not None:
                self.layout.system_power.setdefault(point.system, power)
            self.shared_docs(folder, origin, docs_folder="documentation")

    def shared_docs(self, folder: Path, origin: _Input, *, docs_folder: str) -> None:
        """src/<impl>/README.md and <docs_folder>/*.md below a bundle root or a run folder."""
        for found, pattern, into in (
            ("src", "*/README.md", self.layout.src_readmes),
            (docs_folder, "*.md", self.layout.docs),
        ):
            for path in sorted((folder / found).glob(pattern)) if _is_dir(folder / found) else []:
                if _is_file(path):
                    into.append(path)
                    self.note(path, origin.display(path))

    def finish(self) -> Layout:
        layout = self.layout
        kept: dict[str, PointInput] = {}
        for point in layout.points:
            if point.key in kept:
                self.findings.error(
                    "duplicate-point",
                    f"{point.key} is given twice: {kept[point.key].display} and {point.display}; only the first is read",
                    file=point.display,
                    point=point.key,
                    fix="Upload each load point once.",
                )
                continue
            kept[point.key] = point
        layout.points = list(kept.values())
        if not layout.points:
            layout.kind = "empty" if layout.root is None else "bundle"
        elif len(self.sources) > 1:
            layout.kind = "mixed"
        else:
            layout.kind = next(iter(self.sources))
        return layout


def _safe_label(index: int, path: Path) -> str:
    return f"{index:03d}-" + (re.sub(r"[^A-Za-z0-9._-]+", "_", path.name)[:60] or "input")


def open_inputs(
    paths: list[str | Path], *, workdir: Path, limits: Limits, findings: Findings, raw_logs: bool = True
) -> Layout:
    """Read every path into `workdir` (a private temporary folder) and return the layout found.

    raw_logs=False (the steps that need only the descriptors): a raw log inside an archive is read through, with
    every cap and check, but left as an empty file (its SHA-256 and size in Layout.raw_log_digests); the layout
    and the findings of reading are the same. Raw logs in folders given unpacked are read in place anyway.

    Never raises on bad input: every problem becomes a finding (see the module docstring).
    """
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    archive_bytes = 0
    for given in paths:
        with contextlib.suppress(OSError):
            info = os.stat(given)
            if stat.S_ISREG(info.st_mode):
                archive_bytes += info.st_size
    budget = Budget(limits, inflation_basis=archive_bytes)
    budget.raw_logs = raw_logs
    builder = _LayoutBuilder(limits, findings)
    for index, given in enumerate(paths):
        path = Path(given)
        shown = path.name or str(path)
        try:
            path_stat = os.stat(path)
        except OSError as exc:
            findings.error(
                "input-unreadable",
                f"{shown} cannot be opened: {exc.strerror or exc}",
                file=shown,
                fix="Give the path of a bundle folder, a bundle archive or a run archive.",
            )
            continue
        if stat.S_ISDIR(path_stat.st_mode):
            _read_folder(builder, path, shown, findings)
            continue
        kind = sniff_archive(path) if stat.S_ISREG(path_stat.st_mode) else None
        if kind is None:
            findings.error(
                "input-unreadable",
                f"{shown} is not a recognised input (a folder, .tar.gz/.tgz, .tar.zst, .tar or .zip archive)",
                file=shown,
                fix="Upload the bundle or run archives as the official tools write them.",
            )
            continue
        _read_archive(builder, path, index, kind, shown, workdir=workdir, budget=budget, findings=findings)
    layout = builder.finish()
    layout.inflated_bytes = budget.inflated
    layout.raw_log_digests = budget.raw_log_digests
    return layout


def _read_folder(builder: _LayoutBuilder, path: Path, shown: str, findings: Findings) -> None:
    """A folder given unpacked: one bundle, or run folders, read in place."""
    bundles, runs = _find(path)
    if len(bundles) > 1:
        findings.error(
            "input-unreadable",
            f"{shown} holds {len(bundles)} bundles ({', '.join(b.name for b in bundles[:5])}); give one",
            file=shown,
            fix="Point the checker at one <org>/<submission_id>/ folder.",
        )
        return
    if bundles:
        root = bundles[0]
        base = root.parent.parent if len(root.parents) >= 2 else root.parent
        builder.bundle(root, _Input(base, ""), archive=False)
    elif runs:
        for run in runs:
            builder.runs([run], _Input(run.parent, ""), source="run-folder")
    else:
        findings.error(
            "input-unreadable",
            f"{shown} is neither a bundle (no results/ folder) nor a run folder (point.yaml with "
            "performance/result_summary.json or events.jsonl)",
            file=shown,
            fix="Give the <org>/<submission_id>/ folder, a run folder or an archive of them.",
        )
        return
    builder.layout.readable_inputs += 1


def _read_archive(
    builder: _LayoutBuilder,
    path: Path,
    index: int,
    kind: str,
    shown: str,
    *,
    workdir: Path,
    budget: Budget,
    findings: Findings,
) -> None:
    """An archive, read into a folder of its own below `workdir`: one bundle, or run folders."""
    dest = workdir / _safe_label(index, path)
    for attempt in range(1, 1000):  # a workdir reused by an earlier call keeps its folders
        try:
            os.mkdir(dest, 0o700)
            break
        except FileExistsError:
            dest = workdir / f"{_safe_label(index, path)}-{attempt}"
    before = len(findings)
    extracted = extract_archive(path, kind, dest, budget=budget, findings=findings)
    bundles, runs = _find(dest)
    origin = _Input(dest, f"{path.name}:")
    if len(bundles) > 1:
        findings.error(
            "input-unreadable",
            f"{shown} holds {len(bundles)} bundles; upload one per archive",
            file=shown,
            fix="Pack one <org>/<submission_id>/ folder per archive.",
        )
        return
    if bundles:
        builder.bundle(bundles[0], origin, archive=True)
    elif runs:
        builder.runs(runs, origin, source="run-archive")
    else:
        if extracted or len(findings) == before:
            findings.error(
                "input-unreadable",
                f"{shown} holds neither a bundle (results/ folder) nor a run folder (point.yaml with "
                "performance/result_summary.json or events.jsonl)",
                file=shown,
                fix="Upload the bundle or run archives as the official tools write them.",
            )
        return
    builder.layout.readable_inputs += 1
