"""Admin for the chair: systems; submissions, versions and check runs read-only (they change only through
services: uploads, transitions, the check pipeline, which write the audit log)."""

from django.contrib import admin, messages

from audit.admin import AuditedModelAdmin
from submissions.models import CheckRun, Submission, SubmissionVersion, System


@admin.register(System)
class SystemAdmin(AuditedModelAdmin):
    list_display = ("name", "organisation", "updated_at")
    list_filter = ("organisation",)
    search_fields = ("name", "organisation__name")

    def save_model(self, request, obj, form, change):
        super().save_model(request, obj, form, change)
        published = obj.submissions.filter(Submission.states.q("published")).count() if change else 0
        if (
            published
        ):  # the published records are snapshots (leaderboard.publishing.snapshot): they do not change
            messages.warning(
                request,
                f"{obj.name} has {published} published result{'s' if published != 1 else ''}: they keep the name "
                "and description they were published with. This change applies to drafts and future revisions.",
            )


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(Submission)
class SubmissionAdmin(ReadOnlyAdmin):
    list_display = ("id", "organisation", "system", "benchmark", "status", "created_at")
    list_filter = ("status", "benchmark", "organisation")


@admin.register(SubmissionVersion)
class SubmissionVersionAdmin(ReadOnlyAdmin):
    list_display = ("id", "submission", "number", "kind", "size_bytes", "sha256", "created_at")


@admin.register(CheckRun)
class CheckRunAdmin(ReadOnlyAdmin):
    list_display = ("id", "version", "status", "attempts", "heartbeat_at", "finished_at", "ruleset")
    list_filter = ("status",)
