"""Admin for the chair: organisations and their members, global roles."""

from django.contrib import admin

from accounts.models import GlobalRole, Membership, Organisation
from audit.admin import AuditedModelAdmin


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
