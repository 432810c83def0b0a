"""Systems organisations register, their submissions, immutable versions, uploads and check runs."""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import RegexValidator
from django.db import models

from accounts.models import Organisation
from catalog.models import Benchmark
from portal.states import StatefulModel, States
from portal.visibility import VisibleManager

SYSTEM_NAME_VALIDATOR = RegexValidator(
    r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$",
    "Use letters, digits, '_', '.' and '-' (as in the bundle's results/<system>/ folder), e.g. Acme_AX-8000.",
)


class System(models.Model):
    """A system under test registered by an organisation, with its system description (system_desc.json)."""

    objects = VisibleManager()

    organisation = models.ForeignKey(Organisation, on_delete=models.PROTECT, related_name="systems")
    name = models.CharField(
        max_length=100,
        validators=[SYSTEM_NAME_VALIDATOR],
        help_text="As in the bundle's results/<system>/ folder, e.g. Acme_AX-8000.",
    )
    description = models.JSONField(default=dict, blank=True, help_text="The system_desc.json content.")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["organisation", "name"], name="system_unique_name_per_org")
        ]
        ordering = ["organisation__name", "name"]

    def __str__(self) -> str:
        return f"{self.organisation.slug}/{self.name}"

    def clean(self):
        if not isinstance(self.description, dict):
            raise ValidationError({"description": "The system description must be a JSON object."})


class SystemDescriptionRevision(models.Model):
    """One system description a system carried, kept when a newer one replaces it (never overwritten)."""

    objects = VisibleManager()

    system = models.ForeignKey(System, on_delete=models.PROTECT, related_name="description_revisions")
    number = models.PositiveIntegerField(
        help_text="1 for the description given at registration, then 2, 3..."
    )
    description = models.JSONField(
        default=dict, blank=True, help_text="The system_desc.json content of this revision."
    )
    sha256 = models.CharField(max_length=64, help_text="SHA-256 of the canonical JSON (sorted keys).")
    changed_keys = models.JSONField(
        default=list, blank=True, help_text="Top-level keys that differ from the previous revision."
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["system_id", "-number"]
        constraints = [
            models.UniqueConstraint(fields=["system", "number"], name="system_description_unique_number"),
        ]

    def __str__(self) -> str:
        return f"{self.system} description r{self.number}"

    def save(self, *args, **kwargs):
        if not self._state.adding:
            raise ValidationError("A description revision is history: register a new revision instead.")
        super().save(*args, **kwargs)


# --- Submissions, immutable versions, uploads and check runs ---------------------------------


class Submission(StatefulModel, models.Model):
    """One organisation's result for one system x benchmark; its status changes only through transition services."""

    objects = VisibleManager()

    class Division(models.TextChoices):
        # point.yaml `division:` as the official tools write it ("Standardized").
        STANDARDIZED = "standardized", "Standardized"
        OPEN = "open", "Open"

    class Availability(models.TextChoices):
        AVAILABLE = "available", "Available"
        PREVIEW = "preview", "Preview"
        RDI = "rdi", "Research, development or internal (RDI)"

    class Status(models.TextChoices):
        DRAFT = "draft", "Draft"
        SUBMITTED = "submitted", "Submitted"
        IN_REVIEW = "in_review", "In review"
        CHANGES_REQUESTED = "changes_requested", "Changes requested"
        PEER_REVIEWED = "peer_reviewed", "Peer reviewed"
        AUDITED = "audited", "Audited"
        PUBLISHED = "published", "Published"
        WITHDRAWN = "withdrawn", "Withdrawn"
        REJECTED = "rejected", "Rejected"

    TERMINAL_STATUSES = (Status.WITHDRAWN, Status.REJECTED)
    states = States(
        Status,
        terminal=TERMINAL_STATUSES,
        # Reviewers work on it: submitted until peer reviewed.
        under_review=(Status.SUBMITTED, Status.IN_REVIEW, Status.CHANGES_REQUESTED),
        awaiting_audit=(Status.PEER_REVIEWED,),
        # Submitted and not yet judged by an auditor: reviews and audit questions are still open.
        in_process=(Status.SUBMITTED, Status.IN_REVIEW, Status.CHANGES_REQUESTED, Status.PEER_REVIEWED),
        # A reviewer has nothing left to do: past peer review, or ended.
        review_over=(Status.WITHDRAWN, Status.REJECTED, Status.PUBLISHED, Status.AUDITED),
        # Not yet a result and not ended: a pending extension still counts as in progress.
        pending=(
            Status.DRAFT,
            Status.SUBMITTED,
            Status.IN_REVIEW,
            Status.CHANGES_REQUESTED,
            Status.PEER_REVIEWED,
            Status.AUDITED,
        ),
    )

    organisation = models.ForeignKey(Organisation, on_delete=models.PROTECT, related_name="submissions")
    system = models.ForeignKey(System, on_delete=models.PROTECT, related_name="submissions")
    benchmark = models.ForeignKey(Benchmark, on_delete=models.PROTECT, related_name="submissions")
    division = models.CharField(max_length=16, choices=Division.choices, default=Division.STANDARDIZED)
    availability = models.CharField(
        max_length=16, choices=Availability.choices, default=Availability.AVAILABLE
    )
    title = models.CharField(max_length=200, blank=True)
    status = models.CharField(max_length=24, choices=Status.choices, default=Status.DRAFT, editable=False)
    status_changed_at = models.DateTimeField(null=True, blank=True, editable=False)
    status_reason = models.TextField(
        blank=True, editable=False, help_text="Why it was withdrawn or rejected."
    )
    submitted_version = models.ForeignKey(
        "SubmissionVersion",
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="+",
        editable=False,
        help_text="The version frozen at submit time: reviewers and auditors judge this one.",
    )
    # Incremental submissions (docs/extensions.md): an extension adds or re-measures load points of a published
    # result; it goes through the same lifecycle, and publishing it makes the result's next revision.
    extends = models.ForeignKey(
        "self",
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="extensions",
        editable=False,
        help_text="The published result (its first submission) this extension adds load points to.",
    )
    stack = models.CharField(
        max_length=200,
        blank=True,
        help_text="The software stack the points were measured with, as the curve labels them, e.g. "
        "'acme-serve 1.0, driver 1.2'.",
    )
    changes = models.JSONField(
        default=dict,
        blank=True,
        editable=False,
        help_text="What an extension declares changed since the published result: software, configuration, "
        "system_description_revision.",
    )
    revision = models.PositiveIntegerField(
        null=True,
        blank=True,
        editable=False,
        help_text="The result revision its publication made (1 for the first submission, then 2, 3...).",
    )
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["status"], name="submission_status_idx")]
        constraints = [
            models.UniqueConstraint(
                fields=["extends", "revision"], name="submission_unique_revision_per_result"
            )
        ]

    def __str__(self) -> str:
        return f"#{self.pk} {self.organisation.slug}/{self.system.name}/{self.benchmark.model_id}"

    def clean(self):
        if self.system_id and self.organisation_id and self.system.organisation_id != self.organisation_id:
            raise ValidationError({"system": "The system belongs to another organisation."})

    @property
    def is_extension(self) -> bool:
        return self.extends_id is not None

    @property
    def stack_label(self) -> str:
        """The software stack its points carry on a result's curve: the one declared, else the serving framework
        of the system's registered description."""
        if self.stack:
            return self.stack
        description = self.system.description if isinstance(self.system.description, dict) else {}
        framework = description.get("serving_framework")
        return framework[:200] if isinstance(framework, str) else ""

    @property
    def result_root_id(self) -> int:
        """The first submission of the result this submission belongs to (itself unless it is an extension)."""
        return self.extends_id or self.pk


class Endpoint(models.Model):
    """The endpoint a submission's system under test answers on, declared by its organisation for re-measurement.

    The credential is stored encrypted (submissions.endpoints, Fernet keyed by PORTAL_ENDPOINT_KEY) and never shown
    again; `public` makes URL and model name visible on the published result's page (never the credential)."""

    objects = VisibleManager()

    submission = models.OneToOneField(Submission, on_delete=models.CASCADE, related_name="endpoint")
    url = models.URLField(
        max_length=500, help_text="Base URL of the OpenAI-compatible API, e.g. https://api.example.com"
    )
    model_name = models.CharField(
        max_length=200, help_text="The model name the endpoint serves the benchmark as."
    )
    stays_up = models.BooleanField(
        default=False,
        help_text="The endpoint stays reachable after publication (it may be re-measured then).",
    )
    public = models.BooleanField(
        default=False, help_text="Show URL and model name on the public result page."
    )
    credential_encrypted = models.TextField(blank=True, editable=False)
    declared_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    declared_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"endpoint of submission #{self.submission_id}"

    @property
    def has_credential(self) -> bool:
        return bool(self.credential_encrypted)


class SubmissionVersion(models.Model):
    """One upload of a submission: an immutable set of stored files (content-addressed by SHA-256)."""

    objects = VisibleManager()

    class Kind(models.TextChoices):
        BUNDLE = "bundle", "Submission bundle"
        RUN_ARCHIVES = "run_archives", "Run archives"

    submission = models.ForeignKey(Submission, on_delete=models.PROTECT, related_name="versions")
    number = models.PositiveIntegerField()
    kind = models.CharField(max_length=16, choices=Kind.choices)
    size_bytes = models.PositiveBigIntegerField(help_text="Total of the version's files.")
    sha256 = models.CharField(
        max_length=64,
        help_text="SHA-256 of the single file, or of the sorted 'sha256  name' lines of several files.",
    )
    uploader = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["submission_id", "-number"]
        constraints = [
            models.UniqueConstraint(fields=["submission", "number"], name="version_unique_number"),
        ]

    def __str__(self) -> str:
        return f"{self.submission} v{self.number}"

    def save(self, *args, **kwargs):
        if not self._state.adding:
            raise ValidationError("A submission version is immutable: upload a new version instead.")
        super().save(*args, **kwargs)


class VersionFile(models.Model):
    """One stored file of a version (a bundle archive, or one run archive of a set), kept byte-identical."""

    objects = VisibleManager()

    version = models.ForeignKey(SubmissionVersion, on_delete=models.PROTECT, related_name="files")
    position = models.PositiveSmallIntegerField()
    original_filename = models.CharField(max_length=255)
    storage_key = models.CharField(
        max_length=300, help_text="Key in the default storage: blobs/sha256/<ab>/<sha256>."
    )
    size_bytes = models.PositiveBigIntegerField()
    sha256 = models.CharField(max_length=64)

    class Meta:
        ordering = ["version_id", "position"]
        constraints = [
            models.UniqueConstraint(fields=["version", "position"], name="version_file_unique_position"),
        ]

    def __str__(self) -> str:
        return f"{self.version} {self.original_filename}"

    def save(self, *args, **kwargs):
        if not self._state.adding:
            raise ValidationError("A stored version file is immutable.")
        super().save(*args, **kwargs)


class Upload(StatefulModel, models.Model):
    """A chunked, resumable upload of one file; its parts live in storage until it is finished."""

    objects = VisibleManager()

    class Status(models.TextChoices):
        OPEN = "open", "Receiving parts"
        VERIFYING = "verifying", "Complete in the bucket, a worker is verifying its SHA-256"
        VERIFIED = "verified", "Verified, waiting to join a version"
        DONE = "done", "Part of a version"
        ABORTED = "aborted", "Aborted"

    states = States(
        Status,
        # Its bytes are verified: waiting for a version, or part of one.
        finished=(Status.VERIFIED, Status.DONE),
        # Still coming in: parts arriving or the bucket's object being verified.
        arriving=(Status.OPEN, Status.VERIFYING),
        # Holds storage and quota: not yet part of a version, not aborted.
        holding=(Status.OPEN, Status.VERIFYING, Status.VERIFIED),
    )

    class Transfer(models.TextChoices):
        PROXIED = "proxied", "Parts through the portal"
        DIRECT = "direct", "Parts straight to the bucket (presigned multipart)"

    id = models.UUIDField(primary_key=True, editable=False)
    submission = models.ForeignKey(Submission, on_delete=models.PROTECT, related_name="uploads")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    filename = models.CharField(max_length=255)
    size_bytes = models.PositiveBigIntegerField()
    sha256 = models.CharField(max_length=64, help_text="What the client says the whole file hashes to.")
    part_size = models.PositiveIntegerField()
    parts_expected = models.PositiveIntegerField()
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.OPEN)
    storage_key = models.CharField(max_length=300, blank=True, help_text="The assembled blob, once verified.")
    version = models.ForeignKey(
        SubmissionVersion, on_delete=models.PROTECT, null=True, blank=True, related_name="uploads"
    )
    transfer = models.CharField(max_length=16, choices=Transfer.choices, default=Transfer.PROXIED)
    multipart_id = models.CharField(
        max_length=1024, blank=True, help_text="The bucket's UploadId of a direct upload's multipart upload."
    )
    finish_request = models.JSONField(
        default=dict,
        blank=True,
        help_text="A direct upload's finish (actor, create_version, include_uploads, kind).",
    )
    error_message = models.TextField(
        blank=True, help_text="Why a direct upload was refused after its finish."
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"upload {self.id} ({self.filename})"


class UploadPart(models.Model):
    """One received part of an upload (kept under a key naming its own SHA-256, so it is never overwritten)."""

    objects = VisibleManager()

    upload = models.ForeignKey(Upload, on_delete=models.CASCADE, related_name="parts")
    index = models.PositiveIntegerField()
    size_bytes = models.PositiveIntegerField()
    sha256 = models.CharField(max_length=64)
    storage_key = models.CharField(max_length=300)
    received_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["upload_id", "index"]
        constraints = [models.UniqueConstraint(fields=["upload", "index"], name="upload_part_unique_index")]


class CheckRun(StatefulModel, models.Model):
    """One run of the checker over one version; a re-check is a new run, never an overwrite."""

    objects = VisibleManager()

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        PASSED = "passed", "Passed"
        FAILED = "failed", "Failed (findings with errors)"
        ERROR = "error", "Error (the check could not complete)"

    FINISHED_STATUSES = (Status.PASSED, Status.FAILED, Status.ERROR)
    states = States(
        Status,
        unfinished=(Status.QUEUED, Status.RUNNING),
        finished=FINISHED_STATUSES,
        # The checker gave a verdict (an error is no verdict).
        judged=(Status.PASSED, Status.FAILED),
    )

    class Purpose(models.TextChoices):
        SUBMISSION = "submission", "The version's own check"
        RECHECK = "recheck", "A re-check of a published revision (leaderboard.publishing.rechecks)"

    version = models.ForeignKey(SubmissionVersion, on_delete=models.PROTECT, related_name="check_runs")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED, editable=False)
    # A re-check run (a rule-set or checker change, leaderboard.publishing.rechecks) is never the version's current run:
    # pages, reviews and publication read the latest `submission` run only, so nothing published changes by itself.
    purpose = models.CharField(max_length=16, choices=Purpose.choices, default=Purpose.SUBMISSION)
    attempts = models.PositiveSmallIntegerField(
        default=1, help_text="The attempt queued or running now (1-based)."
    )
    max_attempts = models.PositiveSmallIntegerField(default=3)
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="+",
        help_text="Who asked for this run (empty: the upload itself).",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    checker_version = models.CharField(max_length=50, blank=True)
    ruleset = models.CharField(max_length=50, blank=True)
    error_message = models.TextField(
        blank=True, help_text="What the submitter should know: why the run errored, was re-queued or failed."
    )
    progress_stage = models.CharField(max_length=32, blank=True)
    progress_done = models.PositiveIntegerField(default=0)
    progress_total = models.PositiveIntegerField(default=0)
    points_expected = models.JSONField(
        default=list, blank=True, help_text="Point keys found when the run started."
    )
    point_files = models.JSONField(
        default=dict,
        blank=True,
        help_text="Point key -> positions of the version files its task fetches (its own, and those holding "
        "no point).",
    )
    counts = models.JSONField(default=dict, blank=True, help_text="Findings per severity.")
    curves = models.JSONField(default=list, blank=True)
    report = models.JSONField(
        null=True, blank=True, help_text="The whole Report.to_dict() (docs/report-format.md)."
    )

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["status", "heartbeat_at"], name="check_run_status_hb_idx")]

    def __str__(self) -> str:
        return f"check run #{self.pk} of {self.version} ({self.status})"


class CheckOutbox(models.Model):
    """A check run's start message not yet handed to the queue (the outbox).

    Written in the same transaction as the run it starts (a new version, a re-check, a retry), so a committed
    run always has its message; sent after commit and, should the broker be down then, by the beat task
    `check_outbox_send_task` once it is back. The row is deleted when the broker has the message."""

    objects = VisibleManager()

    check_run = models.ForeignKey(CheckRun, on_delete=models.CASCADE, related_name="outbox")
    attempt = models.PositiveSmallIntegerField(help_text="The attempt the message starts.")
    created_at = models.DateTimeField(auto_now_add=True)
    claimed_until = models.DateTimeField(
        null=True,
        blank=True,
        help_text="A sender holds the message until then (a crashed sender's lease ends).",
    )
    send_attempts = models.PositiveIntegerField(default=0)
    last_error = models.TextField(blank=True, help_text="Why the last send failed (the broker was down).")

    class Meta:
        ordering = ["created_at", "id"]
        constraints = [
            models.UniqueConstraint(fields=["check_run", "attempt"], name="check_outbox_unique_attempt")
        ]

    def __str__(self) -> str:
        return f"start message of run #{self.check_run_id} attempt {self.attempt}"


class Finding(models.Model):
    """One checker finding of a run (stable rule id, where, and a sentence the submitter can act on)."""

    objects = VisibleManager()

    check_run = models.ForeignKey(CheckRun, on_delete=models.CASCADE, related_name="findings")
    # Which pipeline step wrote the row: the point key of a per-point task, or "" for the whole-version join.
    step = models.CharField(max_length=200, blank=True)
    rule = models.CharField(max_length=100)
    severity = models.CharField(max_length=8)
    file = models.TextField(blank=True)
    line = models.PositiveBigIntegerField(null=True, blank=True)
    pointer = models.TextField(blank=True)
    point = models.CharField(max_length=200, blank=True)
    message = models.TextField()
    fix = models.TextField(blank=True)

    class Meta:
        ordering = ["check_run_id", "id"]
        indexes = [models.Index(fields=["check_run", "step"], name="finding_run_step_idx")]

    def __str__(self) -> str:
        return f"{self.severity} {self.rule}: {self.message[:60]}"


class PointMetric(models.Model):
    """Claimed and recomputed metrics of one load point in one run."""

    objects = VisibleManager()

    check_run = models.ForeignKey(CheckRun, on_delete=models.CASCADE, related_name="point_metrics")
    system = models.CharField(max_length=100)
    model = models.CharField(max_length=64)
    concurrency = models.PositiveIntegerField()
    key = models.CharField(max_length=200, help_text="<system>/<model>/r<C>")
    source = models.CharField(max_length=32, blank=True)
    claimed = models.JSONField(null=True, blank=True)
    recomputed = models.JSONField(null=True, blank=True)
    extra = models.JSONField(default=dict, blank=True)
    # The raw log's identity (checker.recompute.replay): SHA-256 of events.jsonl and of its ordered tracked sample uuids. The
    # judge step looks them up in other submissions' points (rule raw-log-reused); empty without a raw log.
    raw_log_sha256 = models.CharField(max_length=64, blank=True, db_index=True)
    tracked_sequence_sha256 = models.CharField(max_length=64, blank=True, db_index=True)
    # The tracked samples' per-request arrays (checker.recompute.goodput .npz: ttft, tpot, output tokens, ok), kept when
    # the point's raw log is replayed, so an SLO query never re-reads the log; empty without a raw log.
    samples_key = models.CharField(
        max_length=200, blank=True, help_text="Storage key of the per-sample .npz."
    )
    samples_sha256 = models.CharField(max_length=64, blank=True, help_text="SHA-256 of the per-sample .npz.")

    class Meta:
        ordering = ["check_run_id", "system", "model", "concurrency"]
        constraints = [models.UniqueConstraint(fields=["check_run", "key"], name="point_metric_unique_key")]

    def __str__(self) -> str:
        return f"{self.key} of run #{self.check_run_id}"


class IdempotencyKey(models.Model):
    """A write request's Idempotency-Key with its response, so a retried request gets the same answer."""

    objects = VisibleManager()

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    key = models.CharField(max_length=200)
    endpoint = models.CharField(max_length=300, help_text="Method and path of the first request.")
    request_hash = models.CharField(max_length=64)
    response_status = models.PositiveSmallIntegerField(null=True, blank=True)
    response_body = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "key"], name="idempotency_key_unique")]

    def __str__(self) -> str:
        return f"{self.key} ({self.endpoint})"
