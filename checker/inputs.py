"""Turns user-given paths (bundles, run archives, folders) into a sandboxed bundle layout, safely."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from checker.report import Findings

MiB = 1024 * 1024
GiB = 1024 * MiB


@dataclass(frozen=True)
class Limits:
    """Caps applied to hostile input; every refusal becomes a finding, never an exception."""

    max_total_bytes: int = 64 * GiB  # total uncompressed bytes over all archives
    max_members: int = 200_000  # archive members over all archives
    max_member_ratio: float = 1000.0  # uncompressed / compressed, per member (and per archive stream)
    max_line_bytes: int = 64 * MiB  # one line of events.jsonl
    max_descriptor_bytes: int = 32 * MiB  # one JSON / YAML descriptor


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

    def display_of(self, name: str) -> str:
        return self.displays.get(name) or f"{self.display}{name}"


@dataclass
class Layout:
    """What the inputs hold, grouped: points by (system, model), plus bundle-level files."""

    kind: str  # "bundle" | "run-archives" | "mixed" | "empty"
    points: list[PointInput] = field(default_factory=list)
    root: Path | None = None  # bundle root (<org>/<submission_id>/) when the input was a bundle
    root_display: str = ""
    organisation: str | None = None
    submission_id: str | None = None
    system_power: dict[str, Path] = field(default_factory=dict)  # system -> results/<system>/system_power.json
    src_readmes: list[Path] = field(default_factory=list)
    docs: list[Path] = field(default_factory=list)
    cli_metadata: Path | None = None
    displays: dict[Path, str] = field(default_factory=dict)  # any sandbox path -> display path
    readable_inputs: int = 0  # how many of the given paths could be opened at all

    def curves(self) -> dict[tuple[str, str], list[PointInput]]:
        out: dict[tuple[str, str], list[PointInput]] = {}
        for p in sorted(self.points, key=lambda p: (p.system, p.model, p.concurrency)):
            out.setdefault((p.system, p.model), []).append(p)
        return out


def open_inputs(paths: list[str | Path], *, workdir: Path, limits: Limits, findings: Findings) -> Layout:
    """Read every path into `workdir` (a private temporary folder) and return the layout found."""
    raise NotImplementedError  # filled in by the input-layer work
