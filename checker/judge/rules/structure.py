"""Bundle structure: required folders, implementation READMEs, docs and the files of every point."""

from __future__ import annotations

import re
from pathlib import Path

from checker.judge.rules.state import RuleRun

_POINT_DIR = re.compile(r"r\d+")

REQUIRED_POINT_FILES = {  # file of every point folder -> the rule that reports it missing
    "point.yaml": "measurement-points-present",
    "system_desc.json": "system-description-present",
    "result_summary.json": "result-summary-present",
    "config.yaml": "config-file-present",
}


def check_structure(run: RuleRun) -> None:
    layout = run.layout
    if layout.root is not None:
        for name in ("results", "docs"):
            if (layout.root / name).is_dir():
                run.findings.info(
                    "required-dir",
                    f"Found required directory: {name}/",
                    file=f"{layout.root_display}{name}/",
                )
            else:
                run.findings.error(
                    "required-dir",
                    f"Required directory {name}/ is missing.",
                    file=f"{layout.root_display}{name}/",
                    fix=f"Add {name}/ at the submission root (see the bundle layout).",
                )
    if layout.root is not None:
        _check_tree(run, layout.root, layout.root_display)
    if layout.points:
        src = layout.root / "src" if layout.root is not None else None
        if src is not None and not any(p.is_dir() for p in src.glob("*")):
            run.findings.error(
                "src-dir",
                "Missing src/ directory" if not src.is_dir() else "src/ contains no implementation directory",
                file=f"{layout.root_display}src/",
                fix="Add a src/ directory at the submission root with one directory per implementation "
                "(vllm/, sglang/, ...).",
            )
        elif layout.src_readmes:
            run.findings.info("src-readme", f"{len(layout.src_readmes)} implementation README(s) present.")
        else:
            run.findings.error(
                "src-readme",
                "No src/<implementation>/README.md found.",
                fix="Add src/<implementation>/README.md describing how to reproduce the runs.",
            )
        docs_folder_missing = layout.root is not None and not (layout.root / "docs").is_dir()
        if not layout.docs and not docs_folder_missing:  # a missing docs/ is required-dir's error
            run.findings.warning(
                "docs-present",
                "No documentation (docs/*.md) found.",
                fix="Add the disclosure documents under docs/.",
            )
    if not layout.points and layout.readable_inputs:
        run.findings.error(
            "measurement-points-present", "No load point (results/<system>/<model>/r<C>/) was found."
        )
    for point in run.points:
        for name, rule in REQUIRED_POINT_FILES.items():
            if name not in point.input.files:
                run.findings.error(
                    rule,
                    f"r{point.concurrency}: {name} is missing.",
                    file=point.file(name),
                    point=point.key,
                    fix=f"Add {name} to the point folder (the official run archive carries it).",
                )
        for name in ("report.txt", "sample_idx_map.json", "final_snapshot.json"):
            if name not in point.input.files:
                run.findings.warning(
                    "point-files-complete",
                    f"r{point.concurrency}: {name} is missing.",
                    file=point.file(name),
                    point=point.key,
                    fix=f"Include the client's {name} from the run folder.",
                )


def _check_tree(run: RuleRun, root: Path, display: str) -> None:
    """results/<system>/<model>/r<C>/: a system folder without a model, a model folder without a point."""
    results = root / "results"
    if not results.is_dir():
        return
    systems = sorted(p for p in results.iterdir() if p.is_dir() and not p.is_symlink())
    if not systems:
        run.findings.error(
            "system-results-dir",
            "No results/<system>/ directories found",
            file=f"{display}results/",
            fix="Put each system's results under results/<system>/<benchmark_model>/r<N>/.",
        )
    for system in systems:
        models = sorted(p for p in system.iterdir() if p.is_dir() and not p.is_symlink())
        if not models:
            run.findings.error(
                "benchmark-model-dir",
                f"No benchmark-model directories in results/{system.name}/",
                file=f"{display}results/{system.name}/",
                fix=f"Add a results/{system.name}/<benchmark_model>/ directory holding the r<N>/ points.",
            )
            if not (system / "system_power.json").is_file():
                run.findings.error(
                    "power-descriptor",
                    f"Missing system_power.json for results/{system.name}/; section 4.5.2 requires one per system",
                    file=f"{display}results/{system.name}/system_power.json",
                )
        for model in models:
            if not any(p.is_dir() and _POINT_DIR.fullmatch(p.name) for p in model.iterdir()):
                run.findings.error(
                    "point-dirs",
                    f"No r<N>/ Pareto point directories in results/{system.name}/{model.name}/",
                    file=f"{display}results/{system.name}/{model.name}/",
                    fix="Put each Pareto point in its own r<N>/ directory, named for its concurrency.",
                )
