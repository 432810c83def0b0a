"""Review and audit records: conflicts of interest, assignments, the discussion thread, reviews, waivers,
attestations and evidence requests. The submission's status itself changes only through
the tables' `take` (portal.policy); these rows say who did what on the way.

Attestations and evidence requests live here rather than in audit/: the audit app is the append-only event
log under every app (its core imports none), and an attestation points at a submission version.
"""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q

from portal.states import StatefulModel, States
from portal.visibility import VisibleManager


class Conflict(models.Model):
    """Members of `organisation` may neither review nor see submissions of `other` (and the other way round)."""

    objects = VisibleManager()

    class Kind(models.TextChoices):
        PARTNER = "partner", "Partner"
        COMPETITOR = "competitor", "Competitor"
        SUPPLIER = "supplier", "Supplier"
        OTHER = "other", "Other"

    organisation = models.ForeignKey(
        "accounts.Organisation", on_delete=models.PROTECT, related_name="conflicts"
    )
    other = models.ForeignKey("accounts.Organisation", on_delete=models.PROTECT, related_name="+")
    kind = models.CharField(max_length=16, choices=Kind.choices)
    reason = models.TextField()
    pinned = models.BooleanField(
        default=False, help_text="Declared by the chair: the organisations cannot remove it."
    )
    declared_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["organisation", "other"], name="conflict_unique_pair"),
            models.CheckConstraint(
                condition=~Q(organisation=models.F("other")), name="conflict_two_organisations"
            ),
        ]
        ordering = ["organisation__name", "other__name"]

    def __str__(self) -> str:
        return f"{self.organisation} / {self.other} ({self.kind})"


class ReviewAssignment(StatefulModel, models.Model):
    """A reviewer asked to review a submission: invited -> accepted (or declined), released when the deadline
    passes or the chair takes the assignment back. Assigned reviewers see the submission from `submitted` on."""

    objects = VisibleManager()

    class Status(models.TextChoices):
        INVITED = "invited", "Invited"
        ACCEPTED = "accepted", "Accepted"
        DECLINED = "declined", "Declined"
        RELEASED = "released", "Released"

    ACTIVE_STATUSES = (Status.INVITED, Status.ACCEPTED)
    # Declined by the reviewer or released (by the chair or the schedule): no longer asked to review.
    states = States(Status, active=ACTIVE_STATUSES, ended=(Status.DECLINED, Status.RELEASED))

    submission = models.ForeignKey(
        "submissions.Submission", on_delete=models.PROTECT, related_name="review_assignments"
    )
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="review_assignments"
    )
    organisation = models.ForeignKey(
        "accounts.Organisation",
        on_delete=models.PROTECT,
        related_name="review_assignments",
        help_text="The organisation the reviewer reviews for.",
    )
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.INVITED)
    assigned_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+", null=True, blank=True
    )
    assigned_at = models.DateTimeField(auto_now_add=True)
    due_at = models.DateTimeField(
        help_text="The review is due by then; a reviewer who misses it is released."
    )
    responded_at = models.DateTimeField(null=True, blank=True)
    reason = models.TextField(blank=True, help_text="Why the reviewer declined or was released.")

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["submission", "reviewer"],
                condition=Q(status__in=["invited", "accepted"]),
                name="review_assignment_one_active",
            ),
        ]
        ordering = ["-assigned_at", "-id"]

    def __str__(self) -> str:
        return f"{self.reviewer} reviews #{self.submission_id} ({self.status})"


class Review(models.Model):
    """A reviewer's decision on one version: approve, request changes, or object (with an objection)."""

    objects = VisibleManager()

    class Decision(models.TextChoices):
        APPROVE = "approve", "Approve"
        REQUEST_CHANGES = "request_changes", "Request changes"
        OBJECT = "object", "Object"

    assignment = models.ForeignKey(ReviewAssignment, on_delete=models.PROTECT, related_name="reviews")
    version = models.ForeignKey(
        "submissions.SubmissionVersion", on_delete=models.PROTECT, related_name="reviews"
    )
    decision = models.CharField(max_length=16, choices=Decision.choices)
    body = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["assignment", "version"], name="review_one_per_version"),
        ]
        ordering = ["created_at", "id"]

    def __str__(self) -> str:
        return f"{self.assignment.reviewer}: {self.decision} on v{self.version_id}"


class Comment(StatefulModel, models.Model):
    """One message of a version's thread: a comment, an objection (typed, with an answer deadline) or a reply.

    An objection is open until the submitter answers it (answered), and then the objector or the chair
    resolves or overrules it. Anchors point it at a finding, a load point or a file and line of the bundle."""

    objects = VisibleManager()

    class Kind(models.TextChoices):
        COMMENT = "comment", "Comment"
        OBJECTION = "objection", "Objection"

    class ObjectionType(models.TextChoices):
        COMPLIANCE = "compliance", "Compliance"
        METHODOLOGY = "methodology", "Methodology"
        REPRODUCIBILITY = "reproducibility", "Reproducibility"
        VALIDITY = "validity", "Validity"
        DIVISION_RULES = "division_rules", "Division rules"
        AVAILABILITY = "availability", "Availability"
        SUSPECT = "suspect", "Suspect result"
        COSMETIC = "cosmetic", "Cosmetic"

    class Visibility(models.TextChoices):
        ALL = "all", "Submitter, reviewers and auditors"
        REVIEWERS = "reviewers", "Reviewers and auditors"
        AUDITORS = "auditors", "Auditors only"

    class ObjectionStatus(models.TextChoices):
        OPEN = "open", "Open: waiting for the submitter"
        ANSWERED = "answered", "Answered: waiting for the objector"
        RESOLVED = "resolved", "Resolved"
        OVERRULED = "overruled", "Overruled"

    OPEN_STATUSES = (ObjectionStatus.OPEN, ObjectionStatus.ANSWERED)
    # An objection's state (a plain comment has none): open until resolved or overruled.
    states = States(
        ObjectionStatus,
        field="objection_status",
        open=OPEN_STATUSES,
        waiting_for_submitter=(ObjectionStatus.OPEN,),
    )

    submission = models.ForeignKey(
        "submissions.Submission", on_delete=models.PROTECT, related_name="comments"
    )
    version = models.ForeignKey(
        "submissions.SubmissionVersion", on_delete=models.PROTECT, related_name="comments"
    )
    parent = models.ForeignKey(
        "self", on_delete=models.PROTECT, null=True, blank=True, related_name="replies"
    )
    author = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    kind = models.CharField(max_length=16, choices=Kind.choices, default=Kind.COMMENT)
    objection_type = models.CharField(max_length=24, choices=ObjectionType.choices, blank=True)
    objection_status = models.CharField(max_length=16, choices=ObjectionStatus.choices, blank=True)
    visibility = models.CharField(max_length=16, choices=Visibility.choices, default=Visibility.ALL)
    body = models.TextField()
    # Anchors (all optional): a finding of the version's check, a load point, a file and line of the bundle.
    finding = models.ForeignKey(
        "submissions.Finding", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    point_key = models.CharField(max_length=200, blank=True)
    file = models.CharField(max_length=500, blank=True)
    line = models.PositiveIntegerField(null=True, blank=True)
    answer_due_at = models.DateTimeField(null=True, blank=True)
    reminded_at = models.DateTimeField(null=True, blank=True)
    escalated_at = models.DateTimeField(null=True, blank=True)
    closed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    closed_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "id"]
        indexes = [models.Index(fields=["kind", "objection_status"], name="comment_objection_idx")]

    def __str__(self) -> str:
        return f"{self.kind} #{self.pk} on #{self.submission_id}"

    def clean(self):
        if self.kind == self.Kind.OBJECTION and not self.objection_type:
            raise ValidationError({"objection_type": "An objection needs a type."})
        if self.kind == self.Kind.COMMENT and self.objection_type:
            raise ValidationError({"objection_type": "Only an objection has a type."})


class Waiver(StatefulModel, models.Model):
    """A failing finding (rule, point, file) of one version let through: asked for by the submitter with a
    justification, granted or refused by the chair or an auditor. A waived finding counts as waived, never as
    passed, and stays listed on the submission and the published result."""

    objects = VisibleManager()

    class Status(models.TextChoices):
        REQUESTED = "requested", "Requested"
        GRANTED = "granted", "Granted"
        REFUSED = "refused", "Refused"

    states = States(Status)

    version = models.ForeignKey(
        "submissions.SubmissionVersion", on_delete=models.PROTECT, related_name="waivers"
    )
    rule = models.CharField(max_length=100)
    point = models.CharField(max_length=200, blank=True)
    file = models.TextField(blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.REQUESTED)
    request_reason = models.TextField(blank=True)
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    decision_reason = models.TextField(blank=True)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    decided_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["version", "rule", "point", "file"], name="waiver_one_per_finding"
            ),
        ]
        ordering = ["version_id", "rule", "point", "file"]

    def __str__(self) -> str:
        return f"waiver of {self.rule} {self.point} on v{self.version_id} ({self.status})"


class Attestation(models.Model):
    """An auditor's attestation of the peer-reviewed version: what was checked, in the auditor's words."""

    objects = VisibleManager()

    submission = models.ForeignKey(
        "submissions.Submission", on_delete=models.PROTECT, related_name="attestations"
    )
    version = models.ForeignKey("submissions.SubmissionVersion", on_delete=models.PROTECT, related_name="+")
    auditor = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    notes = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"attestation of #{self.submission_id} by {self.auditor}"


class EvidenceRequest(StatefulModel, models.Model):
    """An auditor's question to the submitter, with a deadline; answered in words, files or a new version."""

    objects = VisibleManager()

    class Status(models.TextChoices):
        OPEN = "open", "Open"
        ANSWERED = "answered", "Answered"
        CLOSED = "closed", "Closed"

    states = States(Status)

    submission = models.ForeignKey(
        "submissions.Submission", on_delete=models.PROTECT, related_name="evidence_requests"
    )
    version = models.ForeignKey("submissions.SubmissionVersion", on_delete=models.PROTECT, related_name="+")
    auditor = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    question = models.TextField()
    due_at = models.DateTimeField()
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.OPEN)
    answer = models.TextField(blank=True)
    answered_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    answered_at = models.DateTimeField(null=True, blank=True)
    reminded_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"evidence request #{self.pk} on #{self.submission_id} ({self.status})"
