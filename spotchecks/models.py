"""A spot-check: one point of a submission's curve (or of a published result) measured again against the
declared endpoint, through the egress guard, by GuideLLM on the spot-check queue (docs/remeasurement.md).

It keeps the claim it was compared with (frozen when it started), what GuideLLM measured, the judgement per
figure (a bootstrap interval of its shortfall against MLPerf's margin), and the raw output as evidence (stored content-addressed, with its SHA-256). A verdict
`outside` on a published result opens a challenge for the chair; nothing published ever changes by itself."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from portal.states import StatefulModel, States
from portal.visibility import VisibleManager


class SpotCheck(StatefulModel, models.Model):
    objects = VisibleManager()

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Measuring"
        WITHIN = "within", "Within MLPerf's margin"
        OUTSIDE = "outside", "Outside MLPerf's margin"
        INCONCLUSIVE = "inconclusive", "Inconclusive: run longer"
        UNREACHABLE = "unreachable", "Could not reach"
        ERROR = "error", "Error"

    # active: still measuring (one at a time per submission); done: a verdict (or an error) is written;
    # judged: a judgement exists (within, outside or inconclusive); public: what a published result's page shows.
    states = States(
        Status,
        active=(Status.QUEUED, Status.RUNNING),
        done=(Status.WITHIN, Status.OUTSIDE, Status.INCONCLUSIVE, Status.UNREACHABLE, Status.ERROR),
        judged=(Status.WITHIN, Status.OUTSIDE, Status.INCONCLUSIVE),
        public=(Status.WITHIN, Status.OUTSIDE, Status.INCONCLUSIVE, Status.UNREACHABLE),
    )

    class Source(models.TextChoices):
        CHECK_RUN = "check_run", "The submission's latest check run"
        PUBLICATION = "publication", "The published curve"

    submission = models.ForeignKey(
        "submissions.Submission", on_delete=models.PROTECT, related_name="spot_checks"
    )
    # Set when the claim is the published curve (the spot-check then shows on the public result page).
    publication = models.ForeignKey(
        "leaderboard.Publication", on_delete=models.PROTECT, null=True, blank=True, related_name="spot_checks"
    )
    check_run = models.ForeignKey(
        "submissions.CheckRun", on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    source = models.CharField(max_length=16, choices=Source.choices)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    point = models.CharField(max_length=200, help_text="The claimed point's label.")
    concurrency = models.PositiveIntegerField()
    duration_s = models.PositiveIntegerField()
    # {"system_tps", "tps_per_user", "ttft_p90_ms", "goodput"}: the claim as it stood when the spot-check started.
    claimed = models.JSONField(default=dict, blank=True)
    # The same four figures from the re-measurement (checker.cli.import_pipeline's `portal` figures of GuideLLM's output).
    measured = models.JSONField(default=dict, blank=True)
    # checker.judge.remeasure_stats.FigureJudgement.as_dict() per figure (claim, measurement, shortfall, its 95 %
    # interval low/high, margin, verdict, run_longer_s) and `basis`: "both" sides' requests drawn, or only the
    # "remeasurement"'s (the published point kept no per-request samples).
    comparison = models.JSONField(default=list, blank=True)
    # What GuideLLM itself reported for the point (requests completed and failed, its own figures).
    reported = models.JSONField(default=dict, blank=True)
    # [{"name", "size_bytes", "sha256", "storage_key"}]: GuideLLM's benchmarks.json, the guard's record, the log.
    evidence = models.JSONField(default=list, blank=True)
    # portal.egress.Record: requests forwarded, refusals by code, upstream errors (never the credential).
    egress = models.JSONField(default=dict, blank=True)
    tool = models.CharField(max_length=40, default="guidellm")
    tool_version = models.CharField(max_length=80, blank=True)
    detail = models.TextField(blank=True, help_text="Why it could not reach the endpoint, or what failed.")
    # The endpoint as declared when it started (the URL is shown publicly only if the endpoint is public).
    endpoint_url = models.CharField(max_length=500)
    model_name = models.CharField(max_length=200)
    challenge = models.ForeignKey(
        "leaderboard.Challenge", on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    started_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="+",
        help_text="Empty: the schedule started it.",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["submission", "status"], name="spotcheck_submission_idx")]

    def __str__(self) -> str:
        return f"spot-check #{self.pk} of submission #{self.submission_id} at c{self.concurrency} ({self.status})"
