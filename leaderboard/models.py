"""Publications and what follows them: the public record of an audited result (a stable public id, the version
published, when and how), challenges by other organisations, public annotations and retractions.

A publication's snapshot changes only when a published extension makes its next revision (docs/extensions.md), and
every revision keeps what it published (PublicationRevision); a challenge ends in a dismissal, a public annotation or
a retraction (the result keeps its page, marked retracted, and leaves the rankings), never in a silent edit.
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models

from leaderboard.publishing.record import PublishedRecord
from portal.states import StatefulModel, States
from portal.visibility import VisibleManager


class Publication(StatefulModel, models.Model):
    """When and how an audited submission becomes public, and its public record once it is."""

    objects = VisibleManager()

    class Mode(models.TextChoices):
        NOW = "now", "Now"
        DATE = "date", "On a date (embargo)"
        COHORT = "cohort", "In the next cohort"

    class Status(models.TextChoices):
        SCHEDULED = "scheduled", "Scheduled"
        PUBLISHED = "published", "Published"
        CANCELLED = "cancelled", "Cancelled"

    states = States(Status)

    submission = models.OneToOneField(
        "submissions.Submission", on_delete=models.PROTECT, related_name="publication"
    )
    version = models.ForeignKey(
        "submissions.SubmissionVersion",
        on_delete=models.PROTECT,
        related_name="+",
        help_text="The audited version: what is published, forever.",
    )
    public_id = models.CharField(max_length=32, unique=True, help_text="Stable public id, e.g. EP-000042.")
    mode = models.CharField(max_length=16, choices=Mode.choices)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.SCHEDULED)
    publish_at = models.DateTimeField(help_text="When it becomes public (due from then on).")
    published_at = models.DateTimeField(null=True, blank=True)
    chosen_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    retracted_at = models.DateTimeField(null=True, blank=True)
    retraction_reason = models.TextField(blank=True)
    # A snapshot taken when published (and when an extension publishes the next revision: `version` and `check_run`
    # are then the newest revision's), so public pages read one row per result: the check run the numbers come
    # from, its curve (points with official metrics, Pareto fronts, step vertices; checker.recompute.curve.build_curves)
    # and the headline figures the leaderboard table shows.
    check_run = models.ForeignKey(
        "submissions.CheckRun", on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    curve = models.JSONField(default=dict, blank=True)
    headline = models.JSONField(default=dict, blank=True)
    snapshot = models.JSONField(
        default=dict,
        blank=True,
        help_text="The published record beside the curve (leaderboard.publishing.snapshot): system, organisation, "
        "description, verification level, check verdict and provenance, frozen when published.",
    )

    class Meta:
        ordering = ["-published_at", "-id"]
        indexes = [
            models.Index(fields=["status", "publish_at"], name="publication_due_idx"),
            models.Index(fields=["status", "retracted_at"], name="publication_ranked_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.public_id} ({self.status})"

    @property
    def is_retracted(self) -> bool:
        return self.retracted_at is not None

    @property
    def record(self) -> PublishedRecord:
        """The frozen record public pages read (never the live system)."""
        return PublishedRecord(self.snapshot)


class Challenge(StatefulModel, models.Model):
    """An organisation member (or the chair, or the portal after a spot-check outside tolerance) questions a
    published result; the chair resolves it in public."""

    objects = VisibleManager()

    class Status(models.TextChoices):
        OPEN = "open", "Open"
        DISMISSED = "dismissed", "Dismissed"
        ANNOTATED = "annotated", "Annotated"
        RETRACTED = "retracted", "Retracted"

    states = States(Status)

    publication = models.ForeignKey(Publication, on_delete=models.PROTECT, related_name="challenges")
    raised_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="+",
        help_text="Empty: the portal raised it (a spot-check outside tolerance, spotchecks.services).",
    )
    organisation = models.ForeignKey(
        "accounts.Organisation",
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="+",
        help_text="The challenger's organisation (empty: the chair opened it, e.g. after a re-check).",
    )
    reason = models.TextField()
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.OPEN)
    resolution = models.TextField(blank=True)
    resolved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    resolved_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"challenge #{self.pk} of {self.publication.public_id} ({self.status})"


class Annotation(models.Model):
    """A public note on a published result (from a challenge's resolution, or a retraction's reason)."""

    objects = VisibleManager()

    publication = models.ForeignKey(Publication, on_delete=models.PROTECT, related_name="annotations")
    challenge = models.ForeignKey(
        Challenge, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    text = models.TextField()
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "id"]

    def __str__(self) -> str:
        return f"note on {self.publication.public_id}"


class PublicationRevision(StatefulModel, models.Model):
    """One revision of a published result: revision 1 is its first publication, each published extension the next
    (docs/extensions.md). It keeps what that revision published, forever: the version (bundle hashes), the check
    run, the union curve with every point's revision and stack, the points it replaced, and when."""

    objects = VisibleManager()

    class Status(models.TextChoices):
        SCHEDULED = "scheduled", "Scheduled"
        PUBLISHED = "published", "Published"
        CANCELLED = "cancelled", "Cancelled"

    states = States(Status)

    publication = models.ForeignKey(Publication, on_delete=models.PROTECT, related_name="revisions")
    submission = models.OneToOneField(
        "submissions.Submission", on_delete=models.PROTECT, related_name="publication_revision"
    )
    number = models.PositiveIntegerField(null=True, blank=True, help_text="Given when published: 1, 2, 3...")
    version = models.ForeignKey("submissions.SubmissionVersion", on_delete=models.PROTECT, related_name="+")
    check_run = models.ForeignKey(
        "submissions.CheckRun", on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    stack = models.CharField(max_length=200, blank=True)
    changes = models.JSONField(default=dict, blank=True)
    mode = models.CharField(max_length=16, choices=Publication.Mode.choices, default=Publication.Mode.NOW)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.SCHEDULED)
    publish_at = models.DateTimeField()
    published_at = models.DateTimeField(null=True, blank=True)
    chosen_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    curve = models.JSONField(default=dict, blank=True, help_text="The union curve this revision published.")
    headline = models.JSONField(default=dict, blank=True)
    snapshot = models.JSONField(
        default=dict,
        blank=True,
        help_text="The published record of this revision (leaderboard.publishing.snapshot).",
    )
    replaced = models.JSONField(
        default=list,
        blank=True,
        help_text="The published points this revision re-measured: concurrency, the revision they came from and "
        "their metrics, next to the new ones.",
    )

    class Meta:
        ordering = ["publication_id", "number", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["publication", "number"], name="publication_revision_unique_number"
            )
        ]
        indexes = [models.Index(fields=["status", "publish_at"], name="publication_revision_due_idx")]

    def __str__(self) -> str:
        return f"{self.publication.public_id} r{self.number or '?'} ({self.status})"

    @property
    def public_id(self) -> str:
        return self.publication.public_id

    @property
    def record(self) -> PublishedRecord:
        return PublishedRecord(self.snapshot)


class RecheckCampaign(StatefulModel, models.Model):
    """A re-check of every published revision with the checker and rule sets of now (leaderboard.publishing.rechecks): started
    by the chair, or by the beat schedule when PORTAL_RECHECK_AUTOMATIC is on; `reported` once every run ended and
    each result's changes are written. Nothing published changes: the chair decides per result."""

    objects = VisibleManager()

    class Status(models.TextChoices):
        RUNNING = "running", "Running"
        REPORTED = "reported", "Reported"

    states = States(Status)

    status = models.CharField(max_length=16, choices=Status.choices, default=Status.RUNNING)
    checker_version = models.CharField(
        max_length=50, help_text="The checker the revisions are re-checked with."
    )
    rulesets = models.JSONField(
        default=dict,
        blank=True,
        help_text="Benchmark model id -> the rule set its revisions are re-checked with.",
    )
    started_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="+",
        help_text="The chair who started it (empty: the beat schedule).",
    )
    reason = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    reported_at = models.DateTimeField(null=True, blank=True)
    summary = models.JSONField(
        default=dict, blank=True, help_text="Counts of the report, written when reported."
    )

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"re-check #{self.pk} ({self.status})"


class RecheckResult(StatefulModel, models.Model):
    """One published revision in a re-check: its new run, what changed against the run it was published with, and
    the chair's decision (no action, a public annotation, or a challenge), with the reason."""

    objects = VisibleManager()

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        NO_ACTION = "no_action", "No action"
        ANNOTATED = "annotated", "Annotated"
        CHALLENGED = "challenged", "Challenged"

    states = States(Status, decided=(Status.NO_ACTION, Status.ANNOTATED, Status.CHALLENGED))

    campaign = models.ForeignKey(RecheckCampaign, on_delete=models.PROTECT, related_name="results")
    publication = models.ForeignKey(Publication, on_delete=models.PROTECT, related_name="+")
    revision = models.ForeignKey(PublicationRevision, on_delete=models.PROTECT, related_name="+")
    published_run = models.ForeignKey(
        "submissions.CheckRun",
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="+",
        help_text="The run the revision was published with.",
    )
    check_run = models.ForeignKey(
        "submissions.CheckRun", on_delete=models.PROTECT, related_name="+", help_text="The re-check run."
    )
    ruleset = models.CharField(max_length=50)
    changes = models.JSONField(
        default=dict,
        blank=True,
        help_text="Written when reported: verdict old/new; findings new, gone and changed by (rule, point); "
        "metrics old/new per point.",
    )
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    reason = models.TextField(blank=True)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    annotation = models.ForeignKey(
        Annotation, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    challenge = models.ForeignKey(
        Challenge, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )

    class Meta:
        ordering = ["campaign_id", "publication_id", "revision_id"]
        constraints = [
            models.UniqueConstraint(fields=["campaign", "revision"], name="recheck_result_unique_revision")
        ]

    def __str__(self) -> str:
        return f"re-check #{self.campaign_id} of {self.publication.public_id} ({self.status})"


class _AppendOnly(models.Model):
    """A row written once and never changed nor deleted (the public log and what it proves)."""

    class Meta:
        abstract = True

    def save(self, *args, **kwargs):
        if not self._state.adding:
            raise ValueError(f"{self._meta.verbose_name} is append-only: it is never changed.")
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise ValueError(f"{self._meta.verbose_name} is append-only: it is never deleted.")


class LogLeaf(_AppendOnly):
    """One leaf of the public transparency log (docs/evidence.md): the exact bytes of a published fact's signed
    envelope, at its index."""

    objects = VisibleManager()

    index = models.PositiveBigIntegerField(unique=True)
    envelope = models.BinaryField()
    leaf_hash = models.CharField(max_length=64, help_text="RFC 6962 leaf hash (hex) of the envelope.")
    public_id = models.CharField(max_length=32, db_index=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["index"]

    def __str__(self) -> str:
        return f"log leaf {self.index}"


class LogCheckpoint(_AppendOnly):
    """A signed tree head of the public log (a C2SP tlog-checkpoint note), one per size the log reached."""

    objects = VisibleManager()

    size = models.PositiveBigIntegerField(unique=True)
    root_hash = models.CharField(max_length=64)
    note = models.TextField(help_text="The signed note, byte for byte as served.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["size"]

    def __str__(self) -> str:
        return f"checkpoint at size {self.size}"


class EvidencePack(_AppendOnly):
    """The signed, logged evidence pack of one published fact: a revision of a result, an annotation or a
    retraction (docs/evidence.md). Built when the fact is published; never rebuilt."""

    objects = VisibleManager()

    class Kind(models.TextChoices):
        REVISION = "revision", "Revision"
        ANNOTATION = "annotation", "Annotation"
        RETRACTION = "retraction", "Retraction"

    publication = models.ForeignKey(Publication, on_delete=models.PROTECT, related_name="evidence_packs")
    kind = models.CharField(max_length=16, choices=Kind.choices)
    revision = models.OneToOneField(
        PublicationRevision, on_delete=models.PROTECT, null=True, blank=True, related_name="evidence_pack"
    )
    annotation = models.OneToOneField(
        Annotation, on_delete=models.PROTECT, null=True, blank=True, related_name="evidence_pack"
    )
    leaf = models.OneToOneField(LogLeaf, on_delete=models.PROTECT, related_name="pack")
    original_filename = models.CharField(max_length=120)
    storage_key = models.CharField(max_length=300)
    size_bytes = models.PositiveBigIntegerField()
    sha256 = models.CharField(max_length=64)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["publication_id", "leaf_id"]

    def __str__(self) -> str:
        return self.original_filename


class SavedTender(StatefulModel, models.Model):
    """A tender the evaluator defined once (docs/tender-desk.md): its name and definition (the model, both phases'
    requirements, prices and PUE, the criteria with their weights and directions, as the canonical query of
    leaderboard.board.tender_inputs), at a stable address. Private to its author's organisation until one of its members
    shares it; it is scored from published evidence only, whenever its page is opened."""

    objects = VisibleManager()

    class Status(models.TextChoices):
        PRIVATE = "private", "Private to the organisation"
        SHARED = "shared", "Shared (public)"

    states = States(Status)

    uuid = models.UUIDField(unique=True, default=uuid.uuid4, editable=False, help_text="Its stable address.")
    organisation = models.ForeignKey("accounts.Organisation", on_delete=models.PROTECT, related_name="+")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    name = models.CharField(max_length=120)
    definition = models.JSONField(
        default=dict,
        help_text="The tender's canonical query (leaderboard.board.tender_inputs.TENDER_PARAMETERS).",
    )
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PRIVATE)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["organisation_id", "name", "id"]

    def __str__(self) -> str:
        return f"tender {self.name!r} ({self.status})"
