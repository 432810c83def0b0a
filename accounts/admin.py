"""Admin for the chair: organisations and their members, global roles."""

from django.contrib import admin
from django_otp.plugins.otp_static.admin import StaticDeviceAdmin
from django_otp.plugins.otp_static.models import StaticDevice
from django_otp.plugins.otp_totp.admin import TOTPDeviceAdmin
from django_otp.plugins.otp_totp.models import TOTPDevice

from accounts.models import GlobalRole, Invitation, Membership, Organisation, SignIn
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


@admin.register(Invitation)
class InvitationAdmin(AuditedModelAdmin):
    list_display = ("email", "organisation", "roles", "invited_by", "created_at", "expires_at", "accepted_at")
    list_filter = ("organisation",)
    search_fields = ("email", "organisation__name")
    readonly_fields = ("nonce", "accepted_at", "accepted_by", "invited_by")


@admin.register(SignIn)
class SignInAdmin(admin.ModelAdmin):
    """Read-only: the record of sign-in attempts."""

    list_display = ("user", "created_at", "outcome", "address", "user_agent")
    list_filter = ("outcome",)
    search_fields = ("user__username", "address")

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


# django-otp's device admins, audited: the chair removes a device here when its owner lost phone and recovery
# codes (docs/accounts.md).
for _model, _base in ((TOTPDevice, TOTPDeviceAdmin), (StaticDevice, StaticDeviceAdmin)):
    if admin.site.is_registered(_model):
        admin.site.unregister(_model)
    admin.site.register(_model, type(f"Audited{_base.__name__}", (AuditedModelAdmin, _base), {}))
