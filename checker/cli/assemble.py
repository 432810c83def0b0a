"""Assembles run archives into the official submission bundle layout, as the portal's own copy.

`assemble_bundle(layout, dest, organisation=..., submission_id=...)` writes
`dest/<organisation>/<submission_id>/` from a Layout that `checker.read.inputs.open_inputs` built (run
archives, run folders, and also bundle points, which are copied through):

    src/<impl>/...                       every point's src/ merged (identical copies written once)
    docs/...                             every point's documentation/ merged
    results/<system>/system_power.json   the first point's system_power.json of that system
    results/<system>/<model>/r<C>/
        point.yaml            the submitter's bytes, plus the official builder's appended block
                              "# --- added by endpoints-submission-cli: bundle-internal paths ---"
                              with shared_docs / shared_src when the file does not declare them
        system_desc.json      the submitter's object plus tps_utilization (system_tps / max system_tps
                              of the curve, from the claimed result_summary.json, as the builder does)
        result_summary.json   from performance/result_summary.json, bytes unchanged
        accuracy_results.json from accuracy/accuracy_results.json, bytes unchanged
        config.yaml  report.txt  sample_idx_map.json  metrics/final_snapshot.json   bytes unchanged
        serving_config.json  mlperf-system-info-*.json  server_configs/...            when present
        events.jsonl[.zst]  power/...      the portal's additions (include_raw_logs=True)

Decisions (docs/assembly.md has the whole list and the differences from the official builder):
  * the same relative path under src/ or documentation/ in several points, or several
    system_power.json of one system: identical copies (same bytes; for system_power.json the same
    parsed JSON) are written once; a differing copy is an `assembly-conflict` warning naming both
    sources, and the first copy (points in system, model, concurrency order) is kept. The official
    builder keeps the last src/docs copy silently and refuses differing system_power.json.
  * a system, model, organisation or submission id that is not a plain folder name is never used
    as a path: such a point is skipped with `assembly-skipped-point` (error); a bad organisation or
    submission id raises AssemblyError (the caller's argument, not the submitter's file).
  * files are copied as streams (1 MiB), sources opened with O_NOFOLLOW and checked to be regular
    files, trees walked without following links (links are skipped), every destination created
    with O_EXCL | O_NOFOLLOW relative to a folder descriptor under dest, so nothing is written
    outside dest and nothing existing is overwritten.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from checker.read.checksums import sha256_file
from checker.read.inputs import Layout, Limits, PointInput
from checker.read.inputs.layout import EVENTS_NAMES
from checker.read.loaders import load_descriptor_quietly
from checker.read.safedirs import open_subdir
from checker.report import Findings

__all__ = [
    "PENDING_SUBMISSION_ID",
    "Assembly",
    "AssemblyError",
    "assemble",
    "assemble_bundle",
    "organisation_of",
]

#: Placeholder submission id (the official builder's, used before MLCommons assigns one).
PENDING_SUBMISSION_ID = "pending-submission-id"
#: The comment line the official builder puts above the keys it appends to point.yaml.
INJECTION_HEADER = "# --- added by endpoints-submission-cli: bundle-internal paths ---"
COPY_BYTES = 1024 * 1024

# logical name (checker.read.inputs.layout.POINT_FILES) -> path inside the bundle's point folder
_POINT_TARGETS = {
    "result_summary.json": "result_summary.json",
    "accuracy_results.json": "accuracy_results.json",
    "config.yaml": "config.yaml",
    "report.txt": "report.txt",
    "sample_idx_map.json": "sample_idx_map.json",
    "final_snapshot.json": "metrics/final_snapshot.json",
}
_EXTRA_FILES = ("serving_config.json",)
_EXTRA_GLOBS = re.compile(r"^mlperf-system-info-.*\.json$")
_EXTRA_TREES = ("server_configs",)
_SAFE_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._+-]{0,127}$")


class AssemblyError(ValueError):
    """The destination or a caller-given name cannot be used (not a problem of the submission)."""


@dataclass
class Assembly:
    root: Path  # dest/<organisation>/<submission_id>
    organisation: str
    submission_id: str
    points: dict[str, str] = field(default_factory=dict)  # bundle point key -> the layout's point key
    files: int = 0  # files written
    bytes: int = 0  # bytes written
    findings: Findings = field(default_factory=Findings)


def _safe(name: Any) -> bool:
    return isinstance(name, str) and bool(_SAFE_NAME.match(name)) and name not in (".", "..")


def organisation_of(layout: Layout, *, limits: Limits | None = None) -> str:
    """The organisation folder name: the layout's own, else the first point's system_desc.json
    `submitter_org_names` made a folder name (as the official builder does), else "org"."""
    if _safe(layout.organisation):
        return str(layout.organisation)
    limits = limits or Limits()
    for p in sorted(layout.points, key=lambda p: (p.system, p.model, p.concurrency)):
        desc = load_descriptor_quietly(p.files.get("system_desc.json"), limits=limits)
        name = desc.get("submitter_org_names") if isinstance(desc, dict) else None
        if isinstance(name, str) and name.strip():
            slug = re.sub(r"_+", "_", re.sub(r"[^\w\-]", "_", name.strip(), flags=re.ASCII)).strip("_")[:64]
            return slug if _safe(slug) else "org"
    return "org"


# ============================================================================================ writing


class _Dest:
    """Creates folders and files strictly below one folder, by descriptor, never following links."""

    def __init__(self, root_fd: int) -> None:
        self.root_fd = root_fd
        self.files = 0
        self.bytes = 0

    def _dir(self, parts: list[str]) -> int:
        for comp in parts:
            if comp in ("", ".", "..") or "/" in comp or "\x00" in comp:
                raise AssemblyError(f"unsafe path component {comp!r}")
        return open_subdir(self.root_fd, parts, mode=0o755)

    def mkdir(self, rel: str) -> None:
        os.close(self._dir(rel.split("/")))

    def _create(self, rel: str) -> int:
        parts = rel.split("/")
        parent = self._dir(parts[:-1])
        try:
            if parts[-1] in ("", ".", ".."):
                raise AssemblyError(f"unsafe file name {parts[-1]!r}")
            return os.open(
                parts[-1], os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644, dir_fd=parent
            )
        finally:
            os.close(parent)

    def write_bytes(self, rel: str, data: bytes) -> None:
        with os.fdopen(self._create(rel), "wb") as out:
            out.write(data)
        self.files += 1
        self.bytes += len(data)

    def copy(self, src: Path, rel: str) -> str:
        """Stream src to rel; returns the SHA-256 of what was copied."""
        digest = hashlib.sha256()
        with _open_source(src) as fin, os.fdopen(self._create(rel), "wb") as out:
            while chunk := fin.read(COPY_BYTES):
                digest.update(chunk)
                out.write(chunk)
                self.bytes += len(chunk)
        self.files += 1
        return digest.hexdigest()


def _open_source(path: Path):
    """A regular file opened for reading without following a link at its last component."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{path.name} is not a regular file")
    except BaseException:
        os.close(fd)
        raise
    return os.fdopen(fd, "rb")


def _walk(top: Path) -> list[tuple[Path, str]]:
    """(file, path relative to top) of every regular file below top; links and specials skipped."""
    out: list[tuple[Path, str]] = []
    pending = [(top, "")]
    while pending:
        folder, rel = pending.pop()
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            if entry.name in (".", "..") or "\\" in entry.name:
                continue
            sub = f"{rel}{entry.name}"
            if entry.is_dir(follow_symlinks=False):
                pending.append((Path(entry.path), sub + "/"))
            elif entry.is_file(follow_symlinks=False):
                out.append((Path(entry.path), sub))
    return sorted(out, key=lambda t: t[1])


def _is_dir(path: Path) -> bool:
    return path.is_dir() and not path.is_symlink()


# ============================================================================================ assembly


class _Assembler:
    def __init__(
        self, layout: Layout, dest: _Dest, *, limits: Limits, include_raw_logs: bool, result: Assembly
    ) -> None:
        self.layout = layout
        self.dest = dest
        self.limits = limits
        self.include_raw_logs = include_raw_logs
        self.result = result
        self.findings = result.findings
        # bundle-relative path -> (display of the source kept, digest or parsed JSON)
        self.shared: dict[str, tuple[str, Any]] = {}

    def display(self, path: Path) -> str:
        return self.layout.display_for(path)

    def shared_file(
        self,
        src: Path,
        rel: str,
        *,
        point: PointInput | None,
        display: str | None = None,
        compare_json: bool = False,
    ) -> None:
        """Write a file every point may carry (src/, docs/, system_power.json) once; report differing copies."""
        shown = display or self.display(src)
        identity: Any = None
        if compare_json:
            identity = load_descriptor_quietly(src, limits=self.limits)
        if rel in self.shared:
            kept_display, kept = self.shared[rel]
            if identity is None:
                try:
                    identity = sha256_file(src)
                except OSError:
                    return
                if not isinstance(kept, str):
                    kept = None  # the kept copy parsed and this one does not: they differ
            if identity != kept:
                self.findings.warning(
                    "assembly-conflict",
                    f"{shown} differs from {kept_display}; the assembled bundle keeps {rel} from {kept_display}",
                    file=shown,
                    point=point.key if point else None,
                    fix="Give every run archive the same copy of this shared file (the official builder "
                    + ("refuses differing system_power.json)." if compare_json else "keeps the last copy)."),
                )
            return
        try:
            digest = self.dest.copy(src, rel)
        except OSError as exc:
            self.findings.warning(
                "assembly-conflict",
                f"{shown} cannot be copied into the bundle: {exc}",
                file=shown,
                point=point.key if point else None,
            )
            return
        self.shared[rel] = (shown, identity if identity is not None else digest)

    def shared_tree(self, top: Path, prefix: str, point: PointInput | None, shown: str) -> None:
        if not _is_dir(top):
            return
        for path, rel in _walk(top):
            self.shared_file(path, f"{prefix}/{rel}", point=point, display=f"{shown}{rel}")

    def run(self) -> None:
        layout = self.layout
        self.dest.mkdir("src")
        self.dest.mkdir("docs")
        points = sorted(layout.points, key=lambda p: (p.system, p.model, p.concurrency))
        usable: list[tuple[PointInput, str, str]] = []
        for p in points:
            system, model = p.system, _model_folder(p.model)
            if not (_safe(system) and _safe(model)) or p.concurrency <= 0:
                self.findings.error(
                    "assembly-skipped-point",
                    f"{p.key} cannot be placed in a bundle: system {system!r} / model {model!r} / concurrency "
                    f"{p.concurrency} is not a plain folder name",
                    file=p.display,
                    point=p.key,
                    fix="Use the canonical model name in point.yaml and a plain system name in system_desc.json.",
                )
                continue
            usable.append((p, system, model))
        # shared trees first: a point's shared_src must name a folder that exists
        if layout.root is not None:
            self.shared_tree(layout.root / "src", "src", None, f"{layout.root_display}src/")
            self.shared_tree(layout.root / "docs", "docs", None, f"{layout.root_display}docs/")
        for p, _system, _model in usable:
            if p.source != "bundle":
                self.shared_tree(p.dir / "src", "src", p, f"{p.display}src/")
                self.shared_tree(p.dir / "documentation", "docs", p, f"{p.display}documentation/")
        impls = sorted(
            {rel.split("/")[1] for rel in self.shared if rel.startswith("src/") and rel.count("/") >= 2}
        )
        shared_src = f"src/{impls[0]}" if len(impls) == 1 else None
        for p, system, _model in usable:  # a bundle point's files name its system's shared copy
            power = p.files.get("system_power.json")
            if power is not None:
                self.shared_file(
                    power,
                    f"results/{system}/system_power.json",
                    point=p,
                    display=p.display_of("system_power.json"),
                    compare_json=True,
                )
        curves: dict[tuple[str, str], list[PointInput]] = {}
        for p, system, model in usable:
            curves.setdefault((system, model), []).append(p)
        for (system, model), pts in curves.items():
            tps = {p.key: self.system_tps(p) for p in pts}
            best = max((v for v in tps.values() if v is not None), default=None)
            for p in pts:
                where = f"results/{system}/{model}/r{p.concurrency}"
                self.result.points[f"{system}/{model}/r{p.concurrency}"] = p.key
                point_tps = tps[p.key]
                self.point(
                    p,
                    where,
                    shared_src=shared_src,
                    n_impls=len(impls),
                    utilisation=(point_tps / best) if best and point_tps is not None else None,
                )

    def system_tps(self, p: PointInput) -> float | None:
        """total output tokens / seconds of the claimed summary, exactly as the official builder derives it."""
        summary = load_descriptor_quietly(p.files.get("result_summary.json"), limits=self.limits)
        if not isinstance(summary, dict):
            return None
        try:
            duration_ns = float(summary.get("duration_ns") or 0.0)
            osl = summary.get("output_sequence_lengths") or {}
            tokens = float(osl.get("total") or 0.0) if isinstance(osl, dict) else 0.0
        except (TypeError, ValueError):
            return None
        return tokens / (duration_ns / 1e9) if duration_ns > 0 else None

    def point(
        self, p: PointInput, where: str, *, shared_src: str | None, n_impls: int, utilisation: float | None
    ) -> None:
        self.dest.mkdir(where)
        if "point.yaml" in p.files:
            self.point_yaml(p, where, shared_src=shared_src, n_impls=n_impls)
        if "system_desc.json" in p.files:
            self.system_desc(p, where, utilisation)
        for logical, target in _POINT_TARGETS.items():
            if logical in p.files:
                self.copy(p, p.files[logical], f"{where}/{target}")
        for name in _EXTRA_FILES:
            if (p.dir / name).is_file() and not (p.dir / name).is_symlink():
                self.copy(p, p.dir / name, f"{where}/{name}")
        try:
            infos = sorted(
                e.name
                for e in os.scandir(p.dir)
                if e.is_file(follow_symlinks=False) and _EXTRA_GLOBS.match(e.name)
            )
        except OSError:
            infos = []
        for name in infos:
            self.copy(p, p.dir / name, f"{where}/{name}")
        for tree in _EXTRA_TREES:
            if _is_dir(p.dir / tree):
                for path, rel in _walk(p.dir / tree):
                    self.copy(p, path, f"{where}/{tree}/{rel}")
        if self.include_raw_logs:
            events = p.files.get("events")
            if events is not None and events.name in EVENTS_NAMES:
                self.copy(p, events, f"{where}/{events.name}")
            power = p.files.get("power")
            if power is not None and _is_dir(power):
                for path, rel in _walk(power):
                    self.copy(p, path, f"{where}/power/{rel}")

    def copy(self, p: PointInput, src: Path, rel: str) -> None:
        try:
            self.dest.copy(src, rel)
        except OSError as exc:
            self.findings.warning(
                "assembly-conflict",
                f"{self.display(src)} cannot be copied into the bundle: {exc}",
                file=self.display(src),
                point=p.key,
            )

    def point_yaml(self, p: PointInput, where: str, *, shared_src: str | None, n_impls: int) -> None:
        """The submitter's bytes; shared_docs / shared_src appended under the builder's comment line when absent."""
        path = p.files["point.yaml"]
        current = load_descriptor_quietly(path, limits=self.limits)
        if not isinstance(current, dict):  # unreadable: copied as is, the checker reports why
            self.copy(p, path, f"{where}/point.yaml")
            return
        with _open_source(path) as fin:
            original = fin.read(self.limits.max_descriptor_bytes + 1)
        additions: dict[str, str] = {}
        if current.get("shared_docs") in (None, ""):
            additions["shared_docs"] = "docs"
        if current.get("shared_src") in (None, ""):
            if shared_src is not None:
                additions["shared_src"] = shared_src
            else:
                self.findings.warning(
                    "assembly-shared-src",
                    f"{p.key}: point.yaml does not declare shared_src and the run archives hold "
                    f"{n_impls} implementation folders under src/, so none was filled in",
                    file=p.display_of("point.yaml"),
                    point=p.key,
                    fix="Add shared_src: src/<implementation> to each point.yaml.",
                )
        if not additions:
            self.dest.write_bytes(f"{where}/point.yaml", original)
            return
        block = INJECTION_HEADER + "\n" + yaml.safe_dump(additions, sort_keys=True)
        extended = (original if original.endswith(b"\n") else original + b"\n") + block.encode("utf-8")
        try:
            same = yaml.safe_load(extended) == {**current, **additions}
        except yaml.YAMLError:
            same = False
        if not same:  # flow style or several documents: rewritten whole, as the official builder does
            extended = yaml.safe_dump({**current, **additions}, sort_keys=False).encode("utf-8")
            self.findings.warning(
                "assembly-point-yaml-rewritten",
                f"{p.key}: point.yaml cannot be extended in place (flow style or several documents); the "
                "assembled copy is rewritten, without its comments",
                file=p.display_of("point.yaml"),
                point=p.key,
                fix="Write point.yaml as one block-style mapping.",
            )
        self.dest.write_bytes(f"{where}/point.yaml", extended)

    def system_desc(self, p: PointInput, where: str, utilisation: float | None) -> None:
        path = p.files["system_desc.json"]
        desc = load_descriptor_quietly(path, limits=self.limits)
        if not isinstance(desc, dict) or utilisation is None:
            self.copy(p, path, f"{where}/system_desc.json")
            return
        desc = {**desc, "tps_utilization": utilisation}
        self.dest.write_bytes(f"{where}/system_desc.json", json.dumps(desc, indent=2).encode("utf-8"))


def _model_folder(model: str) -> str:
    """The model folder name as the official builder makes it from point.yaml model_name."""
    last = str(model).split("/")[-1]
    slug = re.sub(r"_+", "_", re.sub(r"[^\w\-]", "_", last.strip(), flags=re.ASCII)).strip("_")[:64]
    return slug or "unknown_model"


def assemble(
    layout: Layout,
    dest: Path,
    *,
    organisation: str,
    submission_id: str,
    include_raw_logs: bool = True,
    limits: Limits | None = None,
) -> Assembly:
    """Write dest/<organisation>/<submission_id>/ from the layout; the Assembly says what was written.

    Raises AssemblyError when organisation or submission_id is not a plain folder name or when
    dest/<organisation>/<submission_id> already exists; problems of the inputs are findings.
    """
    for what, value in (("organisation", organisation), ("submission id", submission_id)):
        if not _safe(value):
            raise AssemblyError(f"{what} {value!r} is not a plain folder name (letters, digits, . _ + -)")
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    dest_fd = os.open(dest, os.O_RDONLY | os.O_DIRECTORY)
    try:
        org_fd = open_subdir(dest_fd, [organisation], mode=0o755)
        try:
            try:
                os.mkdir(submission_id, 0o755, dir_fd=org_fd)
            except FileExistsError:
                raise AssemblyError(f"{dest / organisation / submission_id} already exists") from None
            root_fd = os.open(submission_id, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=org_fd)
        finally:
            os.close(org_fd)
    finally:
        os.close(dest_fd)
    result = Assembly(
        root=dest / organisation / submission_id, organisation=organisation, submission_id=submission_id
    )
    writer = _Dest(root_fd)
    try:
        _Assembler(
            layout, writer, limits=limits or Limits(), include_raw_logs=include_raw_logs, result=result
        ).run()
    finally:
        os.close(root_fd)
    result.files, result.bytes = writer.files, writer.bytes
    return result


def assemble_bundle(
    layout: Layout,
    dest: Path,
    *,
    organisation: str,
    submission_id: str,
    include_raw_logs: bool = True,
    findings: Findings | None = None,
    limits: Limits | None = None,
) -> Path:
    """Write the official bundle layout dest/<organisation>/<submission_id>/ and return that folder.

    Findings about the inputs (assembly-conflict, assembly-shared-src, assembly-skipped-point,
    assembly-point-yaml-rewritten) are added to `findings` when given.
    """
    result = assemble(
        layout,
        dest,
        organisation=organisation,
        submission_id=submission_id,
        include_raw_logs=include_raw_logs,
        limits=limits,
    )
    if findings is not None:
        findings.extend(result.findings)
    return result.root
