"""Who sees which rows: DESIGN.md's visibility table, one queryset per model.

| role | sees |
| anonymous | published results only |
| member of the submitting organisation | all of its own organisation's submissions in every state |
| assigned reviewer without conflict | assigned submissions from `submitted` on; never drafts |
| auditor, chair | every non-draft submission |

Everything hanging off a submission (versions, files, check runs, findings, point metrics) is visible
exactly where the submission is. Whatever a user may not see does not exist for them: a 404, never a 403.
"""

from __future__ import annotations

from collections.abc import Callable

from django.db.models import Exists, Model, OuterRef, Q, QuerySet
from django.http import Http404

from accounts.models import (
    ApiToken,
    GlobalRole,
    Invitation,
    Membership,
    Notification,
    NotificationPreference,
    Organisation,
    SignIn,
    VerifiedAddress,
)
from accounts.selectors import user_is_auditor, user_is_chair, user_org_ids
from audit.models import AuditEvent
from catalog.models import Benchmark
from leaderboard.board.selectors import saved_tenders_visible_to
from leaderboard.models import (
    Annotation,
    Challenge,
    EvidencePack,
    LogCheckpoint,
    LogLeaf,
    Publication,
    PublicationRevision,
    RecheckCampaign,
    RecheckResult,
    SavedTender,
)
from previews.models import Preview
from previews.selectors import previews_visible_to
from review.models import Attestation, Comment, Conflict, EvidenceRequest, Review, ReviewAssignment, Waiver
from review.selectors import organisations_conflicted_with_any
from spotchecks.models import SpotCheck
from submissions.models import (
    CheckOutbox,
    CheckRun,
    Endpoint,
    Finding,
    IdempotencyKey,
    PointMetric,
    Submission,
    SubmissionVersion,
    System,
    SystemDescriptionRevision,
    Upload,
    UploadPart,
    VersionFile,
)


def _signed_in(user) -> bool:
    return user is not None and user.is_authenticated and user.is_active


def _oversees(user) -> bool:
    """Auditors and the chair see every non-draft submission."""
    return user_is_auditor(user) or user_is_chair(user)


# --- Submissions and everything that hangs off one -------------------------------------------


def _organisations_in_conflict_with(organisation_ids: set[int]) -> set[int]:
    """Organisations whose submissions the members of `organisation_ids` may not review (their own excluded)."""
    return organisations_conflicted_with_any(organisation_ids) - set(organisation_ids)


def submissions_visible_to(user) -> QuerySet[Submission]:
    """anonymous: published only; members: all of their organisations' submissions in every state;
    assigned reviewers: their assignments from `submitted` on (never drafts); auditors and the chair:
    every non-draft submission."""
    visible = Submission.states.q("published")
    if _signed_in(user):
        own = user_org_ids(user)
        visible |= Q(organisation_id__in=own)
        if _oversees(user):
            visible |= ~Submission.states.q("draft")
        else:
            # An invited or accepted reviewer, never of a draft, and never across a conflict of interest
            # (a conflict declared after the assignment hides the submission at once).
            assigned = (
                Q(review_assignments__reviewer=user)
                & ReviewAssignment.states.q("active", via="review_assignments")
                & ~Submission.states.q("draft")
            )
            blocked = _organisations_in_conflict_with(own)
            if blocked:
                assigned &= ~Q(organisation_id__in=blocked)
            visible |= assigned
    # A reviewer with several assignment rows would repeat a submission: keep the ids distinct.
    return Submission.objects.select_related("organisation", "system", "benchmark").filter(
        pk__in=Submission.objects.filter(visible).values("pk")
    )


def endpoints_visible_to(user) -> QuerySet[Endpoint]:
    """A declared endpoint (docs/remeasurement.md): the submitting organisation's members, auditors and the chair
    (never of a draft); anyone else only once the result is published and the organisation made it public.
    Reviewers do not see it: measuring is the auditors' part."""
    visible = Q(public=True) & Submission.states.q("published", via="submission")
    if _signed_in(user):
        visible |= Q(submission__organisation_id__in=user_org_ids(user))
        if _oversees(user):
            visible |= ~Submission.states.q("draft", via="submission")
    return Endpoint.objects.filter(visible)


def spotchecks_visible_to(user) -> QuerySet[SpotCheck]:
    """A spot-check (docs/remeasurement.md): auditors and the chair (never of a draft: none exists there), the
    submitting organisation's members; anyone else only a finished re-measurement of a published result's curve
    (`public` states: within, outside, could not reach). Reviewers see only those: measuring is the auditors'
    part. The endpoint's URL inside is shown by endpoint_visible_to's rule, never the credential."""
    visible = SpotCheck.states.q("public") & Publication.states.q("published", via="publication")
    if _signed_in(user):
        visible |= Q(submission__organisation_id__in=user_org_ids(user))
        if _oversees(user):
            visible |= ~Submission.states.q("draft", via="submission")
    return SpotCheck.objects.filter(visible)


def review_submissions_visible_to(user) -> QuerySet[Submission]:
    """Submissions whose review (thread, reviews, files browser, diff) the user may read: the submitting
    organisation's members, the reviewers with an active assignment and no conflict, auditors and the chair;
    never a draft. Publishing makes a result public, not its review."""
    if not _signed_in(user):
        return Submission.objects.none()
    visible = submissions_visible_to(user).exclude(Submission.states.q("draft"))
    if _oversees(user):
        return visible
    own = user_org_ids(user)
    assigned = Q(
        pk__in=ReviewAssignment.objects.filter(ReviewAssignment.states.q("active"), reviewer=user).values(
            "submission_id"
        )
    )
    blocked = _organisations_in_conflict_with(own)
    if blocked:
        assigned &= ~Q(organisation_id__in=blocked)
    return visible.filter(Q(organisation_id__in=own) | assigned)


def versions_visible_to(user) -> QuerySet[SubmissionVersion]:
    return (
        SubmissionVersion.objects.filter(submission__in=submissions_visible_to(user))
        .select_related("submission", "uploader")
        .prefetch_related("files")
    )


def version_files_visible_to(user) -> QuerySet[VersionFile]:
    """Stored files (downloads) are visible wherever their version is."""
    return VersionFile.objects.filter(version__submission__in=submissions_visible_to(user))


def check_runs_visible_to(user) -> QuerySet[CheckRun]:
    return CheckRun.objects.filter(version__submission__in=submissions_visible_to(user)).select_related(
        "version__submission"
    )


def findings_visible_to(user) -> QuerySet[Finding]:
    return Finding.objects.filter(check_run__version__submission__in=submissions_visible_to(user))


def point_metrics_visible_to(user) -> QuerySet[PointMetric]:
    return PointMetric.objects.filter(check_run__version__submission__in=submissions_visible_to(user))


def check_outbox_visible_to(user) -> QuerySet[CheckOutbox]:
    """A run's start message waiting for the broker: visible exactly where its run is."""
    return CheckOutbox.objects.filter(check_run__in=check_runs_visible_to(user))


def uploads_visible_to(user) -> QuerySet[Upload]:
    """Upload sessions are private to the uploading organisation's members (they are never published)."""
    if not _signed_in(user):
        return Upload.objects.none()
    return Upload.objects.filter(submission__organisation_id__in=user_org_ids(user)).select_related(
        "submission__organisation"
    )


def upload_parts_visible_to(user) -> QuerySet[UploadPart]:
    return UploadPart.objects.filter(upload__in=uploads_visible_to(user))


def review_assignments_visible_to(user) -> QuerySet[ReviewAssignment]:
    """A reviewer sees their own assignments of submissions they may see; the submitting organisation sees who
    reviews its submissions (reviews are signed); auditors and the chair see all of them."""
    if not _signed_in(user):
        return ReviewAssignment.objects.none()
    if _oversees(user):
        return ReviewAssignment.objects.all()
    return ReviewAssignment.objects.filter(
        Q(reviewer=user) | Q(submission__organisation_id__in=user_org_ids(user)),
        submission__in=submissions_visible_to(user),
    )


def reviews_visible_to(user) -> QuerySet[Review]:
    """Auditors and the chair: all. The submitting organisation: the reviews of its submissions. A reviewer:
    their own, and the others of a version once they reviewed that version themselves."""
    if not _signed_in(user):
        return Review.objects.none()
    if _oversees(user):
        return Review.objects.all()
    own_versions = Review.objects.filter(assignment__reviewer=user).values("version_id")
    return Review.objects.filter(
        Q(assignment__submission__organisation_id__in=user_org_ids(user))
        | Q(assignment__reviewer=user)
        | Q(version_id__in=own_versions),
        assignment__submission__in=submissions_visible_to(user),
    )


def comments_visible_to(user) -> QuerySet[Comment]:
    """The thread at the levels the user reads (review.selectors.comment_visibilities_for, as two queries):
    the submitting organisation reads `all`; an invited or accepted reviewer `all` and `reviewers`; auditors and
    the chair every level; always only on submissions the user may see."""
    if not _signed_in(user):
        return Comment.objects.none()
    if _oversees(user):
        return Comment.objects.exclude(Submission.states.q("draft", via="submission"))
    assigned = ReviewAssignment.objects.filter(ReviewAssignment.states.q("active"), reviewer=user).values(
        "submission_id"
    )
    readable = Q(visibility=Comment.Visibility.ALL, submission__organisation_id__in=user_org_ids(user)) | Q(
        visibility__in=(Comment.Visibility.ALL, Comment.Visibility.REVIEWERS), submission_id__in=assigned
    )
    return Comment.objects.filter(readable, submission__in=submissions_visible_to(user))


def reviews_of(user, submission: Submission) -> QuerySet[Review]:
    """The reviews of one submission this user reads (reviews_visible_to), with their reviewer and version."""
    return (
        reviews_visible_to(user)
        .filter(assignment__submission=submission)
        .select_related("assignment__reviewer", "assignment__organisation", "version")
    )


def thread_of(user, submission: Submission) -> QuerySet[Comment]:
    """The thread of one submission at the levels this user reads (comments_visible_to), oldest first."""
    return (
        comments_visible_to(user)
        .filter(submission=submission)
        .select_related("author", "version", "finding", "closed_by")
        .order_by("created_at", "pk")
    )


def waivers_visible_to(user) -> QuerySet[Waiver]:
    """Waivers are seen wherever their version is (and, once published, by everyone)."""
    return Waiver.objects.filter(version__submission__in=submissions_visible_to(user))


def attestations_visible_to(user) -> QuerySet[Attestation]:
    return Attestation.objects.filter(submission__in=submissions_visible_to(user))


def evidence_requests_visible_to(user) -> QuerySet[EvidenceRequest]:
    """Between the auditors (and the chair) and the submitting organisation."""
    if not _signed_in(user):
        return EvidenceRequest.objects.none()
    if _oversees(user):
        return EvidenceRequest.objects.exclude(Submission.states.q("draft", via="submission"))
    return EvidenceRequest.objects.filter(submission__organisation_id__in=user_org_ids(user))


def conflicts_visible_to(user) -> QuerySet[Conflict]:
    """The chair and auditors see every declared conflict; an organisation's members see its own."""
    if not _signed_in(user):
        return Conflict.objects.none()
    if _oversees(user):
        return Conflict.objects.select_related("organisation", "other")
    own = user_org_ids(user)
    return Conflict.objects.filter(Q(organisation_id__in=own) | Q(other_id__in=own)).select_related(
        "organisation", "other"
    )


def notifications_visible_to(user) -> QuerySet[Notification]:
    if not _signed_in(user):
        return Notification.objects.none()
    return Notification.objects.filter(user=user)


def notification_preferences_visible_to(user) -> QuerySet[NotificationPreference]:
    if not _signed_in(user):
        return NotificationPreference.objects.none()
    return NotificationPreference.objects.filter(user=user)


def api_tokens_visible_to(user) -> QuerySet[ApiToken]:
    """A user's own API tokens (their digests never leave the server); nobody else's, the chair's included."""
    if not _signed_in(user):
        return ApiToken.objects.none()
    return ApiToken.objects.filter(user=user)


# --- Systems -----------------------------------------------------------------------------------


def systems_visible_to(user) -> QuerySet[System]:
    """Systems of the user's own organisations; auditors and the chair see all of them; everyone (anonymous
    included) sees the systems of published results."""
    systems = System.objects.select_related("organisation")
    if _signed_in(user) and _oversees(user):
        return systems.all()
    published = Exists(Submission.objects.filter(Submission.states.q("published"), system_id=OuterRef("pk")))
    return systems.filter(Q(organisation_id__in=user_org_ids(user)) | Q(published))


def system_description_revisions_visible_to(user) -> QuerySet[SystemDescriptionRevision]:
    return SystemDescriptionRevision.objects.filter(system__in=systems_visible_to(user))


# --- People, the catalog, the audit log --------------------------------------------------------


def organisations_visible_to(user) -> QuerySet[Organisation]:
    """Organisation names are public: they sign the published results."""
    return Organisation.objects.all()


def memberships_visible_to(user) -> QuerySet[Membership]:
    """Members see the memberships of their own organisations; auditors and the chair all of them."""
    if not _signed_in(user):
        return Membership.objects.none()
    if _oversees(user):
        return Membership.objects.all()
    return Membership.objects.filter(organisation_id__in=user_org_ids(user))


def global_roles_visible_to(user) -> QuerySet[GlobalRole]:
    if not _signed_in(user):
        return GlobalRole.objects.none()
    if user_is_chair(user):
        return GlobalRole.objects.all()
    return GlobalRole.objects.filter(user=user)


def invitations_visible_to(user) -> QuerySet[Invitation]:
    """An organisation's invitations: its admins and the chair (the invitee holds the link, not a row)."""
    if not _signed_in(user):
        return Invitation.objects.none()
    if user_is_chair(user):
        return Invitation.objects.all()
    return Invitation.objects.filter(
        organisation_id__in=user_org_ids(user, roles=(Membership.Role.ORG_ADMIN,))
    )


def sign_ins_visible_to(user) -> QuerySet[SignIn]:
    """Each user sees their own sign-ins (when, from where, with what), nobody else's."""
    if not _signed_in(user):
        return SignIn.objects.none()
    return SignIn.objects.filter(user=user)


def verified_addresses_visible_to(user) -> QuerySet[VerifiedAddress]:
    """Each user sees the addresses they confirmed, nobody else's."""
    if not _signed_in(user):
        return VerifiedAddress.objects.none()
    return VerifiedAddress.objects.filter(user=user)


def benchmarks_visible_to(user) -> QuerySet[Benchmark]:
    """The benchmark catalog is public."""
    return Benchmark.objects.all()


def audit_events_visible_to(user) -> QuerySet[AuditEvent]:
    """The full log for auditors and the chair; nothing for anyone else (later: per-object history)."""
    if _signed_in(user) and _oversees(user):
        return AuditEvent.objects.select_related("actor", "true_actor").order_by("-sequence")
    return AuditEvent.objects.none()


def idempotency_keys_visible_to(user) -> QuerySet[IdempotencyKey]:
    if not _signed_in(user):
        return IdempotencyKey.objects.none()
    return IdempotencyKey.objects.filter(user=user)


# --- Publications -------------------------------------------------------------------------------


def publications_visible_to(user) -> QuerySet[Publication]:
    """Published records are public (retracted ones included: they keep their page); a scheduled one is seen
    wherever its submission is (the submitter, auditors, the chair), never by the public before it is due."""
    published = Publication.states.q("published")
    if not _signed_in(user):
        return Publication.objects.filter(published)
    return Publication.objects.filter(published | Q(submission__in=submissions_visible_to(user)))


def publication_revisions_visible_to(user) -> QuerySet[PublicationRevision]:
    """A published revision is public (its result's history); a scheduled one is seen wherever its extension is:
    the new points of an extension never show before it is published, though the result it extends is public."""
    published = PublicationRevision.states.q("published")
    if not _signed_in(user):
        return PublicationRevision.objects.filter(published)
    return PublicationRevision.objects.filter(published | Q(submission__in=submissions_visible_to(user)))


def challenges_visible_to(user) -> QuerySet[Challenge]:
    """Public: a challenge is raised against a published result only, and the chair resolves it in public, so
    every visitor (anonymous included) reads a result's challenges, who raised them and their resolutions on its
    page (retracted results keep their page, and so their challenges)."""
    return Challenge.objects.filter(Publication.states.q("published", via="publication"))


def recheck_campaigns_visible_to(user) -> QuerySet[RecheckCampaign]:
    """The chair's: re-checks of what is published (leaderboard.publishing.rechecks)."""
    return (
        RecheckCampaign.objects.all()
        if _signed_in(user) and user_is_chair(user)
        else RecheckCampaign.objects.none()
    )


def recheck_results_visible_to(user) -> QuerySet[RecheckResult]:
    """The chair's, with the campaigns they belong to."""
    return (
        RecheckResult.objects.all()
        if _signed_in(user) and user_is_chair(user)
        else RecheckResult.objects.none()
    )


def annotations_visible_to(user) -> QuerySet[Annotation]:
    """Public notes on published results."""
    return Annotation.objects.filter(publication__in=publications_visible_to(user))


def evidence_packs_visible_to(user) -> QuerySet[EvidencePack]:
    """Packs of published results: a pack is built only when its fact is published (docs/evidence.md)."""
    return EvidencePack.objects.filter(publication__in=publications_visible_to(None))


def log_leaves_visible_to(user) -> QuerySet[LogLeaf]:
    """The public log holds public facts only: every leaf is public."""
    return LogLeaf.objects.all()


def log_checkpoints_visible_to(user) -> QuerySet[LogCheckpoint]:
    """Every signed checkpoint of the public log is public."""
    return LogCheckpoint.objects.all()


# --- One entry per model -----------------------------------------------------------------------

VISIBLE_TO: dict[type[Model], Callable[[object], QuerySet]] = {
    Organisation: organisations_visible_to,
    Membership: memberships_visible_to,
    GlobalRole: global_roles_visible_to,
    Benchmark: benchmarks_visible_to,
    System: systems_visible_to,
    SystemDescriptionRevision: system_description_revisions_visible_to,
    Submission: submissions_visible_to,
    SubmissionVersion: versions_visible_to,
    VersionFile: version_files_visible_to,
    Upload: uploads_visible_to,
    UploadPart: upload_parts_visible_to,
    CheckRun: check_runs_visible_to,
    CheckOutbox: check_outbox_visible_to,
    Finding: findings_visible_to,
    Endpoint: endpoints_visible_to,
    PointMetric: point_metrics_visible_to,
    IdempotencyKey: idempotency_keys_visible_to,
    ReviewAssignment: review_assignments_visible_to,
    Review: reviews_visible_to,
    Comment: comments_visible_to,
    Waiver: waivers_visible_to,
    Attestation: attestations_visible_to,
    EvidenceRequest: evidence_requests_visible_to,
    Conflict: conflicts_visible_to,
    Notification: notifications_visible_to,
    Publication: publications_visible_to,
    PublicationRevision: publication_revisions_visible_to,
    Challenge: challenges_visible_to,
    Annotation: annotations_visible_to,
    EvidencePack: evidence_packs_visible_to,
    LogLeaf: log_leaves_visible_to,
    LogCheckpoint: log_checkpoints_visible_to,
    RecheckCampaign: recheck_campaigns_visible_to,
    RecheckResult: recheck_results_visible_to,
    NotificationPreference: notification_preferences_visible_to,
    Invitation: invitations_visible_to,
    SpotCheck: spotchecks_visible_to,  # docs/remeasurement.md
    Preview: previews_visible_to,  # its organisation's members only, like a draft, forever (docs/previews.md)
    SavedTender: saved_tenders_visible_to,  # its organisation's while private, everyone's once shared
    SignIn: sign_ins_visible_to,
    VerifiedAddress: verified_addresses_visible_to,
    AuditEvent: audit_events_visible_to,
    ApiToken: api_tokens_visible_to,
}


def visible_to(user, model: type[Model]) -> QuerySet:
    """The rows of `model` the user may see (a LookupError for a model the table forgot: never all rows)."""
    try:
        rule = VISIBLE_TO[model]
    except KeyError:
        raise LookupError(
            f"No visibility rule for {model._meta.label}: add one to access.visibility."
        ) from None
    return rule(user)


def get_visible_or_404(user, model: type[Model], **lookup) -> Model:
    """One row the user may see, or Http404 whether it is hidden or missing (never a 403 that leaks it)."""
    try:
        return visible_to(user, model).get(**lookup)
    except model.DoesNotExist:
        raise Http404(f"No such {model._meta.verbose_name}.") from None
