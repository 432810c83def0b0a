"""Writes of previews: upload (preview_create), the check (preview_check, run by the task), re-check and delete.

Every write is guarded here: who through the workflow table (previews.workflow.PREVIEW), and the upload's caps
(file count, bytes) before anything is stored. What the files hold is judged by the check, never at upload: an
unreadable, hostile or unrecognised file is a finding with a stable code (the archive reader's `archive-*`, the
importers' `import-*`, `preview-file-name`, `preview-duplicate-name`), never a 500."""

from __future__ import annotations

import hashlib
import logging
import tempfile
from pathlib import Path

from django.conf import settings
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.utils import timezone

from accounts.actors import SUBMITTER_ROLES
from accounts.selectors import user_org_ids
from catalog.models import Benchmark
from checker.cli.import_pipeline import IMPORT_LIMITS, import_runs
from checker.read.inputs.archive import Budget, extract_archive, name_problem, sniff_archive
from checker.recompute.curve import curve_of
from checker.report import Findings
from portal.errors import ApplicationError, NotAllowedError
from portal.queues import task_send_on_commit
from previews.models import Preview
from previews.workflow import PREVIEW, PREVIEW_RETRY
from submissions.models import System

logger = logging.getLogger(__name__)

MiB = 1024 * 1024


def max_files() -> int:
    return getattr(settings, "PORTAL_PREVIEW_MAX_FILES", 20)


def max_bytes() -> int:
    return getattr(settings, "PORTAL_PREVIEW_MAX_BYTES", 64 * MiB)


def preview_create(*, actor, system: System, benchmark: Benchmark, name: str, files: list) -> Preview:
    """Store the uploaded files (Django UploadedFile or (name, bytes) pairs) and queue the check."""
    if system.organisation_id not in user_org_ids(actor, roles=SUBMITTER_ROLES):
        raise NotAllowedError(
            "Only submitters and org admins of the system's organisation can upload a preview."
        )
    name = (name or "").strip()
    if not name:
        raise ApplicationError("Give the preview a name (e.g. the tool and the run).", code="invalid")
    if not files:
        raise ApplicationError(
            "Choose the tool's output files, or one .tar.gz or .zip of its output folder.",
            code="preview-no-file",
        )
    if len(files) > max_files():
        raise ApplicationError(
            f"{len(files)} files is more than the {max_files()} a preview takes; upload one .tar.gz or .zip of "
            "the tool's output folder instead.",
            code="preview-too-many-files",
        )
    total = sum(_size(f) for f in files)
    if total > max_bytes():
        raise ApplicationError(
            f"The files add up to {total:,} bytes, more than the {max_bytes():,} a preview takes; leave out "
            "files the importers do not read (docs/importers.md lists them).",
            code="preview-too-large",
        )
    stored = []
    for upload in files:
        data = _bytes(upload)
        digest = hashlib.sha256(data).hexdigest()
        key = default_storage.save(f"previews/sha256/{digest[:2]}/{digest}", ContentFile(data))
        stored.append({"name": _name(upload), "size_bytes": len(data), "sha256": digest, "storage_key": key})
    preview = Preview.objects.create(
        organisation_id=system.organisation_id,
        system=system,
        benchmark=benchmark,
        name=name[:120],
        files=stored,
        created_by=actor,
        checking_since=timezone.now(),
    )
    _queue(preview)
    return preview


def _queue(preview: Preview) -> None:
    task_send_on_commit("previews.tasks.preview_check_task", preview.pk)


def _size(upload) -> int:
    return len(upload[1]) if isinstance(upload, tuple) else int(upload.size)


def _bytes(upload) -> bytes:
    if isinstance(upload, tuple):
        return bytes(upload[1])
    upload.seek(0)
    return upload.read()


def _name(upload) -> str:
    return str(upload[0] if isinstance(upload, tuple) else upload.name)


def _lay_out(preview: Preview, root: Path, findings: Findings) -> None:
    """Write the stored files into `root`: archives extracted under the caps, other files by their own name."""
    budget = Budget(IMPORT_LIMITS, inflation_basis=sum(f["size_bytes"] for f in preview.files))
    taken: set[str] = set()
    for index, entry in enumerate(preview.files):
        name = entry["name"].replace("\\", "/").rsplit("/", 1)[-1]
        problem = name_problem(name) if name else ("preview-file-name", "it has no name")
        if problem is not None or name in ("", ".", ".."):
            findings.error(
                "preview-file-name",
                f"File {index + 1} has a name the portal does not write ({problem[1] if problem else name!r}); "
                "it was not read.",
                fix="Rename the file to the name the tool gave it and upload it again.",
            )
            continue
        with default_storage.open(entry["storage_key"], "rb") as stream:
            data = stream.read()
        stage = root.parent / "stage" / str(index)  # outside `root`: never read as an output file
        stage.mkdir(parents=True)
        staged = stage / name
        staged.write_bytes(data)
        kind = sniff_archive(staged)
        if kind is not None:
            target = root / f"archive-{index}"
            target.mkdir()
            extract_archive(staged, kind, target, budget=budget, findings=findings)
            staged.unlink()
            continue
        if name in taken:
            findings.error(
                "preview-duplicate-name",
                f"Two files are named {name}; only the first was read.",
                file=name,
                fix="Upload a .tar.gz or .zip of the tool's output folder, so that each file keeps its folder.",
            )
            staged.unlink()
            continue
        taken.add(name)
        staged.rename(root / name)


def preview_check(preview_id: int) -> Preview | None:
    """Read the files through the registry's importers and recompute every point (safe to run twice). Whatever
    goes wrong, the preview ends `failed` with a finding that says what to do: never `checking` for good."""
    preview = Preview.objects.filter(pk=preview_id).select_related("system", "benchmark").first()
    if preview is None or not PREVIEW.state_allows(preview, "finish"):
        return preview
    try:
        return _check(preview)
    except Exception as exc:  # noqa: BLE001 - any error of the check ends the preview, reported, never stuck
        logger.exception("preview %s: the check stopped", preview.pk)
        return preview_give_up(
            preview,
            rule="preview-check-error",
            message=f"The check stopped on an unexpected error ({exc.__class__.__name__}); the files are kept.",
        )


def preview_give_up(preview: Preview, *, rule: str, message: str) -> Preview:
    """End a preview whose check cannot finish as `failed`, with one finding a user can act on (re-check or delete)."""
    finding = {"rule": rule, "severity": "error", "message": message, "fix": PREVIEW_RETRY}
    PREVIEW.take(
        None,
        preview,
        "finish",
        target=Preview.Status.FAILED,
        fields={
            "result": {},
            "curve": {},
            "findings": [finding],
            "error_count": 1,
            "checked_at": timezone.now(),
        },
        data={"rule": rule},
        quiet=True,
    )
    preview.refresh_from_db()
    return preview


def _check(preview: Preview) -> Preview:
    findings = Findings()
    with tempfile.TemporaryDirectory(prefix="preview-") as tmp:
        root = Path(tmp) / "files"
        root.mkdir()
        _lay_out(preview, root, findings)
        result = import_runs([root])
    every = [*findings, *result.findings]
    points = []
    for point in result.points:
        portal = point["portal"]
        concurrency = point["concurrency"]
        points.append(
            {
                "point": point["label"],
                "concurrency": concurrency,
                "system_tps": portal.get("system_tps"),
                "tps_per_user": portal.get("tps_per_user"),
                "ttft_p90_ms": portal.get("ttft_p90_ms"),
                "goodput": portal.get("goodput"),
                "basis": "recomputed",
            }
        )
    usable = [p for p in points if p["concurrency"] is not None]
    curve = (
        curve_of(system=preview.system.name, model=preview.benchmark.model_id, points=usable, ruleset=None)
        if usable
        else {}
    )
    outcome = Preview.Status.CHECKED if usable else Preview.Status.FAILED
    errors = sum(1 for f in every if f.severity == "error")
    PREVIEW.take(
        None,
        preview,
        "finish",
        target=outcome,
        fields={
            "tool": result.tool or "",
            "tool_version": (result.tool_version or "")[:80],
            "result": result.to_dict(),
            "curve": curve,
            "findings": [f.to_dict() for f in every],
            "error_count": errors,
            "checked_at": timezone.now(),
        },
        data={"errors": errors, "points": len(usable)},
        quiet=True,
    )
    preview.refresh_from_db()
    return preview


def preview_recheck(*, actor, preview: Preview) -> Preview:
    if PREVIEW.take(
        actor,
        preview,
        "recheck",
        fields={
            "result": {},
            "curve": {},
            "findings": [],
            "error_count": 0,
            "checking_since": timezone.now(),
        },
    ):
        _queue(preview)
    preview.refresh_from_db()
    return preview


def preview_delete(*, actor, preview: Preview) -> None:
    PREVIEW.require(actor, preview, "delete")
    keys = [f["storage_key"] for f in preview.files]
    preview.delete()
    for key in keys:  # content-addressed: another preview may hold the same bytes
        if not any(key == f["storage_key"] for p in Preview.objects.all().only("files") for f in p.files):
            default_storage.delete(key)
