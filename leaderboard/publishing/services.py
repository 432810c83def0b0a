"""Writes of the leaderboard app: choosing when an audited result goes public, the schedule that publishes what
is due (exactly once), challenges and their public resolution (dismissed, annotated, retracted).
Every write records its audit event in its transaction; the submission's status changes only through
the table's `take` (portal.policy)."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db import transaction
from django.utils import timezone

from accounts.selectors import chairs, user_is_chair, user_org_ids
from accounts.services.notifications import notify
from audit.services import audit_event_record
from catalog.cohorts import next_cohort
from checker.judge.verification import curve_with_verification
from leaderboard.models import Annotation, Challenge, Publication, PublicationRevision
from leaderboard.publishing.evidence import evidence_pack_build_annotation, evidence_pack_build_revision
from leaderboard.publishing.extensions import revision_number_next, revision_record
from leaderboard.publishing.names import published_name_like
from leaderboard.publishing.signals import public_changed_on_commit
from leaderboard.publishing.snapshot import snapshot_build
from leaderboard.workflow import CHALLENGE, PUBLICATION, REVISION
from portal.errors import ApplicationError, ConflictError, NotAllowedError
from review import lifecycle
from submissions.models import Submission
from submissions.selectors import check_run_latest

MAX_EMBARGO_DAYS = 60


def _public_id(publication: Publication) -> str:
    return f"EP-{publication.pk:06d}"


@transaction.atomic
def publication_schedule(
    *,
    submission: Submission,
    actor,
    mode: str,
    publish_at: datetime | None = None,
    now: datetime | None = None,
) -> Publication:
    """The submitter chooses: publish now, on a date up to 60 days ahead (embargo), or in the next cohort.
    "now" publishes at once; the others wait for the schedule (publications_publish_due)."""
    now = now or timezone.now()
    submission = Submission.objects.select_for_update().get(pk=submission.pk)
    lifecycle.require(actor, submission, "publish")  # the submitter, on an audited submission
    _require_own_name(submission)
    if mode == Publication.Mode.NOW:
        when = now
    elif mode == Publication.Mode.DATE:
        if publish_at is None or publish_at.tzinfo is None:
            raise ApplicationError("Give the embargo date and time (with a time zone).", code="invalid")
        if publish_at <= now or publish_at > now + timedelta(days=MAX_EMBARGO_DAYS):
            raise ApplicationError(
                f"An embargo ends in the future and at most {MAX_EMBARGO_DAYS} days from now.", code="invalid"
            )
        when = publish_at
    elif mode == Publication.Mode.COHORT:
        when = next_cohort(now)
    else:
        raise ApplicationError(f"Mode must be one of {', '.join(Publication.Mode.values)}.", code="invalid")
    if submission.extends_id is not None:
        return _revision_schedule(submission=submission, actor=actor, mode=mode, when=when, now=now)
    existing = Publication.objects.filter(submission=submission).first()
    if existing is not None and not PUBLICATION.state_allows(existing, "reschedule"):
        raise ConflictError("This result is already published.", code="state-conflict")
    if existing is None:
        publication = Publication.objects.create(
            submission=submission,
            version=submission.submitted_version,
            public_id=f"pending-{submission.pk}",
            mode=mode,
            publish_at=when,
            chosen_by=actor,
        )
        Publication.objects.filter(pk=publication.pk).update(public_id=_public_id(publication))
        publication.refresh_from_db()
    else:  # a new choice replaces the scheduled one (the old choice stays in the audit log)
        PUBLICATION.take(
            actor, existing, "reschedule", fields={"mode": mode, "publish_at": when, "chosen_by": actor}
        )
        publication = existing
    return _scheduled(
        publication,
        "publication.scheduled",
        _publish,
        when=when,
        public_id=publication.public_id,
        actor=actor,
        now=now,
    )


def _require_own_name(submission: Submission) -> None:
    """Refuse a result whose system would pass for another organisation's published one (leaderboard.publishing.names):
    on the public board the first published keeps the name."""
    if submission.extends_id is not None:  # an extension keeps the name its result was published under
        return
    clash = published_name_like(submission.system.name, organisation_id=submission.organisation_id)
    if clash is not None:
        raise ConflictError(
            f"The system name {submission.system.name!r} reads like {clash!r}, a system another organisation has "
            "published: register the system under a name of your own (with your organisation's name in it, for "
            "example) and submit it again.",
            code="system-name-taken",
            extra={"system": submission.system.name, "published_name": clash},
        )


def _revision_schedule(*, submission: Submission, actor, mode: str, when: datetime, now: datetime):
    """An audited extension's publication: the next revision of the result it extends, now or when due."""
    publication = Publication.objects.get(submission_id=submission.extends_id)
    revision = PublicationRevision.objects.filter(submission=submission).first()
    if revision is None:
        revision = PublicationRevision.objects.create(
            publication=publication,
            submission=submission,
            version=submission.submitted_version,
            stack=submission.stack,
            changes=submission.changes or {},
            mode=mode,
            publish_at=when,
            chosen_by=actor,
        )
    else:
        REVISION.take(
            actor, revision, "reschedule", fields={"mode": mode, "publish_at": when, "chosen_by": actor}
        )
    return _scheduled(
        revision,
        "publication.revision_scheduled",
        _publish_revision,
        when=when,
        public_id=publication.public_id,
        actor=actor,
        now=now,
    )


def _scheduled(record, action: str, publish, *, when: datetime, public_id: str, actor, now: datetime):
    """The audit event of a publication's (or a revision's) chosen date, then the publication itself when the
    choice was "now"; the record as it stands after."""
    audit_event_record(
        actor=actor,
        action=action,
        obj=record,
        data={
            "submission": record.submission_id,
            "mode": record.mode,
            "publish_at": when.isoformat(),
            "public_id": public_id,
        },
    )
    if record.mode == Publication.Mode.NOW:
        publish(record, actor=actor, now=now)
        record.refresh_from_db()
    return record


def _publish_revision(revision: PublicationRevision, *, actor, now: datetime) -> bool:
    """Publish an extension as the next revision of its result (caller's transaction): the union curve its check
    judged becomes the result's snapshot; the public id stays."""
    submission = revision.submission
    if not lifecycle.SUBMISSION.state_allows(submission, "publish"):  # withdrawn (or rejected) while waiting
        REVISION.take(None, revision, "cancel", quiet=True)
        return False
    publication = Publication.objects.select_for_update().get(pk=revision.publication_id)
    if publication.is_retracted:
        raise ConflictError(
            "The result was retracted: its extension cannot be published.", code="result-retracted"
        )
    lifecycle.SUBMISSION.take(actor, submission, "publish")
    check_run = check_run_latest(submission.submitted_version)
    curve = curve_with_verification(_curve_of(check_run, submission))
    published = revision_record(
        publication=publication,
        submission=submission,
        check_run=check_run,
        curve=curve,
        headline=headline_of(curve),
        snapshot=snapshot_build(
            submission=submission,
            version=submission.submitted_version,
            check_run=check_run,
            curve=curve,
            number=revision_number_next(publication, submission),
            publication=publication,
        ),
        actor=actor,
        now=now,
    )
    Publication.objects.filter(pk=publication.pk).update(
        curve=published.curve,
        headline=published.headline,
        snapshot=published.snapshot,
        version=published.version,
        check_run=check_run,
    )
    evidence_pack_build_revision(revision=published)
    public_changed_on_commit()
    audit_event_record(
        actor=actor,
        action="publication.revised",
        obj=publication,
        data={
            "submission": submission.pk,
            "public_id": publication.public_id,
            "revision": published.number,
            "version": published.version_id,
            "replaced": [point["concurrency"] for point in published.replaced],
        },
    )
    return True


def _curve_of(check_run, submission: Submission) -> dict:
    """The published curve: the check run's curve of the submission's system and model."""
    curves = (check_run.curves if check_run is not None else None) or []
    for curve in curves:
        if (
            curve.get("system") == submission.system.name
            and curve.get("model") == submission.benchmark.model_id
        ):
            return curve
    return curves[0] if curves else {}


def headline_of(curve: dict) -> dict:
    """What the leaderboard table shows of a curve: peak throughput, best interactivity, the point count, the
    lowest TTFT P90, the best tokens/s/kW (None where no point has the metric)."""
    points = curve.get("points") or []

    def best(key: str, pick=max):
        values = [p[key] for p in points if isinstance(p.get(key), int | float)]
        return pick(values) if values else None

    return {
        "points": len(points),
        "max_system_tps": best("system_tps"),
        "max_tps_per_user": best("tps_per_user"),
        "min_ttft_p90_ms": best("ttft_p90_ms", min),
        "max_system_tps_per_kw": best("system_tps_per_kw"),
        "max_concurrency": best("concurrency"),
    }


def _publish(publication: Publication, *, actor, now: datetime) -> bool:
    """Publish one due publication in the caller's transaction: the lifecycle's compare-and-set makes it once."""
    submission = publication.submission
    if not lifecycle.SUBMISSION.state_allows(submission, "publish"):  # withdrawn (or rejected) while waiting
        PUBLICATION.take(None, publication, "cancel", quiet=True)
        return False
    lifecycle.SUBMISSION.take(actor, submission, "publish")
    check_run = check_run_latest(publication.version)
    curve = curve_with_verification(_curve_of(check_run, submission))
    first = revision_record(
        publication=publication,
        submission=submission,
        check_run=check_run,
        curve=curve,
        headline=headline_of(curve),
        snapshot=snapshot_build(
            submission=submission, version=publication.version, check_run=check_run, curve=curve
        ),
        actor=actor,
        now=now,
    )
    PUBLICATION.take(
        actor,
        publication,
        "publish",
        fields={
            "published_at": now,
            "check_run": check_run,
            "curve": first.curve,
            "headline": first.headline,
            "snapshot": first.snapshot,
        },
        data={
            "submission": submission.pk,
            "public_id": publication.public_id,
            "version": publication.version_id,
        },
    )
    evidence_pack_build_revision(revision=first)
    public_changed_on_commit()  # the public tables and API answers change once this commits
    return True


def publications_publish_due(*, now: datetime | None = None) -> list[str]:
    """The beat task's work: publish every scheduled publication that is due, each exactly once — even with two
    beat processes or a worker killed mid-task (row lock skipped by the other process, compare-and-set on both
    the submission and the publication, all in one transaction: a killed task rolls back and runs again)."""
    now = now or timezone.now()
    published = []
    due = Publication.objects.filter(PUBLICATION.sources_q("publish"), publish_at__lte=now).values_list(
        "pk", flat=True
    )
    for publication_id in list(due):
        with transaction.atomic():
            publication = (
                Publication.objects.select_for_update(skip_locked=True)
                .select_related("submission")
                .filter(PUBLICATION.sources_q("publish"), pk=publication_id)
                .first()
            )
            if publication is None:  # another process holds it or published it
                continue
            if _publish(publication, actor=None, now=now):
                published.append(publication.public_id)
    due_revisions = PublicationRevision.objects.filter(
        REVISION.sources_q("publish"), publish_at__lte=now
    ).values_list("pk", flat=True)
    for revision_id in list(due_revisions):
        with transaction.atomic():
            revision = (
                PublicationRevision.objects.select_for_update(skip_locked=True)
                .select_related("submission", "publication")
                .filter(REVISION.sources_q("publish"), pk=revision_id)
                .first()
            )
            if revision is None:
                continue
            if _publish_revision(revision, actor=None, now=now):
                revision.refresh_from_db()
                published.append(f"{revision.publication.public_id} r{revision.number}")
    return published


# --- After publication --------------------------------------------------------------------------


@transaction.atomic
def challenge_raise(*, publication: Publication, actor, reason: str) -> Challenge:
    """Any organisation member challenges a published result, with a reason."""
    PUBLICATION.require(actor, publication, "challenge")
    organisations = sorted(user_org_ids(actor))  # none for the chair (a re-check's challenge)
    if not (reason or "").strip():
        raise ApplicationError("Say what is wrong with the result.", code="invalid")
    return _challenge_open(
        publication,
        actor=actor,
        organisation_id=organisations[0] if organisations else None,
        reason=reason,
        data={},
        subject=f"{publication.public_id} is challenged",
    )


@transaction.atomic
def challenge_raise_remeasured(*, publication: Publication, reason: str, data: dict) -> Challenge:
    """The portal challenges a published result whose re-measurement fell outside tolerance (a spot-check,
    spotchecks.services): no person and no organisation raised it; the chair resolves it like any other. Nothing
    published changes here."""
    PUBLICATION.require(None, publication, "challenge_remeasured")
    return _challenge_open(
        publication,
        actor=None,
        organisation_id=None,
        reason=reason,
        data={"by": "spot-check", **data},
        subject=f"{publication.public_id} is challenged by a re-measurement",
    )


def _challenge_open(
    publication: Publication, *, actor, organisation_id, reason: str, data: dict, subject: str
) -> Challenge:
    """A challenge judged by its row: written, audited (`challenge.raised`), public on commit, told to the chair."""
    challenge = Challenge.objects.create(
        publication=publication, raised_by=actor, organisation_id=organisation_id, reason=reason.strip()
    )
    audit_event_record(
        actor=actor,
        action="challenge.raised",
        obj=challenge,
        data={"public_id": publication.public_id, **data},
    )
    public_changed_on_commit()  # challenges are public: the result page shows it
    notify(
        users=chairs(),
        kind="challenge.raised",
        subject=subject,
        body=reason.strip()[:2000],
        url=f"/results/{publication.public_id}/",
    )
    return challenge


@transaction.atomic
def challenge_resolve(*, challenge: Challenge, actor, outcome: str, text: str) -> Challenge:
    """The chair resolves a challenge: dismissed, annotated (a public note) or retracted (the result keeps its
    page, marked retracted, and leaves the rankings)."""
    if outcome not in (Challenge.Status.DISMISSED, Challenge.Status.ANNOTATED, Challenge.Status.RETRACTED):
        if not user_is_chair(actor):
            raise NotAllowedError("Only the chair resolves a challenge.")
        raise ApplicationError("Outcome is dismissed, annotated or retracted.", code="invalid")
    if not (text or "").strip():
        CHALLENGE.require(actor, challenge, outcome, reason=text)  # who and when first: then what is missing
        raise ApplicationError("Say why (the resolution is public).", code="invalid")
    publication = challenge.publication
    CHALLENGE.take(  # the chair, on an open challenge
        actor,
        challenge,
        outcome,
        reason=text,
        fields={"resolution": text.strip(), "resolved_by": actor, "resolved_at": timezone.now()},
        data={"public_id": publication.public_id, "resolution": text.strip()},
    )
    if outcome == Challenge.Status.ANNOTATED:
        annotation = Annotation.objects.create(
            publication=publication, challenge=challenge, text=text.strip(), created_by=actor
        )
        evidence_pack_build_annotation(annotation=annotation)
    elif outcome == Challenge.Status.RETRACTED:
        publication_retract(publication=publication, actor=actor, reason=text.strip(), challenge=challenge)
    public_changed_on_commit()  # the resolution is public, whatever the outcome
    notify(
        users=[challenge.raised_by] if challenge.raised_by_id else [],
        kind=f"challenge.{outcome}",
        subject=f"Your challenge of {publication.public_id} was {outcome}",
        body=text.strip()[:2000],
        url=f"/results/{publication.public_id}/",
    )
    return challenge


@transaction.atomic
def publication_retract(
    *, publication: Publication, actor, reason: str, challenge: Challenge | None = None
) -> Publication:
    """Retract a published result: it keeps its page, marked retracted with the reason, and leaves the rankings."""
    PUBLICATION.require(actor, publication, "retract", reason=reason)
    if not (reason or "").strip():
        raise ApplicationError("Say why the result is retracted (the reason is public).", code="invalid")
    if not Publication.objects.filter(
        PUBLICATION.sources_q("retract"), pk=publication.pk, retracted_at__isnull=True
    ).update(retracted_at=timezone.now(), retraction_reason=reason.strip()):
        raise ConflictError("This result is not published, or already retracted.", code="state-conflict")
    publication.refresh_from_db()
    annotation = Annotation.objects.create(
        publication=publication, challenge=challenge, text=f"Retracted: {reason.strip()}", created_by=actor
    )
    evidence_pack_build_annotation(annotation=annotation, retraction=True)
    public_changed_on_commit()
    audit_event_record(
        actor=actor,
        action="publication.retracted",
        obj=publication,
        data={"public_id": publication.public_id, "reason": reason.strip()},
    )
    return publication


@transaction.atomic
def annotation_add(*, publication: Publication, actor, text: str) -> Annotation:
    """The chair adds a public note to a published result."""
    PUBLICATION.require(actor, publication, "annotate")
    if not (text or "").strip():
        raise ApplicationError("An annotation needs a text.", code="invalid")
    annotation = Annotation.objects.create(publication=publication, text=text.strip(), created_by=actor)
    evidence_pack_build_annotation(annotation=annotation)
    public_changed_on_commit()
    audit_event_record(
        actor=actor, action="publication.annotated", obj=annotation, data={"public_id": publication.public_id}
    )
    return annotation
