"""URLs of accounts' own pages (mounted at /accounts/, beside Django's login pages)."""

from django.urls import path

from accounts.views import (
    account,
    email,
    invitations,
    notifications,
    organisations,
    roles,
    sign_in,
    tokens,
    two_factor,
)

app_name = "accounts"

urlpatterns = [
    path("", account.account, name="account"),
    path("login/verify/", sign_in.verify_view, name="verify"),
    path("two-factor/", two_factor.two_factor, name="two_factor"),
    path("two-factor/recovery-codes/", two_factor.recovery_codes, name="recovery_codes"),
    path("two-factor/off/", two_factor.two_factor_off, name="two_factor_off"),
    path("email/", email.email_change, name="email_change"),
    path("email/confirm/<str:token>/", email.email_confirm, name="email_confirm"),
    path("notifications/", notifications.notifications, name="notifications"),
    path("notifications/read/", notifications.mark_read, name="notifications_read"),
    path("notifications/preference/", notifications.preference, name="notification_preference"),
    path("tokens/", tokens.tokens, name="tokens"),
    path("tokens/<int:pk>/revoke/", tokens.token_revoke, name="token_revoke"),
    path("organisations/", organisations.organisations, name="organisations"),
    path("organisations/<slug:slug>/", organisations.organisation, name="organisation"),
    path("organisations/<slug:slug>/invite/", organisations.invite, name="invite"),
    path(
        "organisations/<slug:slug>/invitations/<int:pk>/withdraw/",
        organisations.invitation_withdraw,
        name="invitation_withdraw",
    ),
    path("organisations/<slug:slug>/members/<int:user_id>/", organisations.member_roles, name="member_roles"),
    path("roles/", roles.global_roles, name="global_roles"),
    path("roles/<int:pk>/remove/", roles.global_role_remove, name="global_role_remove"),
    path("invitations/<str:token>/", invitations.invitation_accept_page, name="invitation_accept"),
    path("email/verify/", email.email_verify_send, name="email_verify_send"),
    path("email/verify/<str:token>/", email.email_verify_page, name="email_verify"),
]
