"""URLs of accounts' own pages (mounted at /accounts/, beside Django's login pages)."""

from django.urls import path

from accounts import views, views_auth, views_tokens

app_name = "accounts"

urlpatterns = [
    path("", views.account, name="account"),
    path("login/verify/", views_auth.verify_view, name="verify"),
    path("two-factor/", views_auth.two_factor, name="two_factor"),
    path("two-factor/recovery-codes/", views_auth.recovery_codes, name="recovery_codes"),
    path("two-factor/off/", views_auth.two_factor_off, name="two_factor_off"),
    path("email/", views_auth.email_change, name="email_change"),
    path("email/confirm/<str:token>/", views_auth.email_confirm, name="email_confirm"),
    path("notifications/", views.notifications, name="notifications"),
    path("notifications/read/", views.mark_read, name="notifications_read"),
    path("notifications/preference/", views.preference, name="notification_preference"),
    path("tokens/", views_tokens.tokens, name="tokens"),
    path("tokens/<int:pk>/revoke/", views_tokens.token_revoke, name="token_revoke"),
    path("organisations/", views.organisations, name="organisations"),
    path("organisations/<slug:slug>/", views.organisation, name="organisation"),
    path("organisations/<slug:slug>/invite/", views.invite, name="invite"),
    path(
        "organisations/<slug:slug>/invitations/<int:pk>/withdraw/",
        views.invitation_withdraw,
        name="invitation_withdraw",
    ),
    path("organisations/<slug:slug>/members/<int:user_id>/", views.member_roles, name="member_roles"),
    path("roles/", views.global_roles, name="global_roles"),
    path("roles/<int:pk>/remove/", views.global_role_remove, name="global_role_remove"),
    path("invitations/<str:token>/", views.invitation_accept_page, name="invitation_accept"),
    path("email/verify/", views.email_verify_send, name="email_verify_send"),
    path("email/verify/<str:token>/", views.email_verify_page, name="email_verify"),
]
