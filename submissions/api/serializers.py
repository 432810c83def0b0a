"""Output serializers shared by several endpoints: submissions, their versions and check-run summaries."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from submissions.models import CheckRun, Submission, SubmissionVersion
from submissions.selectors import check_run_latest, version_latest


class CheckRunSummarySerializer(serializers.ModelSerializer):
    class Meta:
        model = CheckRun
        fields = [
            "id",
            "version",
            "status",
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


class VersionFileSerializer(serializers.Serializer):
    position = serializers.IntegerField()
    original_filename = serializers.CharField()
    size_bytes = serializers.IntegerField()
    sha256 = serializers.CharField()


class VersionSerializer(serializers.ModelSerializer):
    files = VersionFileSerializer(many=True, read_only=True)
    uploader = serializers.CharField(source="uploader.username", read_only=True)
    latest_check_run = serializers.SerializerMethodField()

    class Meta:
        model = SubmissionVersion
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

    @extend_schema_field(CheckRunSummarySerializer(allow_null=True))
    def get_latest_check_run(self, version):
        run = check_run_latest(version)
        return CheckRunSummarySerializer(run).data if run is not None else None


class SubmissionSerializer(serializers.ModelSerializer):
    organisation = serializers.CharField(source="organisation.slug", read_only=True)
    system = serializers.CharField(source="system.name", read_only=True)
    system_id = serializers.IntegerField(read_only=True)
    benchmark = serializers.CharField(source="benchmark.model_id", read_only=True)
    submitted_version = serializers.IntegerField(
        source="submitted_version.number", read_only=True, allow_null=True
    )
    latest_version = serializers.SerializerMethodField()
    extends = serializers.IntegerField(
        source="extends_id",
        read_only=True,
        allow_null=True,
        help_text="An extension: the first submission of the published result it adds points to.",
    )

    class Meta:
        model = Submission
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

    @extend_schema_field(VersionSerializer(allow_null=True))
    def get_latest_version(self, submission):
        version = version_latest(submission)
        return VersionSerializer(version).data if version is not None else None
