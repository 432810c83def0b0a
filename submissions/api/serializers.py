"""Output serializers shared by several endpoints: submissions, their versions and check-run summaries.

The latest version of a submission and the latest check run of a version are nested serializers declared once
(not built per row inside a method field): a list builds its fields once for every row. Each serializer puts the
latest row (read from the list's prefetch by submissions.selectors) on the instance before its fields read it.
"""

from __future__ import annotations

from rest_framework import serializers

from review.selectors import check_verdict, check_verdicts_prime
from submissions.models import CheckRun, Submission, SubmissionVersion
from submissions.selectors import check_run_latest, version_latest


class VerdictListSerializer(serializers.ListSerializer):
    """A list whose check runs' verdicts are read at once (two queries), not per row."""

    def to_representation(self, data):
        items = list(data.all() if hasattr(data, "all") else data)
        check_verdicts_prime(self.child.check_runs_of(items))
        return super().to_representation(items)


class CheckRunSummarySerializer(serializers.ModelSerializer):
    """A check run's summary. `status` is its verdict (review.selectors.check_verdict): a failed run whose every
    error finding has a granted waiver reads `passed_with_waivers` (never `failed`), `verdict` says it in words
    ("passed with N waived") and `waived` counts them; the waivers are on the submission's page."""

    status = serializers.SerializerMethodField()
    verdict = serializers.SerializerMethodField()
    waived = serializers.SerializerMethodField()

    @staticmethod
    def check_runs_of(items):
        return items

    class Meta:
        model = CheckRun
        list_serializer_class = VerdictListSerializer
        fields = [
            "id",
            "version",
            "status",
            "verdict",
            "waived",
            "attempts",
            "max_attempts",
            "created_at",
            "started_at",
            "heartbeat_at",
            "finished_at",
            "checker_version",
            "ruleset",
            "error_message",
            "progress_stage",
            "progress_done",
            "progress_total",
            "counts",
        ]

    def _verdict(self, run: CheckRun) -> dict:
        cached = getattr(run, "verdict", None)  # primed for a whole list (VerdictListSerializer)
        if cached is None:
            cached = run.verdict = check_verdict(run.version_id, run)
        return cached

    def get_status(self, run: CheckRun) -> str:
        return self._verdict(run)["status"]

    def get_verdict(self, run: CheckRun) -> str:
        return self._verdict(run)["label"]

    def get_waived(self, run: CheckRun) -> int:
        return self._verdict(run)["waived"]


class VersionFileSerializer(serializers.Serializer):
    position = serializers.IntegerField()
    original_filename = serializers.CharField()
    size_bytes = serializers.IntegerField()
    sha256 = serializers.CharField()


class VersionSerializer(serializers.ModelSerializer):
    files = VersionFileSerializer(many=True, read_only=True)
    uploader = serializers.CharField(source="uploader.username", read_only=True)
    latest_check_run = CheckRunSummarySerializer(
        source="serialized_latest_check_run", read_only=True, allow_null=True
    )

    @staticmethod
    def check_runs_of(items):
        return [check_run_latest(version) for version in items]

    class Meta:
        model = SubmissionVersion
        list_serializer_class = VerdictListSerializer
        fields = [
            "id",
            "submission",
            "number",
            "kind",
            "size_bytes",
            "sha256",
            "uploader",
            "created_at",
            "files",
            "latest_check_run",
        ]

    def to_representation(self, instance):
        instance.serialized_latest_check_run = check_run_latest(instance)
        return super().to_representation(instance)


class SubmissionSerializer(serializers.ModelSerializer):
    organisation = serializers.CharField(source="organisation.slug", read_only=True)
    system = serializers.CharField(source="system.name", read_only=True)
    system_id = serializers.IntegerField(read_only=True)
    benchmark = serializers.CharField(source="benchmark.model_id", read_only=True)
    submitted_version = serializers.IntegerField(
        source="submitted_version.number", read_only=True, allow_null=True
    )
    latest_version = VersionSerializer(source="serialized_latest_version", read_only=True, allow_null=True)
    extends = serializers.IntegerField(
        source="extends_id",
        read_only=True,
        allow_null=True,
        help_text="An extension: the first submission of the published result it adds points to.",
    )

    @staticmethod
    def check_runs_of(items):
        return [check_run_latest(version_latest(submission)) for submission in items]

    class Meta:
        model = Submission
        list_serializer_class = VerdictListSerializer
        fields = [
            "id",
            "extends",
            "stack",
            "changes",
            "revision",
            "organisation",
            "system",
            "system_id",
            "benchmark",
            "division",
            "availability",
            "title",
            "status",
            "status_changed_at",
            "status_reason",
            "submitted_version",
            "created_at",
            "updated_at",
            "latest_version",
        ]

    def to_representation(self, instance):
        instance.serialized_latest_version = version_latest(instance)
        return super().to_representation(instance)
