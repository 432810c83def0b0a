"""Admin for the chair: organisations and members, global roles, the benchmark catalog, systems."""

from django.contrib import admin

from audit.admin import AuditedModelAdmin
from submissions.models import Benchmark, GlobalRole, Membership, Organisation, System


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 0
    autocomplete_fields = ["user"]


@admin.register(Organisation)
class OrganisationAdmin(AuditedModelAdmin):
    list_display = ("name", "slug", "kind", "created_at")
    list_filter = ("kind",)
    search_fields = ("name", "slug")
    prepopulated_fields = {"slug": ("name",)}
    inlines = [MembershipInline]


@admin.register(Membership)
class MembershipAdmin(AuditedModelAdmin):
    list_display = ("user", "organisation", "role", "created_at")
    list_filter = ("role", "organisation")
    search_fields = ("user__username", "organisation__name")
    autocomplete_fields = ["user", "organisation"]


@admin.register(GlobalRole)
class GlobalRoleAdmin(AuditedModelAdmin):
    list_display = ("user", "role", "granted_at")
    list_filter = ("role",)
    autocomplete_fields = ["user"]


@admin.register(Benchmark)
class BenchmarkAdmin(AuditedModelAdmin):
    list_display = (
        "model_id",
        "display_name",
        "workload",
        "ruleset_version",
        "tokenizer_is_placeholder",
        "is_active",
    )
    list_filter = ("workload", "ruleset_version", "tokenizer_is_placeholder", "is_active")
    search_fields = ("model_id", "display_name")


@admin.register(System)
class SystemAdmin(AuditedModelAdmin):
    list_display = ("name", "organisation", "updated_at")
    list_filter = ("organisation",)
    search_fields = ("name", "organisation__name")


# Submissions, versions and check runs are read-only here: they change only through services
# (uploads, transitions, the check pipeline), which write the audit log.
from submissions.models import CheckRun, Submission, SubmissionVersion  # noqa: E402


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
