"""The check pipeline's services: create, start, check one point, join, retry, reconcile, re-check.

One CheckRun per (version, request). Each step calls one step of checker.cli.pipeline, the same steps
`portal check` runs in one process, so the portal's verdict is the command's verdict on the same files:

  check_run_start    (one task)  queued -> running; lists the load points file by file
                                 (pipeline.list_points) and fans out a Celery chord:
  check_run_point    (N tasks)   pipeline.check_point on the files that hold the point (and those that
                                 hold none); stores its PointMetric row and its findings (delete-and-insert);
  check_run_finish   (join)      pipeline.judge_version over the whole version on the stored points (no
                                 second recomputation), with the portal-only rules (checker.judge.portal_rules);
                                 the report's findings, curves and document become the run's rows, and the
                                 run ends passed/failed.

Files come through the worker's cache (submissions.storage.fetch_to_folder): a point task reads only
its own archive from storage, and what one task read is not read again by the next on that worker.

Every task carries (check_run_id, attempt). A task whose attempt is not the run's current attempt
(a message re-delivered after its attempt was given up) does nothing, and every state change is
a compare-and-set on (status, attempts), so a run ends exactly once however often messages arrive.
A worker lost mid-run stops the heartbeat; check_runs_reconcile re-queues the run as the next
attempt, or fails it after max_attempts, and says so in error_message. A queued run whose start
message never reached a worker is handled the same way after PORTAL_CHECK_QUEUED_TIMEOUT_S.
"""

from __future__ import annotations

import dataclasses
import functools
import io
import json
import logging
import tempfile
import time
from contextlib import ExitStack, contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

from celery import current_app
from django.conf import settings
from django.db import transaction
from django.db.models import Exists, F, OuterRef, Q
from django.utils import timezone
from tokenizers import Tokenizer

from accounts.selectors import user_is_auditor
from audit.services import audit_event_record
from catalog.selectors import benchmark_tokenizer_json
from checker import __version__ as checker_version
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
from checker.judge.portal_rules import ReusedRawLog, SubmissionScope
from checker.read.inputs import Limits
from checker.recompute.goodput import SampleSeries, sha256_of
from checker.report import PointResult, Report, json_safe
from checker.tokens import TokenCounter
from portal.errors import NotAllowedError
from submissions.models import CheckOutbox, CheckRun, Finding, PointMetric, Submission, SubmissionVersion
from submissions.selectors import check_run_latest, published_revisions
from submissions.storage import StoredFile, fetch_to_folder, storage_save_exact
from submissions.workflow import CHECK_RUN, SUBMISSION_FILES

logger = logging.getLogger(__name__)

HEARTBEAT_EVERY_S = 2.0


# --- creating and queueing -------------------------------------------------------------------


# The tasks module imports this one; queueing by the task's registered name keeps the import one-way.
CHECK_RUN_START_TASK = "submissions.tasks.check_run_start_task"


# A sender holds an outbox row this long; a sender that died meanwhile leaves it to the next one.
OUTBOX_LEASE_S = 60
OUTBOX_BATCH = 100


def _queue_start(check_run: CheckRun) -> None:
    """Queue the run's start message through the outbox: the row commits with the run (so a committed run always
    has its message, whatever happens to the broker) and is sent after commit; if the broker is down then, the
    beat task sends it once the broker is back (check_outbox_send)."""
    message = CheckOutbox.objects.create(check_run=check_run, attempt=check_run.attempts)
    transaction.on_commit(functools.partial(check_outbox_send, ids=[message.pk]))


def _send_start(run_id: int, attempt: int) -> None:
    current_app.signature(CHECK_RUN_START_TASK, args=[run_id, attempt]).apply_async(
        retry=False
    )  # unpack queue


def check_outbox_send(*, ids: list[int] | None = None, now=None) -> int:
    """Send the pending start messages (those in `ids`, or all), oldest first; returns how many were sent.

    Each row is claimed (a lease, compare-and-set) before it is sent and deleted after, so two senders never
    send one row at once; a sender that dies between send and delete leaves a duplicate, which the run's
    compare-and-set on (status, attempt) ignores. The first broker error stops the pass: the rows wait for the
    next one (the beat task, every few seconds). Never raises."""
    now = now or timezone.now()
    free = Q(claimed_until__isnull=True) | Q(claimed_until__lt=now)
    pending = CheckOutbox.objects.filter(free)
    if ids is not None:
        pending = pending.filter(pk__in=ids)
    sent = 0
    for row_id, run_id, attempt in pending.order_by("created_at", "pk").values_list(
        "pk", "check_run_id", "attempt"
    )[:OUTBOX_BATCH]:
        claimed = CheckOutbox.objects.filter(free, pk=row_id).update(
            claimed_until=now + timedelta(seconds=OUTBOX_LEASE_S), send_attempts=F("send_attempts") + 1
        )
        if not claimed:
            continue  # another sender has it
        try:
            _send_start(run_id, attempt)
        except Exception as exc:  # noqa: BLE001 - the broker is down or refuses: the row waits for the next pass
            logger.warning(
                "check run %s attempt %s: start message not sent (%s); it stays queued", run_id, attempt, exc
            )
            CheckOutbox.objects.filter(pk=row_id).update(
                claimed_until=None, last_error=f"{type(exc).__name__}: {exc}"[:500]
            )
            break
        # The queued deadline (check_runs_reconcile) counts from now, when the queue got the message.
        CheckRun.objects.filter(CHECK_RUN.sources_q("start"), pk=run_id, attempts=attempt).update(
            heartbeat_at=timezone.now()
        )
        CheckOutbox.objects.filter(pk=row_id).delete()
        sent += 1
    return sent


def check_start_pending(version: SubmissionVersion) -> bool:
    """True while a check of `version` waits for its start message because sending it failed (the broker is
    down); a message being sent right now (a concurrent request's) does not count."""
    return CheckOutbox.objects.filter(check_run__version=version).exclude(last_error="").exists()


def check_run_create(
    *, version: SubmissionVersion, actor=None, purpose: str = CheckRun.Purpose.SUBMISSION
) -> CheckRun:
    """A new queued run of the checker over `version` with its benchmark's current rule set; the check starts
    after commit. A `recheck` run (leaderboard.rechecks) goes through the same pipeline and queues but is never
    the version's current run."""
    benchmark = version.submission.benchmark
    with transaction.atomic():
        check_run = CheckRun.objects.create(
            version=version,
            purpose=purpose,
            requested_by=actor,
            ruleset=benchmark.ruleset_version,
            max_attempts=settings.PORTAL_CHECK_MAX_ATTEMPTS,
        )
        _queue_start(check_run)
    return check_run


@transaction.atomic
def check_run_requeue(*, version: SubmissionVersion, actor) -> CheckRun:
    """The chair or an auditor re-checks a version (after a checker or rule-set change, or to audit the frozen
    version): a new run, history kept."""
    submission = version.submission
    if not SUBMISSION_FILES.allowed(actor, submission, "requeue_check"):  # the chair re-checks any version
        if not user_is_auditor(actor):
            raise NotAllowedError("Only the chair or an auditor can re-check a version.")
        if not SUBMISSION_FILES.allowed(actor, submission, "audit_recheck"):  # an auditor: submitted only
            raise NotAllowedError(
                "Auditors re-check submitted versions only (a draft is its organisation's own)."
            )
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
    runs = CheckRun.objects.filter(CheckRun.states.q("running"), pk=run_id, attempts=attempt)
    if lock:
        runs = runs.select_for_update()
    return runs.first()


def _heartbeat(run_id: int, attempt: int, **fields) -> bool:
    """Prove the attempt is alive; False when the run moved on (then the caller should stop)."""
    return bool(
        CheckRun.objects.filter(CheckRun.states.q("running"), pk=run_id, attempts=attempt).update(
            heartbeat_at=timezone.now(), **fields
        )
    )


class _Beat:
    """A checker progress callback that heart-beats at most every HEARTBEAT_EVERY_S seconds."""

    def __init__(self, run_id: int, attempt: int):
        self.run_id, self.attempt = run_id, attempt
        self.last = 0.0

    def __call__(self, stage: str = "", done: int = 0, total: int = 0, message: str = "") -> None:
        now = time.monotonic()
        if now - self.last >= HEARTBEAT_EVERY_S:
            self.last = now
            _heartbeat(self.run_id, self.attempt)


@contextmanager
def _fetched(version: SubmissionVersion, *, positions: set[int] | None = None, beat: _Beat | None):
    """Local copies of the version's stored files (all of them, or those at `positions`), in upload order,
    under their own names, in a private folder removed on exit; served by the worker's cache when it can."""
    files = [f for f in version.files.order_by("position") if positions is None or f.position in positions]
    stored = [
        StoredFile(
            storage_key=f.storage_key, sha256=f.sha256, size_bytes=f.size_bytes, filename=f.original_filename
        )
        for f in files
    ]
    with tempfile.TemporaryDirectory(prefix=f"portal-v{version.pk}-") as folder:
        paths = fetch_to_folder(stored, Path(folder) / "files", on_chunk=beat)
        yield [(f.position, path) for f, path in zip(files, paths, strict=True)], Path(folder)


@functools.lru_cache(maxsize=8)
def _tokenizer_from_text(text: str):
    return Tokenizer.from_str(text)


def _token_counter_for(version: SubmissionVersion) -> TokenCounter:
    return TokenCounter(_tokenizer_from_text(benchmark_tokenizer_json(version.submission.benchmark)))


def _scope_of(submission) -> SubmissionScope:
    """What the portal-only rules need to know about the submission, as plain data."""
    system = submission.system
    revision = system.description_revisions.order_by("-number").values_list("number", flat=True).first()
    return SubmissionScope(
        submission_label=f"submission #{submission.pk}",
        system=system.name,
        model=submission.benchmark.model_id,
        registered_description=system.description if isinstance(system.description, dict) else {},
        registered_revision=revision,
    )


def storable_text(text: str) -> str:
    """Text PostgreSQL can store (text and jsonb hold no NUL and only valid UTF-8): a NUL shows as \\u0000 and a
    lone surrogate (bytes that were not UTF-8) as its escape. The checker already escapes what it quotes; this
    keeps one overlooked character from failing the whole check."""
    if "\x00" in text:
        text = text.replace("\x00", "\\u0000")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


def _finding_rows(check_run: CheckRun, step: str, findings) -> list[Finding]:
    return [
        Finding(
            check_run=check_run,
            step=step,
            rule=storable_text(f.rule),
            severity=f.severity,
            file=storable_text(f.file or ""),
            line=f.line,
            pointer=storable_text(f.pointer or ""),
            point=storable_text(f.point or ""),
            message=storable_text(f.message),
            fix=storable_text(f.fix or ""),
        )
        for f in findings
    ]


def _storable(value):
    if isinstance(value, str):
        return storable_text(value)
    if isinstance(value, dict):
        return {storable_text(str(k)): _storable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_storable(v) for v in value]
    return value


def _json_safe(value):
    return (
        _storable(json.loads(json.dumps(json_safe(value), default=str, allow_nan=False)))
        if value is not None
        else None
    )


# --- the steps: each calls one step of checker.cli.pipeline ----------------------------------------


def _limits(version: SubmissionVersion) -> Limits:
    """The checker's caps for every step of a check of `version`; the inflation cap is taken of the version's size
    (every step, whichever files it opens, has the same cap)."""
    return Limits(
        max_inflation=float(settings.PORTAL_CHECK_MAX_INFLATION), inflation_basis_bytes=version.size_bytes
    )


def _end_inflated(check_run: CheckRun, attempt: int, findings, *, inputs: list[str]) -> None:
    """The version inflates past PORTAL_CHECK_MAX_INFLATION: the run ends `failed` at its start, with that finding
    (no point is recomputed from an archive that was not read to its end)."""
    report = Report(checker_version=checker_version, ruleset=check_run.ruleset, inputs=inputs)
    report.findings.extend(unique_sorted(findings))
    counts = report.counts()
    with transaction.atomic():
        if _is_current(check_run.pk, attempt, lock=True) is None:
            return
        Finding.objects.filter(check_run=check_run).delete()
        Finding.objects.bulk_create(_finding_rows(check_run, "", report.findings))
        now = timezone.now()
        CHECK_RUN.advance(
            CheckRun.objects.filter(attempts=attempt),
            check_run,
            "fail",
            finished_at=now,
            heartbeat_at=now,
            counts=counts,
            report=_json_safe(report.to_dict()),
            progress_stage="done",
        )
        audit_event_record(
            actor=None,
            action="check.finished",
            obj=check_run,
            data={"version": check_run.version_id, "status": "failed", "attempt": attempt, "counts": counts},
        )


def check_run_start(*, check_run_id: int, attempt: int) -> list[str] | None:
    """queued -> running; list the version's points (pipeline.list_points, file by file, so each point
    task later fetches only the files it needs). Returns the point keys to fan out, or None when this
    attempt is not (or no longer) the run's to start."""
    now = timezone.now()
    started = CHECK_RUN.advance(
        CheckRun.objects.filter(attempts=attempt),
        check_run_id,
        "start",
        started_at=now,
        heartbeat_at=now,
        checker_version=checker_version,
        progress_stage="reading",
        progress_done=0,
        progress_total=0,
    )
    if not started and _is_current(check_run_id, attempt) is None:
        return None  # stale message, or a run that already ended
    check_run = CheckRun.objects.select_related("version").get(pk=check_run_id)
    beat = _Beat(check_run_id, attempt)
    first_file_of: dict[str, int] = {}
    pointless: list[int] = []
    detected_kinds: set[str] = set()
    inflated = 0
    with _fetched(check_run.version, beat=beat) as (files, folder):
        for position, path in files:
            limits = dataclasses.replace(_limits(check_run.version), inflated_before=inflated)
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
    _heartbeat(
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
    positions = set(check_run.point_files.get(point_key) or []) or None
    token_counter = _token_counter_for(check_run.version)
    limits = _limits(check_run.version)
    with _fetched(check_run.version, positions=positions, beat=beat) as (files, folder):
        with open_version([path for _, path in files], limits=limits, workdir=folder) as opened:
            outcome = check_point(
                opened.layout, point_key, token_counter=token_counter, limits=limits, progress=beat
            )
    result = outcome.result
    samples_key, samples_sha256 = point_samples_save(samples=outcome.samples)
    with transaction.atomic():
        if _is_current(check_run_id, attempt, lock=True) is None:
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
            claimed=_json_safe(result.claimed),
            recomputed=_json_safe(result.recomputed),
            extra=_json_safe(result.extra),
            raw_log_sha256=_digest_of(result.recomputed, "raw_log_sha256"),
            tracked_sequence_sha256=_digest_of(result.recomputed, "tracked_sequence_sha256"),
            samples_key=samples_key,
            samples_sha256=samples_sha256,
        )
        Finding.objects.bulk_create(_finding_rows(check_run, point_key, outcome.findings))
        done = PointMetric.objects.filter(check_run_id=check_run_id).count()
        _heartbeat(check_run_id, attempt, progress_done=done)
    return True


def _digest_of(recomputed: Any, key: str) -> str:
    value = recomputed.get(key) if isinstance(recomputed, dict) else None
    return value if isinstance(value, str) and len(value) == 64 else ""


def _raw_logs_elsewhere(check_run: CheckRun) -> tuple[ReusedRawLog, ...]:
    """This run's raw logs (by either digest) found under the points of any check run of a submission of another
    system, withdrawn and rejected ones included (one run is one run, whatever became of its submission)."""
    submission = check_run.version.submission
    own = PointMetric.objects.filter(check_run=check_run)
    digests: dict[str, str] = {}  # digest -> own point key
    for key, file_digest, sequence_digest in own.values_list(
        "key", "raw_log_sha256", "tracked_sequence_sha256"
    ):
        for digest in (file_digest, sequence_digest):
            if digest:
                digests.setdefault(digest, key)
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
        if label not in labels:
            labels.append(label)
    return tuple(
        ReusedRawLog(point=key, elsewhere=" and ".join(labels)) for key, labels in sorted(found.items())
    )


def point_samples_save(*, samples: SampleSeries | None) -> tuple[str, str]:
    """Store a point's per-sample arrays (.npz, content-addressed, so a repeat stores nothing new); the
    (storage key, SHA-256) a PointMetric keeps, or two empty strings when the point had no raw log."""
    if samples is None:
        return "", ""
    data = samples.to_npz()
    sha256 = sha256_of(data)
    key = f"samples/sha256/{sha256[:2]}/{sha256}.npz"
    storage_save_exact(key, io.BytesIO(data))
    return key, sha256


def point_samples_backfill(*, check_run: CheckRun) -> int:
    """Replay the raw logs of a finished check run's points that have no per-sample arrays yet (runs checked
    before the arrays were kept), store the arrays and link them; returns how many points got them. The
    recomputed metrics and findings are left as they are: only the arrays are added."""
    missing = list(
        PointMetric.objects.filter(check_run=check_run, samples_key="", recomputed__isnull=False).order_by(
            "key"
        )
    )
    if not missing:
        return 0
    version = check_run.version
    token_counter = _token_counter_for(version)
    limits = _limits(version)
    done = 0
    for metric in missing:
        positions = set(check_run.point_files.get(metric.key) or []) or None
        with _fetched(version, positions=positions, beat=None) as (files, folder):
            with open_version([path for _, path in files], limits=limits, workdir=folder) as opened:
                try:
                    outcome = check_point(
                        opened.layout, metric.key, token_counter=token_counter, limits=limits
                    )
                except KeyError:
                    continue
        key, sha256 = point_samples_save(samples=outcome.samples)
        if key:
            done += PointMetric.objects.filter(pk=metric.pk, samples_key="").update(
                samples_key=key, samples_sha256=sha256
            )
    return done


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
    submission: Submission, *, stack: ExitStack, beat: _Beat, limits: Limits
) -> ExtensionScope:
    """The published revisions an extension builds on (newest first), each version's files opened inside `stack`,
    with the stored results and findings of the check run each was published with."""
    revisions = []
    for number, published in published_revisions(submission.extends):
        version = published.submitted_version
        published_run = check_run_latest(version)
        files, folder = stack.enter_context(_fetched(version, beat=beat))
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
    if _is_current(check_run_id, attempt) is None:
        return None
    check_run = CheckRun.objects.select_related(
        "version__submission__benchmark", "version__submission__system"
    ).get(pk=check_run_id)
    outcomes = _stored_outcomes(check_run)
    missing = [key for key in check_run.points_expected if key not in outcomes]
    if missing:  # a point task failed for good: let the retry logic decide
        raise RuntimeError(f"{len(missing)} load point(s) have no result: {', '.join(missing[:5])}")
    _heartbeat(check_run_id, attempt, progress_stage="rules")
    beat = _Beat(check_run_id, attempt)
    limits = _limits(check_run.version)
    submission = check_run.version.submission
    with _fetched(check_run.version, beat=beat) as (files, folder):
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
                    _scope_of(submission), raw_logs_elsewhere=_raw_logs_elsewhere(check_run)
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
        if _is_current(check_run_id, attempt, lock=True) is None:
            return None
        Finding.objects.filter(check_run=check_run).delete()
        Finding.objects.bulk_create(_finding_rows(check_run, "", report.findings))
        for point in report.points:  # the rules add per-point facts (region, power ...) to extra
            PointMetric.objects.filter(check_run=check_run, key=point.key).update(
                extra=_json_safe(point.extra)
            )
        now = timezone.now()
        ended = CHECK_RUN.advance(
            CheckRun.objects.filter(attempts=attempt),
            check_run_id,
            verdict,
            finished_at=now,
            heartbeat_at=now,
            counts=counts,
            curves=_json_safe(report.curves),
            report=_json_safe(report.to_dict()),
            progress_stage="done",
            progress_done=len(report.points),
        )
        if not ended:
            return None
        status = CHECK_RUN.rule(verdict).target
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
            CheckRun.states.q("unfinished"), pk=check_run_id, attempts=attempt
        )
        if only_if is not None:
            runs = runs.filter(only_if)
        check_run = runs.first()
        if check_run is None:
            return None
        reason = storable_text(reason)
        now = timezone.now()
        if attempt < check_run.max_attempts:
            message = f"{reason}; re-queued (attempt {attempt + 1} of {check_run.max_attempts})"
            # heartbeat_at of a queued run is when it was (re-)queued: the queued deadline counts from it.
            CHECK_RUN.advance(
                CheckRun.objects.filter(attempts=attempt),
                check_run,
                "requeue",
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
            CHECK_RUN.advance(
                CheckRun.objects.filter(attempts=attempt),
                check_run,
                "error",
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
    silent = CheckRun.states.q("running") & Q(heartbeat_at__lt=heartbeat_deadline)
    queued_deadline = now - timedelta(seconds=settings.PORTAL_CHECK_QUEUED_TIMEOUT_S)
    # A first attempt was queued at created_at; a re-queued attempt at heartbeat_at (set when re-queued).
    # A run whose message still waits in the outbox was never sent, not lost: the outbox sends it.
    waiting = Exists(CheckOutbox.objects.filter(check_run=OuterRef("pk")))
    never_started = (
        CheckRun.states.q("queued")
        & (Q(heartbeat_at__lt=queued_deadline) | Q(heartbeat_at__isnull=True, created_at__lt=queued_deadline))
        & ~waiting
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
