"""URLs of accounts' own pages (mounted at /accounts/, beside Django's login pages)."""

from django.urls import path

from accounts import views, views_tokens

app_name = "accounts"

urlpatterns = [
    path("notifications/", views.notifications, name="notifications"),
    path("notifications/read/", views.mark_read, name="notifications_read"),
    path("notifications/preference/", views.preference, name="notification_preference"),
    path("tokens/", views_tokens.tokens, name="tokens"),
    path("tokens/<int:pk>/revoke/", views_tokens.token_revoke, name="token_revoke"),
]
