"""Re-checks of what is published when the checker or a rule set changes version (docs/uploads-and-checks.md,
"Re-checks after a rule change").

  recheck_campaign_start     the chair (or the beat schedule, with PORTAL_RECHECK_AUTOMATIC) starts a campaign:
                             one new check run (purpose `recheck`) per published revision, through the same
                             pipeline and queues as every check (unpack, point, judge);
  recheck_campaign_report    when a campaign's last run ends (its own step, through submissions.signals), writes
                             each result's changes against the run the revision was published with and moves it
                             to `reported`; recheck_campaigns_advance (beat, every minute) is the safety net;
  recheck_result_decide      the chair decides per result: no action, a public annotation, or a challenge.

A re-check run is never a version's current run (submissions.selectors.check_run_latest reads `submission` runs
only) and nothing here writes a publication, a revision or their snapshot: what is published changes only through
the chair's decision, and then only through the annotation and challenge services. Every step is audited.
"""

from __future__ import annotations

import math
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from accounts.selectors import chairs, user_is_chair
from accounts.services.notifications import notify
from audit.services import audit_event_record
from checker.version import __version__ as checker_version
from leaderboard.models import Publication, PublicationRevision, RecheckCampaign, RecheckResult
from leaderboard.publishing.services import annotation_add, challenge_raise
from leaderboard.workflow import RECHECK_CAMPAIGN, RECHECK_RESULT
from portal.errors import ApplicationError, ConflictError, NotAllowedError
from review.selectors import check_verdict
from submissions.checks.queue import check_run_create
from submissions.models import CheckRun, Finding, PointMetric, SubmissionVersion

SEVERITY_RANK = {"info": 0, "warning": 1, "error": 2}
# Two recomputed values differ when they differ by more than floating-point rounding.
METRIC_RELATIVE_TOLERANCE = 1e-9
RULESET_IN_MESSAGES = "the rule set"


# --- what is re-checked --------------------------------------------------------------------------


def _published_revisions():
    """Every published revision of a result that is published and not retracted (a retracted result left the
    rankings; its page keeps what it was retracted for)."""
    return (
        PublicationRevision.objects.filter(
            PublicationRevision.states.q("published"),
            Publication.states.q("published", via="publication"),
            publication__retracted_at__isnull=True,
        )
        .select_related("publication", "check_run", "version__submission__benchmark")
        .order_by("publication_id", "number", "id")
    )


def _is_current(revision: PublicationRevision) -> bool:
    """The revision's published run was made by this checker with its benchmark's rule set of now."""
    run = revision.check_run
    benchmark = revision.version.submission.benchmark
    return (
        run is not None
        and run.checker_version == checker_version
        and run.ruleset == benchmark.ruleset_version
    )


def recheck_targets(*, everything: bool = False) -> list[PublicationRevision]:
    """The published revisions a campaign re-checks: those published by another checker version or rule set than
    their benchmark's now and not re-checked on those yet (every one with `everything`)."""
    return [r for r in _published_revisions() if everything or not (_is_current(r) or _already_rechecked(r))]


def _already_rechecked(revision: PublicationRevision) -> bool:
    """A campaign already re-checked (or is re-checking) this revision with the checker and rule set of now."""
    return RecheckResult.objects.filter(
        revision=revision,
        campaign__checker_version=checker_version,
        ruleset=revision.version.submission.benchmark.ruleset_version,
    ).exists()


# --- starting ------------------------------------------------------------------------------------


@transaction.atomic
def recheck_campaign_start(*, actor, reason: str = "", everything: bool = False) -> RecheckCampaign:
    """Start a re-check of the published revisions (`actor` the chair; None for the beat schedule). One campaign
    runs at a time; with nothing out of date (and not `everything`) there is nothing to start."""
    if actor is not None and not user_is_chair(actor):
        raise NotAllowedError("Only the chair starts a re-check of the published results.")
    # One campaign at a time: the lock makes two concurrent starts queue behind each other.
    list(RecheckCampaign.objects.select_for_update().filter(RecheckCampaign.states.q("running")))
    running = RecheckCampaign.objects.filter(RecheckCampaign.states.q("running")).first()
    if running is not None:
        raise ConflictError(
            f"Re-check #{running.pk} is still running: wait for its report.", code="recheck-running"
        )
    targets = recheck_targets(everything=everything)
    if not targets:
        raise ApplicationError(
            f"Every published revision was checked (or re-checked) by checker {checker_version} with its "
            "benchmark's current rule set: there is nothing to re-check (ask for every revision to re-check "
            "them anyway).",
            code="recheck-nothing",
        )
    rulesets = {
        r.version.submission.benchmark.model_id: r.version.submission.benchmark.ruleset_version
        for r in targets
    }
    campaign = RecheckCampaign.objects.create(
        checker_version=checker_version, rulesets=rulesets, started_by=actor, reason=(reason or "").strip()
    )
    for revision in targets:
        run = check_run_create(version=revision.version, actor=actor, purpose=CheckRun.Purpose.RECHECK)
        RecheckResult.objects.create(
            campaign=campaign,
            publication=revision.publication,
            revision=revision,
            published_run=revision.check_run,
            check_run=run,
            ruleset=run.ruleset,
        )
    audit_event_record(
        actor=actor,
        action="recheck.started",
        obj=campaign,
        data={
            "checker_version": checker_version,
            "rulesets": rulesets,
            "revisions": [f"{r.publication.public_id} r{r.number}" for r in targets],
            "automatic": actor is None,
            "reason": campaign.reason,
        },
    )
    return campaign


def recheck_start_if_due() -> int | None:
    """The beat schedule's start (PORTAL_RECHECK_AUTOMATIC on): a campaign when a published revision is out of
    date and no campaign re-checked it on the versions of now. Returns the campaign's id, or None."""
    if not settings.PORTAL_RECHECK_AUTOMATIC:
        return None
    if RecheckCampaign.objects.filter(RecheckCampaign.states.q("running")).exists():
        return None
    if not recheck_targets():
        return None
    try:
        return recheck_campaign_start(actor=None, reason="the checker or a rule set changed version").pk
    except (ConflictError, ApplicationError):
        return None  # another start won, or nothing left


# --- the report ----------------------------------------------------------------------------------


def _findings_by_key(run: CheckRun | None) -> dict[tuple[str, str], dict[str, Any]]:
    """(rule, point) -> the worst severity and the messages of the run's findings with that key."""
    out: dict[tuple[str, str], dict[str, Any]] = {}
    if run is None:
        return out
    for rule, point, severity, message in Finding.objects.filter(check_run=run).values_list(
        "rule", "point", "severity", "message"
    ):
        # A message naming the run's own rule set is the same message under another one.
        message = message.replace(run.ruleset, RULESET_IN_MESSAGES) if run.ruleset else message
        entry = out.setdefault((rule, point), {"severity": severity, "messages": []})
        if SEVERITY_RANK.get(severity, 0) > SEVERITY_RANK.get(entry["severity"], 0):
            entry["severity"] = severity
        if message not in entry["messages"]:
            entry["messages"].append(message)
    for entry in out.values():
        entry["messages"].sort()
    return out


def _flat(value: Any, prefix: str = "") -> dict[str, float]:
    """The numeric leaves of a metrics document, by dotted path."""
    out: dict[str, float] = {}
    if isinstance(value, dict):
        for key, item in value.items():
            out.update(_flat(item, f"{prefix}{key}."))
    elif isinstance(value, bool):
        pass
    elif isinstance(value, int | float):
        out[prefix.rstrip(".")] = float(value)
    return out


def _differs(old: float | None, new: float | None) -> bool:
    if old is None or new is None:
        return old is not new
    if math.isnan(old) or math.isnan(new):
        return math.isnan(old) != math.isnan(new)
    return abs(old - new) > METRIC_RELATIVE_TOLERANCE * max(abs(old), abs(new), 1e-300)


def _metrics_by_point(run: CheckRun | None) -> dict[str, dict[str, float]]:
    if run is None:
        return {}
    return {
        key: _flat(recomputed)
        for key, recomputed in PointMetric.objects.filter(check_run=run).values_list("key", "recomputed")
    }


def recheck_changes(
    published: CheckRun | None, rechecked: CheckRun, *, version: SubmissionVersion | None = None
) -> dict[str, Any]:
    """What the re-check changed against the published run: the verdict, the findings new, gone and changed (by
    rule and point: severity or message), and the recomputed metrics that moved, per point (old, new). The verdict
    reads as everywhere else (review.selectors.check_verdict): a run whose every error the chair waived for the
    `version` is "passed with N waived", not "failed"."""
    old, new = _findings_by_key(published), _findings_by_key(rechecked)

    def row(key, entry, **more):
        return {
            "rule": key[0],
            "point": key[1],
            "severity": entry["severity"],
            "messages": entry["messages"],
            **more,
        }

    findings_new = [row(k, new[k]) for k in sorted(new.keys() - old.keys())]
    findings_gone = [row(k, old[k]) for k in sorted(old.keys() - new.keys())]
    findings_changed = [
        row(k, new[k], old_severity=old[k]["severity"], old_messages=old[k]["messages"])
        for k in sorted(old.keys() & new.keys())
        if old[k] != new[k]
    ]
    old_metrics, new_metrics = _metrics_by_point(published), _metrics_by_point(rechecked)
    verdict_before = check_verdict(version, published) if published is not None else {}
    verdict_after = check_verdict(version, rechecked)
    metrics = []
    for point in sorted(old_metrics.keys() | new_metrics.keys()):
        before, after = old_metrics.get(point, {}), new_metrics.get(point, {})
        moved = {
            name: [before.get(name), after.get(name)]
            for name in sorted(before.keys() | after.keys())
            if _differs(before.get(name), after.get(name))
        }
        if moved or (point in old_metrics) != (point in new_metrics):
            metrics.append(
                {"point": point, "present": [point in old_metrics, point in new_metrics], "changed": moved}
            )
    return {
        "verdict": [verdict_before.get("label", ""), verdict_after["label"]],
        "verdict_status": [verdict_before.get("status", ""), verdict_after["status"]],
        "checker_version": [
            published.checker_version if published is not None else "",
            rechecked.checker_version,
        ],
        "ruleset": [published.ruleset if published is not None else "", rechecked.ruleset],
        "findings": {"new": findings_new, "gone": findings_gone, "changed": findings_changed},
        "metrics": metrics,
        "changed": bool(
            findings_new
            or findings_gone
            or findings_changed
            or metrics
            or (published is None or not published.in_state(rechecked.status))
        ),
    }


def recheck_campaign_report(campaign_id: int) -> bool:
    """Write the report of a running campaign whose runs all ended (each result's changes) and move it to
    `reported`, exactly once (the row lock: the last run's own step and the beat's pass may race). False while a
    run is unfinished, or when another pass reported it."""
    with transaction.atomic():
        campaign = (
            RecheckCampaign.objects.select_for_update()
            .filter(RecheckCampaign.states.q("running"), pk=campaign_id)
            .first()
        )
        if campaign is None:
            return False  # reported already
        results = list(campaign.results.select_related("published_run", "check_run", "revision__version"))
        if any(not result.check_run.in_state("finished") for result in results):
            return False
        changed = 0
        for result in results:
            changes = recheck_changes(result.published_run, result.check_run, version=result.revision.version)
            changed += bool(changes["changed"])
            RecheckResult.objects.filter(pk=result.pk).update(changes=changes)
        summary = {"results": len(results), "changed": changed, "unchanged": len(results) - changed}
        RECHECK_CAMPAIGN.take(
            None, campaign, "report", fields={"reported_at": timezone.now(), "summary": summary}, data=summary
        )
        notify(
            users=chairs(),
            kind="recheck.reported",
            subject=f"Re-check #{campaign.pk}: {changed} of {len(results)} published results changed",
            body="Decide per result: no action, annotate, or open a challenge.",
            url=f"/review/chair/rechecks/?campaign={campaign.pk}",
        )
    return True


def recheck_run_ended(sender, *, check_run: CheckRun, **kwargs) -> None:
    """submissions.signals.check_run_ended's receiver: the last run of a campaign reports it, once its own
    transaction committed (the beat's recheck_campaigns_advance is only the safety net)."""
    if check_run.purpose != CheckRun.Purpose.RECHECK:
        return
    campaign_id = (
        RecheckResult.objects.filter(check_run=check_run).values_list("campaign_id", flat=True).first()
    )
    if campaign_id is not None:
        transaction.on_commit(lambda: recheck_campaign_report(campaign_id))


def recheck_campaigns_advance() -> list[int]:
    """The beat schedule's safety net: every running campaign whose runs all ended and whose report was not
    written by its last run (a worker lost between the run's end and the report) gets it. Returns those reported."""
    running = RecheckCampaign.objects.filter(RecheckCampaign.states.q("running")).order_by("pk")
    return [pk for pk in running.values_list("pk", flat=True) if recheck_campaign_report(pk)]


# --- the chair's decisions -----------------------------------------------------------------------

DECISIONS = {
    "no_action": RecheckResult.Status.NO_ACTION,
    "annotate": RecheckResult.Status.ANNOTATED,
    "challenge": RecheckResult.Status.CHALLENGED,
}


@transaction.atomic
def recheck_result_decide(*, result: RecheckResult, actor, decision: str, reason: str) -> RecheckResult:
    """The chair's decision on one result of a reported re-check, with a reason: `no_action`, `annotate` (the
    reason becomes a public annotation of the result) or `challenge` (a challenge of the result, raised by the
    chair, resolved like any other). Audited; a second decision on the same result is a 409."""
    if decision not in DECISIONS:
        if not user_is_chair(actor):
            raise NotAllowedError("Only the chair decides on a re-check's results.")
        raise ApplicationError("Decide no_action, annotate or challenge.", code="invalid")
    reason = (reason or "").strip()
    RECHECK_RESULT.take(  # first: the annotation or challenge it makes is the decided result's
        actor,
        result,
        decision,
        reason=reason,
        fields={"reason": reason, "decided_by": actor, "decided_at": timezone.now()},
        data={
            "campaign": result.campaign_id,
            "public_id": result.publication.public_id,
            "revision": result.revision.number,
            "decision": str(DECISIONS[decision]),
        },
    )
    made: dict[str, Any] = {}
    if decision == "annotate":
        made["annotation"] = annotation_add(
            publication=result.publication, actor=actor, text=f"Re-checked with {result.ruleset}: {reason}"
        )
    elif decision == "challenge":
        made["challenge"] = challenge_raise(
            publication=result.publication,
            actor=actor,
            reason=f"Re-check #{result.campaign_id} with {result.ruleset}: {reason}",
        )
    if made:
        RecheckResult.objects.filter(pk=result.pk).update(**made)
        for name, value in made.items():
            setattr(result, name, value)
    return result


def campaign_results(campaign: RecheckCampaign):
    return campaign.results.select_related(
        "publication", "revision", "check_run", "published_run", "decided_by"
    ).order_by("publication__public_id", "revision__number")


def campaigns_recent(limit: int = 20):
    return RecheckCampaign.objects.select_related("started_by").order_by("-created_at", "-id")[:limit]


def results_pending_q() -> Q:
    return RecheckResult.states.q("pending")
