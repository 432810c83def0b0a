"""Writes of spot-checks: start one (an auditor, the chair or the schedule), measure it (the worker, on the
`spotcheck` queue), and the schedule's pass over published results whose endpoint stays up.

Who may start one is the submission's table's `spot_check` row (guarded here with `require` before anything is
written); the worker's steps are the spot-check's own table (spotchecks.workflow), compare-and-set, so a message
delivered twice measures once. A verdict `outside` on a published curve opens a challenge for the chair
(leaderboard.publishing.services.challenge_raise_remeasured): nothing published changes by itself."""

from __future__ import annotations

import hashlib
import json
import logging
import tempfile
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.db import transaction
from django.utils import timezone

from audit.services import audit_event_record
from checker.cli.import_pipeline import import_runs
from checker.judge import remeasure_stats
from checker.read.inputs import Limits as ReadLimits
from checker.read.kinds.guidellm import GuideLLMKind
from checker.recompute.goodput import SampleSeries
from checker.recompute.imported import request_series
from checker.report import Findings
from leaderboard.board.goodput.samples import load_samples, published_point_samples
from leaderboard.models import Publication
from leaderboard.publishing.services import challenge_raise_remeasured
from leaderboard.publishing.signals import public_changed_on_commit
from portal.egress import EgressProxy, EgressRefused, Limits
from portal.errors import ApplicationError, ConflictError
from portal.queues import task_send_on_commit
from review import lifecycle
from spotchecks import runner
from spotchecks.models import SpotCheck
from spotchecks.selectors import FIGURES, claim_of, claimed_figures
from spotchecks.workflow import SPOT_CHECK
from submissions.endpoints import endpoint_credential
from submissions.models import Endpoint, PointMetric, Submission

logger = logging.getLogger(__name__)
S = SpotCheck.Status


@transaction.atomic
def spotcheck_start(
    *, submission: Submission, actor, concurrency: int | None, queue: bool = True
) -> SpotCheck:
    """Queue a spot-check of the point at `concurrency` of the submission's claim (the published curve, else the
    latest check run). `actor` None is the schedule. One at a time per submission. `queue` False: recorded by
    spotcheck_record_measured, never sent to a worker."""
    submission = (
        Submission.objects.select_for_update().select_related("system", "benchmark").get(pk=submission.pk)
    )
    lifecycle.require(actor, submission, "spot_check")  # who, state, a declared endpoint
    missing = runner.not_installed(settings.PORTAL_GUIDELLM_BIN) if queue else ""
    if missing:
        raise ApplicationError(missing, code="remeasurement-not-installed")
    if SpotCheck.objects.filter(SpotCheck.states.q("active"), submission=submission).exists():
        raise ConflictError(
            "A spot-check of this submission is still measuring: wait for its verdict.", code="spotcheck-busy"
        )
    claim = claim_of(submission)
    if not claim.points:
        raise ConflictError(
            "The submission's curve has no point with a concurrency yet (its check has not finished).",
            code="spotcheck-no-points",
        )
    by_concurrency = {point["concurrency"]: point for point in claim.points}
    if concurrency not in by_concurrency:
        raise ApplicationError(
            f"Pick one of the curve's points: concurrency {', '.join(str(c) for c in by_concurrency)}.",
            code="spotcheck-point-unknown",
        )
    point = by_concurrency[concurrency]
    endpoint = Endpoint.objects.get(submission=submission)
    spot_check = SpotCheck.objects.create(
        submission=submission,
        publication=claim.publication,
        check_run=claim.check_run,
        source=claim.source,
        point=str(point.get("point") or f"c{concurrency}")[:200],
        concurrency=concurrency,
        duration_s=settings.PORTAL_SPOTCHECK_DURATION_S,
        claimed=claimed_figures(point),
        endpoint_url=endpoint.url,
        model_name=endpoint.model_name,
        started_by=actor,
    )
    audit_event_record(
        actor=actor,
        action="spotcheck.started",
        obj=spot_check,
        data={
            "submission": submission.pk,
            "public_id": claim.publication.public_id if claim.publication else None,
            "source": claim.source,
            "concurrency": concurrency,
            "duration_s": spot_check.duration_s,
            "claimed": spot_check.claimed,
        },
    )
    if queue:
        task_send_on_commit("spotchecks.tasks.spotcheck_run_task", spot_check.pk)
    return spot_check


def _store(name: str, data: bytes) -> dict:
    """Content-addressed evidence: the same bytes are stored once."""
    digest = hashlib.sha256(data).hexdigest()
    key = f"spotchecks/sha256/{digest[:2]}/{digest}"
    if not default_storage.exists(key):
        key = default_storage.save(key, ContentFile(data))
    return {"name": name, "size_bytes": len(data), "sha256": digest, "storage_key": key}


def _limits() -> Limits:
    return Limits(
        connect_timeout_s=settings.PORTAL_EGRESS_CONNECT_TIMEOUT_S,
        read_timeout_s=settings.PORTAL_EGRESS_READ_TIMEOUT_S,
        max_requests=settings.PORTAL_EGRESS_MAX_REQUESTS,
        max_duration_s=settings.PORTAL_EGRESS_MAX_DURATION_S,
        rate_per_s=settings.PORTAL_EGRESS_RATE_PER_S,
    )


def _measure(spot_check: SpotCheck, endpoint: Endpoint, workdir: Path) -> dict:
    """Run GuideLLM through the guard and import its output: what `_finish` writes."""
    missing = runner.not_installed(settings.PORTAL_GUIDELLM_BIN)
    if missing:  # the worker's machine lacks it (the start is refused where the web process lacks it)
        return {"status": S.ERROR, "detail": missing, "evidence": [], "egress": {}}
    spec = runner.LoadSpec(
        concurrency=spot_check.concurrency,
        duration_s=spot_check.duration_s,
        model_name=endpoint.model_name,
        prompt_tokens=settings.PORTAL_SPOTCHECK_PROMPT_TOKENS,
        output_tokens=settings.PORTAL_SPOTCHECK_OUTPUT_TOKENS,
        read_timeout_s=float(settings.PORTAL_EGRESS_READ_TIMEOUT_S),
    )
    try:
        proxy = EgressProxy(
            endpoint.url,
            credential=endpoint_credential(endpoint),
            allow_loopback=settings.PORTAL_EGRESS_ALLOW_LOOPBACK,
            limits=_limits(),
        )
    except EgressRefused as exc:
        return {"status": S.UNREACHABLE, "detail": f"{exc.code}: {exc.detail}", "evidence": [], "egress": {}}
    with proxy:
        output = runner.run_guidellm(
            proxy.url,
            spec,
            guidellm_bin=settings.PORTAL_GUIDELLM_BIN,
            tokenizer=str(settings.PORTAL_SPOTCHECK_TOKENIZER),
            workdir=workdir,
        )
    record = proxy.record
    egress = {
        "forwarded": record.forwarded,
        "refused": dict(record.refused),
        "upstream_errors": record.upstream_errors,
        "last_refusal": record.last_refusal[:500],
    }
    benchmarks = output.benchmarks.read_bytes() if output.benchmarks is not None else None
    return measurement_outcome(
        spot_check, benchmarks=benchmarks, egress=egress, log=output.log, returncode=output.returncode
    )


def measurement_outcome(
    spot_check: SpotCheck, *, benchmarks: bytes | None, egress: dict, log: bytes, returncode: int | None
) -> dict:
    """Judge one GuideLLM run: its raw output stored as evidence, imported through checker/read/kinds/guidellm,
    compared with the claim; `unreachable` when nothing completed and the guard recorded why."""
    evidence = []
    if benchmarks is not None:
        evidence.append(_store("benchmarks.json", benchmarks))
    evidence.append(_store("egress.json", json.dumps(egress, indent=2, sort_keys=True).encode()))
    evidence.append(_store("guidellm.log", log))
    result = None
    series = None
    if benchmarks is not None:
        with tempfile.TemporaryDirectory(prefix="spotcheck-import-") as tmp:
            path = Path(tmp) / "benchmarks.json"
            path.write_bytes(benchmarks)
            result = import_runs([path], tool="guidellm")
            series = _measured_series(path)
    point = result.points[0] if result is not None and result.points else None
    completed = (point or {}).get("reported", {}).get("requests_completed") or 0
    common = {"evidence": evidence, "egress": egress}
    if result is not None:
        common.update(tool_version=(result.tool_version or "")[:80])
    if point is None or not completed:
        refused = egress.get("refused") or {}
        if sum(refused.values()) + egress.get("upstream_errors", 0) or not egress.get("forwarded"):
            codes = ", ".join(f"{code} x{count}" for code, count in sorted(refused.items()))
            last = egress.get("last_refusal") or ""
            return {
                **common,
                "status": S.UNREACHABLE,
                "detail": f"No request completed. The guard recorded: {codes or 'nothing forwarded'}."
                + (f" Last: {last[:300]}" if last else ""),
            }
        return {
            **common,
            "status": S.ERROR,
            "detail": f"GuideLLM ended (exit code {returncode}) with no completed request; its log is kept.",
        }
    measured = {figure: point["portal"].get(figure) for figure in FIGURES}
    verdict, comparison = judge(spot_check, series)
    return {
        **common,
        "status": verdict,
        "measured": measured,
        "comparison": comparison,
        "reported": point.get("reported") or {},
        "detail": "",
    }


def _measured_series(path: Path) -> SampleSeries | None:
    """The re-measurement's per-request samples (GuideLLM's benchmarks.json, read by its importer)."""
    kind = GuideLLMKind()
    run = kind.read([path], findings=Findings(), limits=ReadLimits())
    if run is None or not run.points:
        return None
    first = run.points[0]
    return request_series(first.requests, first.duration_s)


def published_series(spot_check: SpotCheck) -> SampleSeries | None:
    """The claimed point's per-request samples, kept when its check ran (PointMetric.samples_key): the published
    result's point (an extension's inherited points included), else the check run's point at that concurrency.
    None when the point kept none (then the claim's figures are held fixed)."""
    stored = None
    if spot_check.publication_id is not None:
        public_id = spot_check.publication.public_id
        stored = published_point_samples([public_id]).get(public_id, {}).get(spot_check.point)
    if stored is None and spot_check.check_run_id is not None:
        metric = (
            PointMetric.objects.filter(
                check_run_id=spot_check.check_run_id, concurrency=spot_check.concurrency
            )
            .exclude(samples_key="")
            .filter(key=spot_check.point)
            .first()
        )
        stored = (metric.samples_key, metric.samples_sha256) if metric is not None else None
    return load_samples(*stored) if stored is not None else None


def judge(spot_check: SpotCheck, measured: SampleSeries | None) -> tuple[str, list[dict]]:
    """The stored verdict (docs/remeasurement.md, "Judged with statistics"): each figure's shortfall with a 95 %
    bootstrap interval over requests, against MLPerf's 10 % margin for another party's reproduction; `within`,
    `outside`, or `inconclusive` with the run length that would decide. Each row says which samples it drew."""
    if measured is None or not measured.tracked:
        return S.INCONCLUSIVE, []
    published = published_series(spot_check)
    judgements = remeasure_stats.judge_with_intervals(
        published if published is not None and published.tracked else None,
        measured,
        claimed=spot_check.claimed,
        margin=remeasure_stats.MARGIN_ANOTHER_PARTY,
    )
    basis = "both" if published is not None and published.tracked else "remeasurement"
    rows = [{**j.as_dict(), "basis": basis} for j in judgements]
    verdict = remeasure_stats.overall(judgements)
    return {"within": S.WITHIN, "outside": S.OUTSIDE}.get(verdict, S.INCONCLUSIVE), rows


@transaction.atomic
def spotcheck_record_measured(
    *, submission: Submission, actor, concurrency: int, benchmarks: bytes, egress: dict, log: bytes
) -> SpotCheck:
    """Record a GuideLLM run made outside the worker (the demo's, bench/spotcheck_demo_fixture.py) as a finished
    spot-check: the same guard on who, the same import, comparison and challenge rule as the worker's; never
    queued."""
    spot_check = spotcheck_start(submission=submission, actor=actor, concurrency=concurrency, queue=False)
    SPOT_CHECK.take(None, spot_check, "run", fields={"started_at": timezone.now()})
    spot_check.refresh_from_db()
    outcome = measurement_outcome(spot_check, benchmarks=benchmarks, egress=egress, log=log, returncode=0)
    return _finish(spot_check, outcome)


def _challenge_reason(spot_check: SpotCheck) -> str:
    short = [
        f"{line['figure']} claimed {line['claimed']:.4g}, re-measured {line['measured']:.4g} "
        f"(shortfall {line['shortfall']:+.1%}, 95 % interval {line['low']:+.1%} to {line['high']:+.1%}, "
        f"wholly above MLPerf's {line['margin']:.0%} margin)"
        for line in spot_check.comparison
        if line.get("verdict") == remeasure_stats.OUTSIDE
    ]
    return (
        f"Spot-check #{spot_check.pk} re-measured the point at concurrency {spot_check.concurrency} on "
        f"{spot_check.finished_at:%Y-%m-%d} for {spot_check.duration_s} s with GuideLLM: outside MLPerf's margin. "
        + "; ".join(short)
        + ". The raw output is kept as evidence; nothing was changed in the result."
    )


def spotcheck_run(spotcheck_id: int) -> SpotCheck | None:
    """The worker's part: measure, judge, record, and challenge a published result outside the margin. Safe to
    run twice (the `run` row is a compare-and-set from `queued`)."""
    spot_check = SpotCheck.objects.filter(pk=spotcheck_id).select_related("submission").first()
    if spot_check is None or not SPOT_CHECK.state_allows(spot_check, "run"):
        return spot_check
    if not SPOT_CHECK.take(None, spot_check, "run", fields={"started_at": timezone.now()}, quiet=True):
        return spot_check  # another delivery took it
    endpoint = Endpoint.objects.filter(submission_id=spot_check.submission_id).first()
    if endpoint is None:
        outcome = {
            "status": S.ERROR,
            "detail": "The endpoint's declaration is gone.",
            "evidence": [],
            "egress": {},
        }
    else:
        try:
            with tempfile.TemporaryDirectory(prefix="spotcheck-") as tmp:
                outcome = _measure(spot_check, endpoint, Path(tmp))
        except Exception as exc:  # noqa: BLE001 - recorded as the spot-check's error, never left running
            logger.exception("spot-check %s failed", spotcheck_id)
            outcome = {
                "status": S.ERROR,
                "detail": f"{exc.__class__.__name__}: {str(exc)[:500]}",
                "evidence": [],
                "egress": {},
            }
    return _finish(spot_check, outcome)


@transaction.atomic
def _finish(spot_check: SpotCheck, outcome: dict) -> SpotCheck:
    status = outcome.pop("status")
    action = "abandon" if status == S.ERROR else "finish"
    if not SPOT_CHECK.take(
        None,
        spot_check,
        action,
        target=status,
        fields={"finished_at": timezone.now(), **outcome},
        data={
            "submission": spot_check.submission_id,
            "verdict": status,
            "concurrency": spot_check.concurrency,
            "measured": outcome.get("measured"),
            "evidence": {item["name"]: item["sha256"] for item in outcome.get("evidence") or []},
            "detail": str(outcome.get("detail") or "")[:500],
        },
        quiet=True,
    ):
        spot_check.refresh_from_db()
        return spot_check
    spot_check.refresh_from_db()
    publication = spot_check.publication
    published = publication is not None and publication.in_state(Publication.Status.PUBLISHED)
    if status == S.OUTSIDE and published:
        challenge = challenge_raise_remeasured(
            publication=publication,
            reason=_challenge_reason(spot_check),
            data={"spot_check": spot_check.pk, "concurrency": spot_check.concurrency},
        )
        SpotCheck.objects.filter(pk=spot_check.pk).update(challenge=challenge)
        spot_check.challenge = challenge
    if published:
        public_changed_on_commit()  # the result page shows its re-measurements
    return spot_check


def spotchecks_schedule(*, now=None) -> list[int]:
    """The beat's pass (PORTAL_SPOTCHECK_SCHEDULE): one spot-check of each published result whose endpoint stays
    up and that nothing measured for PORTAL_SPOTCHECK_EVERY_DAYS, at its lowest concurrency (the lightest load
    on someone else's service)."""
    if not settings.PORTAL_SPOTCHECK_SCHEDULE:
        return []
    now = now or timezone.now()
    recent = now - timedelta(days=settings.PORTAL_SPOTCHECK_EVERY_DAYS)
    due = (
        Publication.objects.filter(
            Publication.states.q("published"),
            retracted_at__isnull=True,
            submission__endpoint__stays_up=True,
        )
        .exclude(submission__spot_checks__created_at__gte=recent)
        .select_related("submission")
    )
    started = []
    for publication in due:
        points = claim_of(publication.submission).points
        if not points:
            continue
        try:
            spot_check = spotcheck_start(
                submission=publication.submission, actor=None, concurrency=points[0]["concurrency"]
            )
        except ApplicationError as exc:
            logger.info("spot-check of %s not started: %s", publication.public_id, exc.detail)
            continue
        started.append(spot_check.pk)
    return started
