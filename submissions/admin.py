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
