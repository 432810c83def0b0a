"""The check pipeline's services: create, start, check one point, join, retry, reconcile, re-check.

One CheckRun per (version, request). The pipeline, all of it queued after commit:

  check_run_start    (one task)  queued -> running; downloads the version's files, lists its load
                                 points (checker.inputs.open_inputs) and fans out a Celery chord:
  check_run_point    (N tasks)   checker.check(..., only_points={key}) for one point; stores its
                                 PointMetric row and its point findings (delete-and-insert per point);
  check_run_finish   (join)      runs the rule suite once over the whole version on the stored
                                 per-point results (no second recomputation), stores the version-level
                                 findings, curves and report, and ends the run passed/failed.

Every task carries (check_run_id, attempt). A task whose attempt is not the run's current attempt
(a message re-delivered after its attempt was given up) does nothing, and every state change is
a compare-and-set on (status, attempts), so a run ends exactly once however often messages arrive.
A worker lost mid-run stops the heartbeat; check_runs_reconcile re-queues the run as the next
attempt, or fails it after max_attempts, and says so in error_message. A queued run whose start
message never reached a worker is handled the same way after PORTAL_CHECK_QUEUED_TIMEOUT_S.
"""

from __future__ import annotations

import functools
import logging
import shutil
import tempfile
import time
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from audit.services import audit_event_record
from portal.errors import NotAllowedError
from submissions.models import CheckRun, Finding, PointMetric, SubmissionVersion
from submissions.selectors import benchmark_tokenizer_json, user_is_chair
from submissions.uploads import COPY_CHUNK_BYTES, storage_open_stream

logger = logging.getLogger(__name__)

HEARTBEAT_EVERY_S = 2.0


# --- creating and queueing -------------------------------------------------------------------


def _queue_start(check_run: CheckRun) -> None:
    from submissions.tasks import check_run_start_task

    run_id, attempt = check_run.pk, check_run.attempts
    transaction.on_commit(
        lambda: check_run_start_task.apply_async(args=[run_id, attempt], queue=settings.PORTAL_CHECK_QUEUE)
    )


def check_run_create(*, version: SubmissionVersion, actor=None) -> CheckRun:
    """A new queued run of the checker over `version`; the check starts after commit."""
    benchmark = version.submission.benchmark
    with transaction.atomic():
        check_run = CheckRun.objects.create(
            version=version,
            requested_by=actor,
            ruleset=benchmark.ruleset_version,
            max_attempts=settings.PORTAL_CHECK_MAX_ATTEMPTS,
        )
        _queue_start(check_run)
    return check_run


@transaction.atomic
def check_run_requeue(*, version: SubmissionVersion, actor) -> CheckRun:
    """The chair re-checks a version (e.g. after a checker or rule-set change): a new run, history kept."""
    if not user_is_chair(actor):
        raise NotAllowedError("Only the chair can re-check a version.")
    check_run = check_run_create(version=version, actor=actor)
    audit_event_record(
        actor=actor,
        action="check.requeued",
        obj=check_run,
        data={"version": version.pk, "submission": version.submission_id, "ruleset": check_run.ruleset},
    )
    return check_run


# --- shared pieces of the pipeline steps -----------------------------------------------------


def _is_current(run_id: int, attempt: int, *, lock: bool = False) -> CheckRun | None:
    runs = CheckRun.objects.filter(pk=run_id, attempts=attempt, status=CheckRun.Status.RUNNING)
    if lock:
        runs = runs.select_for_update()
    return runs.first()


def _heartbeat(run_id: int, attempt: int, **fields) -> bool:
    """Prove the attempt is alive; False when the run moved on (then the caller should stop)."""
    return bool(
        CheckRun.objects.filter(pk=run_id, attempts=attempt, status=CheckRun.Status.RUNNING).update(
            heartbeat_at=timezone.now(), **fields
        )
    )


class _Beat:
    """A checker progress callback that heart-beats at most every HEARTBEAT_EVERY_S seconds."""

    def __init__(self, run_id: int, attempt: int):
        self.run_id, self.attempt = run_id, attempt
        self.last = 0.0

    def __call__(self, stage: str, done: int, total: int, message: str) -> None:
        now = time.monotonic()
        if now - self.last >= HEARTBEAT_EVERY_S:
            self.last = now
            _heartbeat(self.run_id, self.attempt)


@dataclass
class _Inputs:
    folder: Path
    paths: list[Path]

    def close(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)


def _download_version(version: SubmissionVersion, *, beat: _Beat | None = None) -> _Inputs:
    """Copy the version's stored files into a private temporary folder, streaming, under their own names
    (the checker names archives in its findings by file name)."""
    folder = Path(tempfile.mkdtemp(prefix=f"portal-v{version.pk}-"))
    paths = []
    try:
        for version_file in version.files.order_by("position"):
            target_dir = folder / "files" / str(version_file.position)
            target_dir.mkdir(parents=True)
            target = target_dir / (version_file.original_filename.replace("/", "_") or "upload")
            stream = storage_open_stream(version_file.storage_key)
            try:
                with open(target, "wb") as out:
                    while chunk := stream.read(COPY_CHUNK_BYTES):
                        out.write(chunk)
                        if beat is not None:
                            beat("download", 0, 0, "")
            finally:
                stream.close()
            paths.append(target)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return _Inputs(folder=folder, paths=paths)


@functools.lru_cache(maxsize=8)
def _tokenizer_from_text(text: str):
    from tokenizers import Tokenizer

    return Tokenizer.from_str(text)


def _tokenizer_for(version: SubmissionVersion):
    return _tokenizer_from_text(benchmark_tokenizer_json(version.submission.benchmark))


def _finding_rows(check_run: CheckRun, step: str, findings) -> list[Finding]:
    return [
        Finding(
            check_run=check_run,
            step=step,
            rule=f.rule,
            severity=f.severity,
            file=f.file or "",
            line=f.line,
            pointer=f.pointer or "",
            point=f.point or "",
            message=f.message,
            fix=f.fix or "",
        )
        for f in findings
    ]


def _finding_identity(row: Finding) -> tuple:
    return (row.rule, row.severity, row.file, row.line, row.pointer, row.point, row.message)


# --- the steps -------------------------------------------------------------------------------


def check_run_start(*, check_run_id: int, attempt: int) -> list[str] | None:
    """queued -> running; list the version's points. Returns the point keys to fan out, or None when this
    attempt is not (or no longer) the run's to start."""
    from checker import __version__ as checker_version
    from checker.inputs import Limits, open_inputs
    from checker.report import Findings

    now = timezone.now()
    started = CheckRun.objects.filter(
        pk=check_run_id, attempts=attempt, status=CheckRun.Status.QUEUED
    ).update(
        status=CheckRun.Status.RUNNING,
        started_at=now,
        heartbeat_at=now,
        checker_version=checker_version,
        progress_stage="reading",
        progress_done=0,
        progress_total=0,
    )
    if not started and _is_current(check_run_id, attempt) is None:
        return None  # stale message, or a run that already ended
    check_run = CheckRun.objects.select_related("version__submission__benchmark").get(pk=check_run_id)
    beat = _Beat(check_run_id, attempt)
    inputs = _download_version(check_run.version, beat=beat)
    try:
        with tempfile.TemporaryDirectory(prefix="portal-list-", dir=inputs.folder) as sandbox:
            layout = open_inputs(inputs.paths, workdir=Path(sandbox), limits=Limits(), findings=Findings())
            keys = sorted({p.key for p in layout.points})
    finally:
        inputs.close()
    _heartbeat(
        check_run_id,
        attempt,
        points_expected=keys,
        progress_stage="points",
        progress_total=len(keys),
        progress_done=0,
    )
    return keys


def check_run_point(*, check_run_id: int, attempt: int, point_key: str) -> bool:
    """Recompute one load point and store its metrics and findings (delete-and-insert: safe to repeat)."""
    from checker.check import check
    from checker.inputs import Limits

    check_run = _is_current(check_run_id, attempt)
    if check_run is None:
        return False
    check_run = CheckRun.objects.select_related("version__submission__benchmark").get(pk=check_run_id)
    beat = _Beat(check_run_id, attempt)
    delay = settings.PORTAL_CHECK_TEST_POINT_DELAY_S
    if delay:  # test hook: a slow point, so a test can kill the worker mid-check
        deadline = time.monotonic() + delay
        while time.monotonic() < deadline:
            _heartbeat(check_run_id, attempt)
            time.sleep(0.5)
    inputs = _download_version(check_run.version, beat=beat)
    try:
        report = check(
            inputs.paths,
            tokenizer=_tokenizer_for(check_run.version),
            ruleset=check_run.ruleset,
            limits=Limits(),
            workdir=inputs.folder,
            progress=beat,
            only_points={point_key},
        )
    finally:
        inputs.close()
    result = next((p for p in report.points if p.key == point_key), None)
    with transaction.atomic():
        if _is_current(check_run_id, attempt, lock=True) is None:
            return False
        PointMetric.objects.filter(check_run_id=check_run_id, key=point_key).delete()
        Finding.objects.filter(check_run_id=check_run_id, step=point_key).delete()
        if result is not None:
            PointMetric.objects.create(
                check_run_id=check_run_id,
                key=point_key,
                system=result.system,
                model=result.model,
                concurrency=result.concurrency,
                source=result.source,
                claimed=result.claimed,
                recomputed=result.recomputed,
                extra=_json_safe(result.extra),
            )
        Finding.objects.bulk_create(
            _finding_rows(check_run, point_key, [f for f in report.findings if f.point == point_key])
        )
        done = PointMetric.objects.filter(check_run_id=check_run_id).count()
        _heartbeat(check_run_id, attempt, progress_done=done)
    return True


def _json_safe(value):
    import json

    return json.loads(json.dumps(value, default=str, allow_nan=False)) if value is not None else None


def _top_level_differences(registered: dict, uploaded: dict) -> list[str]:
    return sorted(key for key in set(registered) | set(uploaded) if registered.get(key) != uploaded.get(key))


def scope_findings(layout, *, submission, findings) -> None:
    """Portal-only rules over the whole version, which need the submission: every point must be of the
    submission's system and model (`submission-scope`, error), and the system_desc.json the points carry should
    be the registered description of the system (`system-desc-mismatch`, warning, naming the differing keys)."""
    import json

    from checker.inputs import Limits
    from checker.loaders import load_json
    from checker.report import Findings
    from checker.ruleset import RulesetError, load_ruleset

    system, model = submission.system.name, submission.benchmark.model_id
    expected = f"{system}/{model}"
    # Keys the rules let vary from point to point (parallelism, batch, tps_utilization...) are not the
    # system's identity: leave them out of the comparison with the registered description.
    try:
        per_point = set(
            load_ruleset(submission.benchmark.ruleset_version).get(
                "disclosure", "system_desc_per_point", default=[]
            )
            or []
        )
    except RulesetError:
        per_point = set()

    def identity(description: dict) -> dict:
        return {k: v for k, v in description.items() if k not in per_point}

    registered = submission.system.description if isinstance(submission.system.description, dict) else {}
    registered = identity(registered)
    descriptions: dict[str, dict] = {}  # canonical JSON -> {"description", "displays", "points"}
    for point in sorted(layout.points, key=lambda p: (p.system, p.model, p.concurrency)):
        found = f"{point.system}/{point.model}"
        if found != expected:
            what = " and ".join(
                name
                for name, differs in (("system", point.system != system), ("model", point.model != model))
                if differs
            )
            findings.error(
                "submission-scope",
                f"{point.display}: this load point is for {found}, but submission #{submission.pk} is for "
                f"{expected} (the {what} differ{'s' if ' and ' not in what else ''}).",
                file=point.display,
                point=point.key,
                fix=f"Upload only run archives (or a bundle) of {expected} to this submission. Results of {found} "
                f"belong in their own submission: create one for that system and benchmark on the dashboard "
                f"(register the system on the Systems page first if it is new).",
            )
            continue
        path = point.files.get("system_desc.json")
        if not registered or path is None:
            continue
        uploaded = load_json(
            path, display=point.display_of("system_desc.json"), findings=Findings(), limits=Limits()
        )  # unreadable copies already have their own findings
        if not isinstance(uploaded, dict) or identity(uploaded) == registered:
            continue
        uploaded = identity(uploaded)
        canonical = json.dumps(uploaded, sort_keys=True, default=str)
        entry = descriptions.setdefault(canonical, {"description": uploaded, "displays": [], "points": []})
        entry["displays"].append(point.display_of("system_desc.json"))
        entry["points"].append(point.key)
    revision = (
        submission.system.description_revisions.order_by("-number").values_list("number", flat=True).first()
    )
    for entry in descriptions.values():
        keys = _top_level_differences(registered, entry["description"])
        others = len(entry["displays"]) - 1
        also = f" (and the copies of {others} more point{'s' if others != 1 else ''})" if others else ""
        findings.warning(
            "system-desc-mismatch",
            f"{entry['displays'][0]}{also} differs from the registered description of {system}"
            f"{f' (revision {revision})' if revision else ''} in the top-level key{'s' if len(keys) != 1 else ''} "
            f"{', '.join(keys)}.",
            file=entry["displays"][0],
            point=entry["points"][0] if len(entry["points"]) == 1 else None,
            fix=f"If the system changed, give {system} the new system_desc.json on its system page (a new, audited "
            "revision); otherwise upload results made with the registered description.",
        )


def check_run_finish(*, check_run_id: int, attempt: int) -> str | None:
    """The join: rules over the whole version on the stored points, then running -> passed/failed."""
    from checker.inputs import Limits, open_inputs
    from checker.report import Findings, PointResult, Report

    check_run = _is_current(check_run_id, attempt)
    if check_run is None:
        return None
    check_run = CheckRun.objects.select_related("version__submission__benchmark").get(pk=check_run_id)
    metrics = {m.key: m for m in PointMetric.objects.filter(check_run=check_run)}
    missing = [key for key in check_run.points_expected if key not in metrics]
    if missing:  # a point task failed for good: let the retry logic decide
        raise RuntimeError(f"{len(missing)} load point(s) have no result: {', '.join(missing[:5])}")
    _heartbeat(check_run_id, attempt, progress_stage="rules")
    report = Report(checker_version=check_run.checker_version, ruleset=check_run.ruleset)
    for metric in sorted(metrics.values(), key=lambda m: (m.system, m.model, m.concurrency)):
        report.points.append(
            PointResult(
                system=metric.system,
                model=metric.model,
                concurrency=metric.concurrency,
                source=metric.source,
                claimed=metric.claimed,
                recomputed=metric.recomputed,
                extra=dict(metric.extra or {}),
            )
        )
    inputs = _download_version(check_run.version, beat=_Beat(check_run_id, attempt))
    try:
        report.inputs = [p.name for p in inputs.paths]
        with tempfile.TemporaryDirectory(prefix="portal-join-", dir=inputs.folder) as sandbox:
            findings = Findings()
            layout = open_inputs(inputs.paths, workdir=Path(sandbox), limits=Limits(), findings=findings)
            report.findings.extend(findings)
            report.unreadable = layout.readable_inputs == 0
            try:
                from checker.rules import run_rules
            except ImportError:  # a checker build without the rule suite
                run_rules = None
            if run_rules is not None:
                run_rules(layout, report, ruleset=check_run.ruleset)
            scope_findings(layout, submission=check_run.version.submission, findings=report.findings)
            if settings.PORTAL_CHECK_OFFICIAL:
                # The official checker's own verdict on the same files, with every disagreement an info
                # finding, so reviewers see where the portal is stricter and why.
                try:
                    from checker.official import cross_check
                except ImportError:
                    cross_check = None
                if cross_check is not None:
                    cross_check(layout, report, workdir=Path(sandbox))
            try:
                from checker.curve import build_curves
            except ImportError:
                build_curves = None
            if build_curves is not None:
                report.curves = build_curves(report, ruleset=check_run.ruleset)
    finally:
        inputs.close()

    with transaction.atomic():
        if _is_current(check_run_id, attempt, lock=True) is None:
            return None
        Finding.objects.filter(check_run=check_run, step="").delete()
        point_rows = list(Finding.objects.filter(check_run=check_run).exclude(step=""))
        seen = {_finding_identity(row) for row in point_rows}
        join_rows = []
        for row in _finding_rows(check_run, "", report.findings):
            identity = _finding_identity(row)
            if identity not in seen:
                seen.add(identity)
                join_rows.append(row)
        Finding.objects.bulk_create(join_rows)
        all_rows = point_rows + join_rows
        for point in report.points:  # the rules add per-point facts (region, power ...) to extra
            metric = metrics.get(point.key)
            if metric is not None and point.extra != metric.extra:
                PointMetric.objects.filter(pk=metric.pk).update(extra=_json_safe(point.extra))
        counts = {"error": 0, "warning": 0, "info": 0}
        for row in all_rows:
            counts[row.severity] = counts.get(row.severity, 0) + 1
        status = CheckRun.Status.FAILED if counts["error"] else CheckRun.Status.PASSED
        document = report.to_dict()
        document["findings"] = [
            {
                "rule": r.rule,
                "severity": r.severity,
                "file": r.file or None,
                "line": r.line,
                "pointer": r.pointer or None,
                "point": r.point or None,
                "message": r.message,
                "fix": r.fix or None,
            }
            for r in sorted(
                all_rows,
                key=lambda r: (
                    {"error": 0, "warning": 1}.get(r.severity, 2),
                    r.point,
                    r.file,
                    r.line or 0,
                    r.rule,
                ),
            )
        ]
        document["counts"] = counts
        document["verdict"] = "fail" if counts["error"] else "pass"
        now = timezone.now()
        ended = CheckRun.objects.filter(
            pk=check_run_id, attempts=attempt, status=CheckRun.Status.RUNNING
        ).update(
            status=status,
            finished_at=now,
            heartbeat_at=now,
            counts=counts,
            curves=_json_safe(report.curves),
            report=_json_safe(document),
            progress_stage="done",
            progress_done=len(metrics),
        )
        if not ended:
            return None
        audit_event_record(
            actor=None,
            action="check.finished",
            obj=check_run,
            data={"version": check_run.version_id, "status": status, "attempt": attempt, "counts": counts},
        )
    return status


# --- failures, retries and the reconciler ----------------------------------------------------


def check_run_attempt_failed(
    *, check_run_id: int, attempt: int, reason: str, only_if: Q | None = None
) -> CheckRun | None:
    """The attempt cannot complete (worker lost, storage down, a bug): re-queue the next attempt, or
    end the run as `error` after the last one. The reason is kept for the submitter to read.
    `only_if` is re-checked under the row lock (the reconciler: still stuck, not started or beating meanwhile)."""
    with transaction.atomic():
        runs = CheckRun.objects.select_for_update().filter(
            pk=check_run_id, attempts=attempt, status__in=(CheckRun.Status.QUEUED, CheckRun.Status.RUNNING)
        )
        if only_if is not None:
            runs = runs.filter(only_if)
        check_run = runs.first()
        if check_run is None:
            return None
        now = timezone.now()
        if attempt < check_run.max_attempts:
            message = f"{reason}; re-queued (attempt {attempt + 1} of {check_run.max_attempts})"
            # heartbeat_at of a queued run is when it was (re-)queued: the queued deadline counts from it.
            CheckRun.objects.filter(pk=check_run.pk, attempts=attempt).update(
                status=CheckRun.Status.QUEUED,
                attempts=attempt + 1,
                error_message=message,
                heartbeat_at=now,
                started_at=None,
                progress_stage="",
                progress_done=0,
            )
            # The next attempt recomputes every point: drop what the lost attempt stored.
            PointMetric.objects.filter(check_run=check_run).delete()
            Finding.objects.filter(check_run=check_run).delete()
            check_run.refresh_from_db()
            audit_event_record(
                actor=None,
                action="check.retried",
                obj=check_run,
                data={"attempt": attempt + 1, "reason": reason},
            )
            _queue_start(check_run)
        else:
            message = f"{reason}; failed after {attempt} attempt{'s' if attempt != 1 else ''}"
            CheckRun.objects.filter(pk=check_run.pk, attempts=attempt).update(
                status=CheckRun.Status.ERROR,
                error_message=message,
                finished_at=now,
            )
            check_run.refresh_from_db()
            audit_event_record(
                actor=None, action="check.errored", obj=check_run, data={"attempt": attempt, "reason": reason}
            )
    return check_run


QUEUED_LOST_REASON = "the check never started (its queue message was lost)"


def check_runs_reconcile(*, now=None) -> list[int]:
    """The beat schedule calls this every minute. Re-queue (or fail) as the next attempt:
    - running checks whose heartbeat stopped for PORTAL_CHECK_HEARTBEAT_TIMEOUT_S (worker lost);
    - queued checks not started PORTAL_CHECK_QUEUED_TIMEOUT_S after they were queued (the start message
      was lost, e.g. Redis flushed). The next attempt gets a fresh message; should the old one still turn
      up, it carries the old attempt number and does nothing.
    """
    now = now or timezone.now()
    heartbeat_deadline = now - timedelta(seconds=settings.PORTAL_CHECK_HEARTBEAT_TIMEOUT_S)
    silent = Q(status=CheckRun.Status.RUNNING, heartbeat_at__lt=heartbeat_deadline)
    queued_deadline = now - timedelta(seconds=settings.PORTAL_CHECK_QUEUED_TIMEOUT_S)
    # A first attempt was queued at created_at; a re-queued attempt at heartbeat_at (set when re-queued).
    never_started = Q(status=CheckRun.Status.QUEUED) & (
        Q(heartbeat_at__lt=queued_deadline) | Q(heartbeat_at__isnull=True, created_at__lt=queued_deadline)
    )
    stuck = [
        (pk, attempt, "worker lost", silent)
        for pk, attempt in CheckRun.objects.filter(silent).values_list("pk", "attempts")
    ]
    stuck += [
        (pk, attempt, QUEUED_LOST_REASON, never_started)
        for pk, attempt in CheckRun.objects.filter(never_started).values_list("pk", "attempts")
    ]
    handled = []
    for run_id, attempt, reason, condition in stuck:
        if (
            check_run_attempt_failed(check_run_id=run_id, attempt=attempt, reason=reason, only_if=condition)
            is not None
        ):
            handled.append(run_id)
    return handled
