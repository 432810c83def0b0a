"""Admin for the chair: organisations and their members, global roles."""

from contextvars import ContextVar

from django.contrib import admin, messages
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import UserAdmin
from django.contrib.auth.forms import AdminPasswordChangeForm
from django.db import transaction
from django_otp.plugins.otp_static.admin import StaticDeviceAdmin
from django_otp.plugins.otp_static.models import StaticDevice
from django_otp.plugins.otp_totp.admin import TOTPDeviceAdmin
from django_otp.plugins.otp_totp.models import TOTPDevice

from accounts.models import GlobalRole, Invitation, Membership, Organisation, SignIn
from accounts.services.sign_in import password_set, two_factor_disable
from audit.admin import AuditedModelAdmin
from portal.errors import ApplicationError


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


_password_actor: ContextVar = ContextVar("admin_password_actor", default=None)


class AuditedPasswordChangeForm(AdminPasswordChangeForm):
    """The admin's "set password" form: the password is set by accounts.services.sign_in.password_set (audited as
    `account.password_set_by_admin` with the chair as actor, the owner e-mailed), never saved here."""

    def save(self, commit=True):
        password_set(
            user=self.user, password=self.cleaned_data["password1"], actor=_password_actor.get(), how="admin"
        )
        return self.user


class AuditedUserAdmin(AuditedModelAdmin, UserAdmin):
    """Django's user admin, audited: edits (is_superuser, is_staff, is_active included) as `user.updated` with the
    fields changed, passwords through password_set, and an action that resets two-factor sign-in through
    two_factor_disable (both audited with the chair as actor)."""

    actions = ["two_factor_reset"]

    change_password_form = AuditedPasswordChangeForm

    def user_change_password(self, request, id, form_url=""):
        # The chair of this request is the audited actor (a context variable: the admin object is shared).
        reset = _password_actor.set(request.user)
        try:
            with transaction.atomic():
                return super().user_change_password(request, id, form_url)
        finally:
            _password_actor.reset(reset)

    @admin.action(description="Reset two-factor sign-in (the user sets up a new authenticator)")
    def two_factor_reset(self, request, queryset):
        done = 0
        for user in queryset:
            try:
                two_factor_disable(user=user, actor=request.user)
            except ApplicationError as exc:
                self.message_user(request, f"{user.get_username()}: {exc.detail}", level=messages.ERROR)
            else:
                done += 1
        self.message_user(request, f"Two-factor sign-in reset for {done} account(s).")


User = get_user_model()
if admin.site.is_registered(User):
    admin.site.unregister(User)
admin.site.register(User, AuditedUserAdmin)
