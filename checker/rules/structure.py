"""Bundle structure: required folders, implementation READMEs, docs and the files of every point."""

from __future__ import annotations

from checker.rules.state import RuleRun

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
    if layout.points:
        if layout.src_readmes:
            run.findings.info("src-readme", f"{len(layout.src_readmes)} implementation README(s) present.")
        else:
            run.findings.error(
                "src-readme",
                "No src/<implementation>/README.md found.",
                fix="Add src/<implementation>/README.md describing how to reproduce the runs.",
            )
        if not layout.docs:
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
