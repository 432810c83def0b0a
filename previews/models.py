"""A preview: another benchmark tool's output (AIPerf, GuideLLM, inference-perf, vLLM bench) an organisation
uploads for one of its systems, checked and recomputed like a submission (checker.cli.import_pipeline), and kept private to
the organisation. A preview is never a submission, never reviewed and never on the public board."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from accounts.models import Organisation
from catalog.models import Benchmark
from portal.states import StatefulModel, States
from portal.visibility import VisibleManager
from submissions.models import System


class Preview(StatefulModel, models.Model):
    objects = VisibleManager()

    class Status(models.TextChoices):
        CHECKING = "checking", "Checking"
        CHECKED = "checked", "Checked"
        FAILED = "failed", "Nothing usable"

    # drawable: its recomputed points go on the charts; done: the check finished either way.
    states = States(Status, drawable=(Status.CHECKED,), done=(Status.CHECKED, Status.FAILED))

    organisation = models.ForeignKey(Organisation, on_delete=models.CASCADE, related_name="previews")
    system = models.ForeignKey(System, on_delete=models.CASCADE, related_name="previews")
    benchmark = models.ForeignKey(Benchmark, on_delete=models.PROTECT, related_name="previews")
    name = models.CharField(max_length=120)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.CHECKING)
    # [{"name", "size_bytes", "sha256", "storage_key"}]: the files as uploaded (an archive stays one file).
    files = models.JSONField(default=list, blank=True)
    tool = models.CharField(max_length=40, blank=True, help_text="The importer the registry detected.")
    tool_version = models.CharField(max_length=80, blank=True)
    # checker.cli.import_pipeline.ImportResult.to_dict(): per point the tool's figures, the recomputed and the portal's.
    result = models.JSONField(default=dict, blank=True)
    # The portal's metrics of every point as a curve (checker.recompute.curve.curve_of), for the charts.
    curve = models.JSONField(default=dict, blank=True)
    findings = models.JSONField(default=list, blank=True)
    error_count = models.PositiveIntegerField(default=0)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="previews"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    checked_at = models.DateTimeField(null=True, blank=True)
    # When the current check was queued (the upload or the last re-check): the reconciler's clock.
    checking_since = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"preview #{self.pk} {self.name} ({self.status})"
