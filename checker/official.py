"""Cross-check with the official checker (endpoints-submission-cli), when installed: its verdict and every disagreement."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from checker.inputs import Layout
from checker.report import Report

PACKAGE = "endpoints-submission-cli"
_POINT_RE = re.compile(r"(?:^|/)results/([^/]+)/([^/]+)/r(\d+)(?:/|$)")
_SEVERITIES = ("error", "warning")


def official_command() -> list[str] | None:
    """The official CLI next to this interpreter, else on PATH; None when the package is not installed."""
    local = Path(sys.executable).parent / "endpoints-submission-cli"
    if local.is_file():
        return [str(local)]
    found = shutil.which("endpoints-submission-cli")
    return [found] if found else None


def official_version() -> str | None:
    try:
        from importlib.metadata import PackageNotFoundError, version
    except ImportError:  # pragma: no cover
        return None
    try:
        return version(PACKAGE)
    except PackageNotFoundError:
        return None


def point_of(path: str | None) -> str | None:
    """'<system>/<model>/r<C>' from an official result path, or None for curve / submission level."""
    matches = list(_POINT_RE.finditer(str(path or "").replace("\\", "/")))
    if not matches:
        return None
    m = matches[-1]  # the bundle's own results/, even if a parent folder is also called results
    return f"{m.group(1)}/{m.group(2)}/r{int(m.group(3))}"


def verdict_keys(results: list[dict[str, Any]]) -> set[tuple[str, str, str | None]]:
    """(rule, severity, point) of every official error and warning."""
    out = set()
    for r in results:
        if isinstance(r, dict) and r.get("severity") in _SEVERITIES:
            out.add((str(r.get("rule")), str(r.get("severity")), point_of(r.get("path"))))
    return out


def portal_keys(report: Report) -> set[tuple[str, str, str | None]]:
    return {(f.rule, f.severity, f.point) for f in report.findings if f.severity in _SEVERITIES}


def run_official(root: Path, *, timeout_s: float = 900.0) -> tuple[dict[str, Any] | None, str]:
    """Run `endpoints-submission-cli check-submission ROOT -o out.json`; (parsed output, problem)."""
    cmd = official_command()
    if cmd is None:
        return None, f"{PACKAGE} is not installed"
    with tempfile.TemporaryDirectory(prefix="official-") as tmp:
        out = Path(tmp) / "out.json"
        try:
            proc = subprocess.run([*cmd, "check-submission", str(root), "-o", str(out)], capture_output=True,
                                  timeout=timeout_s, cwd=tmp, stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return None, f"{PACKAGE} could not run: {type(exc).__name__}"
        if not out.is_file():
            tail = proc.stderr.decode("utf-8", "replace")[-300:]
            return None, f"{PACKAGE} exited {proc.returncode} without a verdict: {tail}"
        try:
            data = json.loads(out.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            return None, f"{PACKAGE} wrote an unreadable verdict: {exc}"
    if not isinstance(data, dict) or not isinstance(data.get("results"), list):
        return None, f"{PACKAGE} wrote a verdict without a results list"
    data["exit_code"] = proc.returncode
    return data, ""


def compare(report: Report, official_results: list[dict[str, Any]]) -> None:
    """One info finding `official-checker-disagreement` per (rule, severity, point) only one side reports."""
    theirs, ours = verdict_keys(official_results), portal_keys(report)
    messages: dict[tuple, str] = {}
    for r in official_results:
        if isinstance(r, dict) and r.get("severity") in _SEVERITIES:
            messages.setdefault((str(r.get("rule")), str(r.get("severity")), point_of(r.get("path"))),
                                str(r.get("message"))[:300])
    for rule, severity, point in sorted(theirs - ours, key=str):
        report.findings.info(
            "official-checker-disagreement",
            f"Official checker: {severity} {rule} ({messages[(rule, severity, point)]}); portal: no {severity} "
            f"{rule} here. See docs/rules.md for the deliberate differences.", point=point)
    for rule, severity, point in sorted(ours - theirs, key=str):
        report.findings.info(
            "official-checker-disagreement",
            f"Portal: {severity} {rule}; official checker: no {severity} {rule} here. "
            "See docs/rules.md for the deliberate differences.", point=point)


def cross_check(layout: Layout, report: Report, *, timeout_s: float = 900.0) -> None:
    """Run the official checker on the same bundle, store its verdict in report.official, report disagreements."""
    version = official_version()
    if official_command() is None:
        report.official = {"available": False, "package": PACKAGE}
        report.findings.info("official-checker-unavailable",
                             f"The official checker ({PACKAGE}) is not installed, so no cross-check was made.",
                             fix=f"pip install '{PACKAGE}' (the portal's optional extra 'official').")
        return
    if layout.root is None:
        report.official = {"available": True, "version": version, "ran": False}
        report.findings.info("official-checker-unavailable",
                             "The official checker reads assembled bundles; these inputs are run archives only.")
        return
    data, problem = run_official(layout.root, timeout_s=timeout_s)
    if data is None:
        report.official = {"available": True, "version": version, "ran": False, "problem": problem}
        report.findings.info("official-checker-unavailable", f"Official cross-check failed: {problem}.")
        return
    results = data["results"]
    report.official = {
        "available": True,
        "version": version,
        "ran": True,
        "exit_code": data.get("exit_code"),
        "passed": data.get("passed"),
        "errors": sum(1 for r in results if isinstance(r, dict) and r.get("severity") == "error"),
        "warnings": sum(1 for r in results if isinstance(r, dict) and r.get("severity") == "warning"),
        "results": [
            {k: r.get(k) for k in ("rule", "severity", "message", "path", "fix", "passed")} | {"point": point_of(r.get("path"))}
            for r in results if isinstance(r, dict)
        ],
    }
    compare(report, results)
