"""Cross-check with the official checker (endpoints-submission-cli), when installed: its verdict and every disagreement.

Run archives (no bundle among the inputs) are first assembled into the official bundle layout in the
sandbox (`checker.cli.assemble`, without the raw logs, which the official checker does not read), and the
official checker runs on that; its point paths are mapped back to the inputs' points.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from collections import OrderedDict
from importlib import metadata
from pathlib import Path
from typing import Any

from checker.cli.assemble import PENDING_SUBMISSION_ID, AssemblyError, assemble, organisation_of
from checker.read.inputs import Layout
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
        return metadata.version(PACKAGE)
    except metadata.PackageNotFoundError:
        return None


def point_of(path: str | None) -> str | None:
    """'<system>/<model>/r<C>' from an official result path, or None for curve / submission level."""
    matches = list(_POINT_RE.finditer(str(path or "").replace("\\", "/")))
    if not matches:
        return None
    m = matches[-1]  # the bundle's own results/, even if a parent folder is also called results
    return f"{m.group(1)}/{m.group(2)}/r{int(m.group(3))}"


def _mapped(path: str | None, point_map: dict[str, str] | None) -> str | None:
    point = point_of(path)
    return point_map.get(point, point) if point_map and point else point


def verdict_keys(
    results: list[dict[str, Any]], point_map: dict[str, str] | None = None
) -> set[tuple[str, str, str | None]]:
    """(rule, severity, point) of every official error and warning; point_map renames bundle points."""
    return set(_verdict_messages(results, point_map))


def _verdict_messages(
    results: list[dict[str, Any]], point_map: dict[str, str] | None
) -> dict[tuple[str, str, str | None], str]:
    """verdict_keys -> the first official message under that key (cut to 300 characters)."""
    out: dict[tuple[str, str, str | None], str] = {}
    for r in results:
        if isinstance(r, dict) and r.get("severity") in _SEVERITIES:
            out.setdefault(
                (str(r.get("rule")), str(r.get("severity")), _mapped(r.get("path"), point_map)),
                str(r.get("message"))[:300],
            )
    return out


def portal_keys(report: Report) -> set[tuple[str, str, str | None]]:
    return {(f.rule, f.severity, f.point) for f in report.findings if f.severity in _SEVERITIES}


# Verdicts kept in this process, by what the official checker was given: a re-check, an extension judged with its
# published curve, or another version of the same archives assembles byte-identical bundles, and the CLI costs a
# new interpreter each time (about 0.6 s, most of it importing the package). A verdict is kept with the bundle's
# folder written as _ROOT, so it reads the same wherever the next identical bundle was assembled.
_VERDICTS_KEPT = 64
_VERDICT_MAX_BYTES = 64 * 1024 * 1024  # bundles read whole to be named; an assembled one holds no raw log
_ROOT = "@@official-bundle-root@@"
_verdicts: OrderedDict[str, tuple[str, int]] = OrderedDict()
_verdicts_lock = threading.Lock()


def _bundle_digest(root: Path, cmd: list[str]) -> str | None:
    """SHA-256 over the official command, its version and every file below `root` (path and bytes); None for a
    bundle larger than _VERDICT_MAX_BYTES, one holding a link or anything but files and folders, or one that
    cannot be read: those always run the CLI."""
    digest = hashlib.sha256(json.dumps([cmd, official_version()]).encode())
    total = 0
    for folder, dirs, files in os.walk(root, followlinks=False):
        dirs.sort()
        for name in [*dirs, *sorted(files)]:
            path = Path(folder, name)
            relative = path.relative_to(root).as_posix()
            if path.is_symlink() or not (path.is_dir() or path.is_file()):
                return None
            if path.is_dir():
                digest.update(b"d\0" + relative.encode("utf-8", "surrogateescape") + b"\0")
                continue
            try:
                data = path.read_bytes()
            except OSError:
                return None
            total += len(data)
            if total > _VERDICT_MAX_BYTES:
                return None
            digest.update(b"f\0" + relative.encode("utf-8", "surrogateescape") + b"\0")
            digest.update(hashlib.sha256(data).digest())
    return digest.hexdigest()


def _root_written(root: Path) -> str:
    """The bundle's folder as it appears inside the verdict's JSON text (escaped as JSON escapes it)."""
    return json.dumps(str(root))[1:-1]


def _verdict_kept(key: str | None, root: Path) -> tuple[str, int] | None:
    if key is None:
        return None
    with _verdicts_lock:
        found = _verdicts.get(key)
        if found is None:
            return None
        _verdicts.move_to_end(key)
    text, exit_code = found
    return text.replace(_ROOT, _root_written(root)), exit_code


def _verdict_keep(key: str | None, root: Path, text: str, exit_code: int, *, workdir: str) -> None:
    """Keep the verdict when every mention of the bundle's folder could be written as _ROOT and it names neither
    the folder above it nor the CLI's own working folder (else a verdict naming this run's folders could be read
    for another: it is not kept)."""
    if key is None:
        return
    general = text.replace(_root_written(root), _ROOT)
    if _root_written(root.parent) in general or workdir in general:
        return
    with _verdicts_lock:
        _verdicts[key] = (general, exit_code)
        while len(_verdicts) > _VERDICTS_KEPT:
            _verdicts.popitem(last=False)


def run_official(root: Path, *, timeout_s: float = 900.0) -> tuple[dict[str, Any] | None, str]:
    """Run `endpoints-submission-cli check-submission ROOT -o out.json`; (parsed output, problem). A bundle this
    process already had judged, byte for byte, by the same official version gets that verdict again."""
    cmd = official_command()
    if cmd is None:
        return None, f"{PACKAGE} is not installed"
    root = Path(root).resolve()  # the checker runs in its own temporary folder: it is given an absolute path
    key = _bundle_digest(root, cmd)
    kept = _verdict_kept(key, root)
    if kept is not None:
        text, exit_code = kept
    else:
        with tempfile.TemporaryDirectory(prefix="official-") as tmp:
            out = Path(tmp) / "out.json"
            try:
                proc = subprocess.run(
                    [*cmd, "check-submission", str(root), "-o", str(out)],
                    capture_output=True,
                    timeout=timeout_s,
                    cwd=tmp,
                    stdin=subprocess.DEVNULL,
                )
            except (OSError, subprocess.TimeoutExpired) as exc:
                return None, f"{PACKAGE} could not run: {type(exc).__name__}"
            if not out.is_file():
                tail = proc.stderr.decode("utf-8", "replace")[-300:]
                return None, f"{PACKAGE} exited {proc.returncode} without a verdict: {tail}"
            try:
                text = out.read_text(encoding="utf-8")
            except (OSError, ValueError) as exc:
                return None, f"{PACKAGE} wrote an unreadable verdict: {exc}"
            exit_code = proc.returncode
            workdir = Path(tmp).name
    try:
        data = json.loads(text)
    except ValueError as exc:
        return None, f"{PACKAGE} wrote an unreadable verdict: {exc}"
    if not isinstance(data, dict) or not isinstance(data.get("results"), list):
        return None, f"{PACKAGE} wrote a verdict without a results list"
    if kept is None:
        _verdict_keep(key, root, text, exit_code, workdir=workdir)
    data["exit_code"] = exit_code
    return data, ""


def compare(
    report: Report, official_results: list[dict[str, Any]], point_map: dict[str, str] | None = None
) -> None:
    """One info finding `official-checker-disagreement` per (rule, severity, point) only one side reports.

    Findings are paired at the official checker's location: a rule it files on the model folder (any of its results
    for that rule has no point, e.g. agentic-accuracy-inline) is compared there, the portal's per-point findings of
    that rule included, so one finding filed at two places is not two disagreements."""
    messages = _verdict_messages(official_results, point_map)
    folder_level = {
        str(r.get("rule"))
        for r in official_results
        if isinstance(r, dict) and point_of(r.get("path")) is None
    }
    theirs = set(messages)
    ours = {
        (rule, severity, None if rule in folder_level else point)
        for rule, severity, point in portal_keys(report)
    }
    for rule, severity, point in sorted(theirs - ours, key=str):
        report.findings.info(
            "official-checker-disagreement",
            f"Official checker: {severity} {rule} ({messages[(rule, severity, point)]}); portal: no {severity} "
            f"{rule} here. See docs/rules.md for the deliberate differences.",
            point=point,
        )
    for rule, severity, point in sorted(ours - theirs, key=str):
        report.findings.info(
            "official-checker-disagreement",
            f"Portal: {severity} {rule}; official checker: no {severity} {rule} here. "
            "See docs/rules.md for the deliberate differences.",
            point=point,
        )


def cross_check(
    layout: Layout, report: Report, *, timeout_s: float = 900.0, workdir: Path | None = None
) -> None:
    """Run the official checker on the same bundle, store its verdict in report.official, report disagreements.

    Inputs without a bundle (or a bundle plus run archives) are assembled into one below `workdir` (the check's sandbox; a temporary
    folder when None) first; the assembly's own findings (assembly-*) are added to the report.
    """
    version = official_version()
    if official_command() is None:
        report.official = {"available": False, "package": PACKAGE}
        report.findings.info(
            "official-checker-unavailable",
            f"The official checker ({PACKAGE}) is not installed, so no cross-check was made.",
            fix=f"pip install '{PACKAGE}' (the portal's optional extra 'official').",
        )
        return
    if layout.root is None or layout.kind == "mixed":  # a bundle plus run archives: all points, one bundle
        if not layout.points:
            report.official = {"available": True, "version": version, "ran": False}
            report.findings.info(
                "official-checker-unavailable",
                "The official checker reads bundles; these inputs hold no load point to assemble.",
            )
            return
        if workdir is not None:
            Path(workdir).mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix="assembled-", dir=workdir) as tmp:
            submission_id = layout.submission_id or PENDING_SUBMISSION_ID
            try:
                assembly = assemble(
                    layout,
                    Path(tmp),
                    organisation=organisation_of(layout),
                    submission_id=submission_id,
                    include_raw_logs=False,
                )
            except (AssemblyError, OSError) as exc:
                report.official = {
                    "available": True,
                    "version": version,
                    "ran": False,
                    "problem": f"assembly failed: {exc}",
                }
                report.findings.info(
                    "official-checker-unavailable",
                    f"The run archives could not be assembled into a bundle: {exc}.",
                )
                return
            report.findings.extend(assembly.findings)
            _run_and_compare(
                assembly.root,
                report,
                version=version,
                timeout_s=timeout_s,
                point_map=assembly.points,
                strip=Path(tmp),
                assembled=f"{assembly.organisation}/{assembly.submission_id}/",
            )
        return
    _run_and_compare(layout.root, report, version=version, timeout_s=timeout_s)


def _run_and_compare(
    root: Path,
    report: Report,
    *,
    version: str | None,
    timeout_s: float,
    point_map: dict[str, str] | None = None,
    strip: Path | None = None,
    assembled: str | None = None,
) -> None:
    data, problem = run_official(root, timeout_s=timeout_s)
    if data is None:
        report.official = {"available": True, "version": version, "ran": False, "problem": problem}
        report.findings.info("official-checker-unavailable", f"Official cross-check failed: {problem}.")
        return
    results = data["results"]
    if strip is not None:  # the assembled bundle is temporary: paths relative to its <org>/ parent
        prefix = str(strip).rstrip("/") + "/"
        results = [
            {**r, "path": r["path"][len(prefix) :]}
            if isinstance(r, dict) and isinstance(r.get("path"), str) and r["path"].startswith(prefix)
            else r
            for r in results
        ]
    report.official = {
        "available": True,
        "version": version,
        "ran": True,
        **({"assembled": assembled} if assembled else {}),
        "exit_code": data.get("exit_code"),
        "passed": data.get("passed"),
        "errors": sum(1 for r in results if isinstance(r, dict) and r.get("severity") == "error"),
        "warnings": sum(1 for r in results if isinstance(r, dict) and r.get("severity") == "warning"),
        "results": [
            {k: r.get(k) for k in ("rule", "severity", "message", "path", "fix", "passed")}
            | {"point": _mapped(r.get("path"), point_map)}
            for r in results
            if isinstance(r, dict)
        ],
    }
    compare(report, results, point_map)
