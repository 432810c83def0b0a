"""The three steps of a check run, each calling one step of checker.cli.pipeline: check_run_start (list the points and
fan out), check_run_point (recompute one point), check_run_finish (judge the version on the stored points)."""

from __future__ import annotations

import dataclasses
import time
from contextlib import ExitStack
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from checker.cli.pipeline import (
    PointOutcome,
    check_point,
    findings_from_dicts,
    judge_extension,
    judge_version,
    list_points,
    open_version,
    unique_sorted,
)
from checker.judge.extension import ExtensionScope, PublishedRevision, finding_identity
from checker.judge.portal_rules import PublishedRawLogs, ReusedRawLog
from checker.read.inputs import Limits
from checker.read.loaders import load_descriptor_quietly
from checker.report import PointResult, Report
from checker.version import __version__ as checker_version
from submissions.checks.common import (
    Beat,
    fetched,
    finding_rows,
    heartbeat,
    is_current,
    json_storable,
    limits_for,
    scope_of,
    token_counter_for,
)
from submissions.checks.samples import point_samples_save
from submissions.models import CheckRun, Finding, PointMetric, Submission, SubmissionVersion
from submissions.selectors import check_run_latest, published_revisions
from submissions.signals import check_run_ended, public_ids_of
from submissions.workflow import CHECK_RUN


def _end_inflated(check_run: CheckRun, attempt: int, findings, *, inputs: list[str]) -> None:
    """The version inflates past PORTAL_CHECK_MAX_INFLATION: the run ends `failed` at its start, with that finding
    (no point is recomputed from an archive that was not read to its end)."""
    report = Report(checker_version=checker_version, ruleset=check_run.ruleset, inputs=inputs)
    report.findings.extend(unique_sorted(findings))
    counts = report.counts()
    with transaction.atomic():
        if is_current(check_run.pk, attempt, lock=True) is None:
            return
        Finding.objects.filter(check_run=check_run).delete()
        Finding.objects.bulk_create(finding_rows(check_run, "", report.findings))
        now = timezone.now()
        CHECK_RUN.take(
            None,
            check_run,
            "fail",
            queryset=CheckRun.objects.filter(attempts=attempt),
            fields={
                "finished_at": now,
                "heartbeat_at": now,
                "counts": counts,
                "report": json_storable(report.to_dict()),
                "progress_stage": "done",
            },
            data={"version": check_run.version_id, "status": "failed", "attempt": attempt, "counts": counts},
            quiet=True,
        )
        check_run_ended.send(sender=CheckRun, check_run=check_run)


def check_run_start(*, check_run_id: int, attempt: int) -> list[str] | None:
    """queued -> running; list the version's points (pipeline.list_points, file by file, so each point
    task later fetches only the files it needs). Returns the point keys to fan out, or None when this
    attempt is not (or no longer) the run's to start."""
    now = timezone.now()
    check_run = CheckRun.objects.select_related("version").filter(pk=check_run_id).first()
    if check_run is None:
        return None
    started = CHECK_RUN.take(
        None,
        check_run,
        "start",
        queryset=CheckRun.objects.filter(attempts=attempt),
        fields={
            "started_at": now,
            "heartbeat_at": now,
            "checker_version": checker_version,
            "progress_stage": "reading",
            "progress_done": 0,
            "progress_total": 0,
        },
        quiet=True,
    )
    if not started and is_current(check_run_id, attempt) is None:
        return None  # stale message, or a run that already ended
    check_run.refresh_from_db()
    beat = Beat(check_run_id, attempt)
    first_file_of: dict[str, int] = {}
    pointless: list[int] = []
    detected_kinds: set[str] = set()
    inflated = 0
    with fetched(check_run.version, beat=beat) as (files, folder):
        for position, path in files:
            limits = dataclasses.replace(limits_for(check_run.version), inflated_before=inflated)
            with open_version([path], limits=limits, workdir=folder, raw_logs=False) as opened:
                keys = list_points(opened.layout)
                inflated = opened.layout.inflated_bytes
                too_inflated = [f for f in opened.findings if f.rule == "archive-inflation"]
                detected_kinds.add(opened.layout.kind)
            if too_inflated:  # the whole version is over the cap: no step reads it further
                _end_inflated(check_run, attempt, too_inflated, inputs=[p.name for _, p in files])
                return None
            if not keys:
                pointless.append(position)
            for key in keys:
                first_file_of.setdefault(key, position)  # a point given twice is read from its first file
    _version_kind_record(version=check_run.version, detected=detected_kinds)
    keys = sorted(first_file_of)
    point_files = {key: sorted({first_file_of[key], *pointless}) for key in keys}
    heartbeat(
        check_run_id,
        attempt,
        points_expected=keys,
        point_files=point_files,
        progress_stage="points",
        progress_total=len(keys),
        progress_done=0,
    )
    return keys


def _version_kind_record(*, version: SubmissionVersion, detected: set[str]) -> None:
    """Record the version's kind as the registry of input kinds detected it in the files (checker.read.kinds).

    The kind given at upload (or guessed from the number of files) is a claim; what the files are is known once
    they are read. A version holding a bundle is a bundle (run archives beside it are extra points of it); a
    version of run archives only is run_archives. The files themselves never change: only this label of them,
    compare-and-set from the value read, so a concurrent re-check cannot flip it back."""
    detected = detected & set(SubmissionVersion.Kind.values)
    if not detected:
        return
    kind = SubmissionVersion.Kind.BUNDLE if SubmissionVersion.Kind.BUNDLE in detected else detected.pop()
    if kind != version.kind:
        SubmissionVersion.objects.filter(pk=version.pk, kind=version.kind).update(kind=kind)


def check_run_point(*, check_run_id: int, attempt: int, point_key: str) -> bool:
    """Recompute one load point (pipeline.check_point) from only the files it needs, and store its metrics
    and findings (delete-and-insert: safe to repeat)."""
    check_run = is_current(check_run_id, attempt)
    if check_run is None:
        return False
    check_run = CheckRun.objects.select_related("version__submission__benchmark").get(pk=check_run_id)
    beat = Beat(check_run_id, attempt)
    delay = settings.PORTAL_CHECK_TEST_POINT_DELAY_S
    if delay:  # test hook: a slow point, so a test can kill the worker mid-check
        deadline = time.monotonic() + delay
        while time.monotonic() < deadline:
            heartbeat(check_run_id, attempt)
            time.sleep(0.5)
    positions = set(check_run.point_files.get(point_key) or []) or None
    token_counter = token_counter_for(check_run.version)
    limits = limits_for(check_run.version)
    with fetched(check_run.version, positions=positions, beat=beat) as (files, folder):
        with open_version([path for _, path in files], limits=limits, workdir=folder) as opened:
            outcome = check_point(
                opened.layout, point_key, token_counter=token_counter, limits=limits, progress=beat
            )
            source = point_source(opened.layout, point_key, files, limits=limits)
    result = outcome.result
    samples_key, samples_sha256 = point_samples_save(samples=outcome.samples)
    with transaction.atomic():
        if is_current(check_run_id, attempt, lock=True) is None:
            return False
        PointMetric.objects.filter(check_run_id=check_run_id, key=point_key).delete()
        Finding.objects.filter(check_run_id=check_run_id, step=point_key).delete()
        PointMetric.objects.create(
            check_run_id=check_run_id,
            key=point_key,
            system=result.system,
            model=result.model,
            concurrency=result.concurrency,
            source=result.source,
            claimed=json_storable(result.claimed),
            recomputed=json_storable(result.recomputed),
            extra=json_storable({**result.extra, "source": source}),
            raw_log_sha256=_digest_of(result.recomputed, "raw_log_sha256"),
            tracked_sequence_sha256=_digest_of(result.recomputed, "tracked_sequence_sha256"),
            samples_key=samples_key,
            samples_sha256=samples_sha256,
        )
        Finding.objects.bulk_create(finding_rows(check_run, point_key, outcome.findings))
        done = PointMetric.objects.filter(check_run_id=check_run_id).count()
        heartbeat(check_run_id, attempt, progress_done=done)
    return True


def point_source(layout, point_key: str, files: list[tuple[int, Any]], *, limits: Limits) -> dict[str, Any]:
    """Where a point was read from, kept with its metrics so a publication cites it (leaderboard.publishing.snapshot): the
    position of the version file holding its folder, the raw log's path inside that file, and the system
    description the point carries (what it was measured on; None when it has none or it is unreadable)."""
    point = next(candidate for candidate in layout.points if candidate.key == point_key)
    position, inside = None, ""
    display = point.displays.get("events") or point.display
    for file_position, path in files:
        prefix = f"{path.name}:"
        if display.startswith(prefix):
            position, inside = file_position, display[len(prefix) :]
            break
    description = load_descriptor_quietly(point.files.get("system_desc.json"), limits=limits)
    return {
        "position": position,
        "path": inside,
        "raw_log": "events" in point.files,
        "system_desc": description if isinstance(description, dict) else None,
    }


def _digest_of(recomputed: Any, key: str) -> str:
    value = recomputed.get(key) if isinstance(recomputed, dict) else None
    return value if isinstance(value, str) and len(value) == 64 else ""


def _own_digests(check_run: CheckRun) -> dict[str, str]:
    """digest -> this run's point key, by either digest of each point's raw log."""
    digests: dict[str, str] = {}
    for key, file_digest, sequence_digest in PointMetric.objects.filter(check_run=check_run).values_list(
        "key", "raw_log_sha256", "tracked_sequence_sha256"
    ):
        for digest in (file_digest, sequence_digest):
            if digest:
                digests.setdefault(digest, key)
    return digests


def _raw_logs_published(check_run: CheckRun) -> tuple[PublishedRawLogs, ...]:
    """This run's raw logs found under the points of a published submission of the same organisation (a result or
    one of its published extensions), grouped by the result's public id; an extension's own result is not counted
    (re-using its points is what an extension may do)."""
    submission = check_run.version.submission
    digests = _own_digests(check_run)
    if not digests:
        return ()
    matches = (
        PointMetric.objects.filter(Q(raw_log_sha256__in=digests) | Q(tracked_sequence_sha256__in=digests))
        .filter(check_run__version__submission__organisation_id=submission.organisation_id)
        .exclude(check_run__version__submission=submission)
        .values_list("check_run__version__submission_id", "raw_log_sha256", "tracked_sequence_sha256")
    )
    own_points: dict[int, set[str]] = {}  # other submission -> this run's point keys
    for other_id, file_digest, sequence_digest in matches:
        key = digests.get(file_digest) or digests.get(sequence_digest)
        if key:
            own_points.setdefault(other_id, set()).add(key)
    if not own_points:
        return ()
    published = Submission.objects.filter(Submission.states.q("published"), pk__in=list(own_points))
    if submission.extends_id is not None:  # the result it extends, and that result's published extensions
        published = published.exclude(pk=submission.extends_id).exclude(extends_id=submission.extends_id)
    public_ids = public_ids_of(list(published.values_list("pk", flat=True)))
    grouped: dict[str, set[str]] = {}
    for other_id, public_id in public_ids.items():
        grouped.setdefault(public_id, set()).update(own_points[other_id])
    return tuple(
        PublishedRawLogs(public_id=public_id, points=tuple(sorted(keys)))
        for public_id, keys in sorted(grouped.items())
    )


def _raw_logs_elsewhere(check_run: CheckRun) -> tuple[ReusedRawLog, ...]:
    """This run's raw logs (by either digest) found under the points of any check run of a submission of another
    system, withdrawn and rejected ones included (one run is one run, whatever became of its submission)."""
    submission = check_run.version.submission
    digests = _own_digests(check_run)
    if not digests:
        return ()
    others = (
        PointMetric.objects.filter(Q(raw_log_sha256__in=digests) | Q(tracked_sequence_sha256__in=digests))
        .exclude(check_run__version__submission=submission)
        .exclude(check_run__version__submission__system=submission.system)
        .select_related("check_run__version__submission__system__organisation")
        .order_by("check_run__version__submission_id", "key", "-check_run_id")
    )
    found: dict[str, list[str]] = {}  # own point key -> the other submissions' points, each once
    ours: dict[str, bool] = {}  # own point key -> one of them is this organisation's
    for metric in others:
        other = metric.check_run.version.submission
        digest = metric.raw_log_sha256 if metric.raw_log_sha256 in digests else metric.tracked_sequence_sha256
        own_key = digests[digest]
        # Another organisation's submission is not named at all: the finding is read by this organisation, which
        # may not see it (its number, system and state stay under embargo).
        same_organisation = other.organisation_id == submission.organisation_id
        label = (
            f"submission #{other.pk} ({metric.key})"
            if same_organisation
            else f"a submission of another organisation (its point r{metric.concurrency})"
        )
        labels = found.setdefault(own_key, [])
        ours[own_key] = ours.get(own_key, False) or same_organisation
        if label not in labels:
            labels.append(label)
    return tuple(
        ReusedRawLog(point=key, elsewhere=" and ".join(labels), other_organisation=not ours[key])
        for key, labels in sorted(found.items())
    )


def _stored_outcomes(check_run: CheckRun) -> dict[str, PointOutcome]:
    """The point steps' results back from their rows, as the pipeline's PointOutcome."""
    findings_of: dict[str, list[dict]] = {}
    for row in Finding.objects.filter(check_run=check_run).exclude(step="").values():
        findings_of.setdefault(row["step"], []).append(row)
    outcomes = {}
    for metric in PointMetric.objects.filter(check_run=check_run):
        result = PointResult(
            system=metric.system,
            model=metric.model,
            concurrency=metric.concurrency,
            source=metric.source,
            claimed=metric.claimed,
            recomputed=metric.recomputed,
            extra=dict(metric.extra or {}),
        )
        outcomes[metric.key] = PointOutcome(
            result=result, findings=findings_from_dicts(findings_of.get(metric.key, []))
        )
    return outcomes


def _extension_scope(
    submission: Submission, *, stack: ExitStack, beat: Beat, limits: Limits
) -> ExtensionScope:
    """The published revisions an extension builds on (newest first), each version's files opened inside `stack`,
    with the stored results and findings of the check run each was published with."""
    revisions = []
    for number, published in published_revisions(submission.extends):
        version = published.submitted_version
        published_run = check_run_latest(version)
        files, folder = stack.enter_context(fetched(version, beat=beat))
        opened = stack.enter_context(
            open_version([path for _, path in files], limits=limits, workdir=folder, raw_logs=False)
        )
        stored = _stored_outcomes(published_run) if published_run is not None else {}
        judged = (
            {
                finding_identity(rule, severity, point or None, message)
                for rule, severity, point, message in published_run.findings.values_list(
                    "rule", "severity", "point", "message"
                )
            }
            if published_run is not None
            else set()
        )
        revisions.append(
            PublishedRevision(
                number=number,
                stack=published.stack_label,
                layout=opened.layout,
                results={key: outcome.result for key, outcome in stored.items()},
                judged=judged,
            )
        )
    return ExtensionScope(
        stack=submission.stack,
        declares_stack_change=bool((submission.changes or {}).get("software")),
        revisions=tuple(revisions),
    )


def check_run_finish(*, check_run_id: int, attempt: int) -> str | None:
    """The join (pipeline.judge_version over the stored points), then running -> passed/failed. The
    report's findings replace the point steps' rows: the run's findings are exactly the report's."""
    if is_current(check_run_id, attempt) is None:
        return None
    check_run = CheckRun.objects.select_related(
        "version__submission__benchmark", "version__submission__system"
    ).get(pk=check_run_id)
    outcomes = _stored_outcomes(check_run)
    missing = [key for key in check_run.points_expected if key not in outcomes]
    if missing:  # a point task failed for good: let the retry logic decide
        raise RuntimeError(f"{len(missing)} load point(s) have no result: {', '.join(missing[:5])}")
    heartbeat(check_run_id, attempt, progress_stage="rules")
    beat = Beat(check_run_id, attempt)
    limits = limits_for(check_run.version)
    submission = check_run.version.submission
    with fetched(check_run.version, beat=beat) as (files, folder):
        # The join needs the descriptors only: the points' raw logs were read by their own tasks.
        with (
            open_version(
                [path for _, path in files], limits=limits, workdir=folder, raw_logs=False
            ) as opened,
            ExitStack() as base,
        ):
            opened.inputs = [path.name for _, path in files]
            arguments = dict(
                ruleset=check_run.ruleset,
                limits=limits,
                official=settings.PORTAL_CHECK_OFFICIAL,
                scope=dataclasses.replace(
                    scope_of(submission),
                    raw_logs_elsewhere=_raw_logs_elsewhere(check_run),
                    raw_logs_published=_raw_logs_published(check_run),
                ),
                sandbox=folder,
                progress=beat,
            )
            own = [outcomes[key] for key in list_points(opened.layout)]
            if submission.extends_id is None:
                report = judge_version(opened, own, **arguments)
            else:  # the union with the published revisions (checker.judge.extension)
                extension = _extension_scope(submission, stack=base, beat=beat, limits=limits)
                report = judge_extension(opened, own, extension=extension, **arguments)
    counts = report.counts()
    verdict = "fail" if report.verdict == "fail" else "pass"
    with transaction.atomic():
        if is_current(check_run_id, attempt, lock=True) is None:
            return None
        Finding.objects.filter(check_run=check_run).delete()
        Finding.objects.bulk_create(finding_rows(check_run, "", report.findings))
        for point in report.points:  # the rules add per-point facts (region, power ...) to extra
            PointMetric.objects.filter(check_run=check_run, key=point.key).update(
                extra=json_storable(point.extra)
            )
        now = timezone.now()
        status = CHECK_RUN.rule(verdict).target
        ended = CHECK_RUN.take(
            None,
            check_run,
            verdict,
            queryset=CheckRun.objects.filter(attempts=attempt),
            fields={
                "finished_at": now,
                "heartbeat_at": now,
                "counts": counts,
                "curves": json_storable(report.curves),
                "report": json_storable(report.to_dict()),
                "progress_stage": "done",
                "progress_done": len(report.points),
            },
            data={"version": check_run.version_id, "status": status, "attempt": attempt, "counts": counts},
            quiet=True,
        )
        if not ended:
            return None
        check_run_ended.send(sender=CheckRun, check_run=check_run)
    return status
