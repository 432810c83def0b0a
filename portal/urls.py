"""URL map: HTML pages per app, the versioned API, its schema and docs, health."""

from django.conf import settings
from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView
from rest_framework import permissions, routers

from accounts import api as accounts_api
from accounts.api.me import MeApi
from accounts.api.notifications import NotificationPreferenceApi
from accounts.views import sign_in as accounts_auth
from catalog import api as catalog_api
from leaderboard import api as leaderboard_api
from portal import api_format, health, views
from portal.api_docs import api_docs
from previews import api as previews_api
from review import api as review_api
from spotchecks import api as spotchecks_api
from submissions import api as submissions_api

admin.site.site_header = "Endpoints Portal administration"
admin.site.site_title = "Endpoints Portal admin"


class _PublicRootRouter(routers.DefaultRouter):
    """The API index is public, like the published results and the benchmark catalog it leads to. Every viewset
    takes a format suffix (`.json`) on every route, its own actions included (api_format.FormatSuffixAware)."""

    class APIRootView(routers.APIRootView):
        permission_classes = [permissions.AllowAny]

    def register(self, prefix, viewset, basename=None):
        super().register(prefix, api_format.format_suffix_aware(viewset), basename)


router = _PublicRootRouter()
for app_api in (
    catalog_api,
    submissions_api,
    review_api,
    leaderboard_api,
    accounts_api,
    previews_api,
    spotchecks_api,
):
    app_api.register(router)

api_v1 = [
    path("me/", MeApi.as_view(), name="me"),
    path(
        "notification-preference/",
        NotificationPreferenceApi.as_view(),
        name="notification-preference",
    ),
    path("", include(router.urls)),
]


def redoc_view(request, *args, **kwargs):
    """Redoc, whose sidebar always shows its maker's logo from cdn.redoc.ly: the one image the CSP lets come
    from elsewhere, on this page only."""
    response = _redoc(request, *args, **kwargs)
    response["Content-Security-Policy"] = settings.PORTAL_CONTENT_SECURITY_POLICY.replace(
        "img-src 'self' data:", "img-src 'self' data: https://cdn.redoc.ly"
    )
    return response


_redoc = SpectacularRedocView.as_view(url_name="api-schema")

urlpatterns = [
    path("", views.home, name="home"),
    path("healthz", health.healthz, name="healthz"),
    # The portal's sign-in (username or e-mail, throttled, two-factor) and audited password change and reset, in
    # place of Django's views of the same names; the rest of django.contrib.auth.urls (logout, the reset request)
    # as they are.
    path("accounts/login/", accounts_auth.login_view, name="login"),
    path("accounts/password_change/", accounts_auth.PasswordChangeView.as_view(), name="password_change"),
    path(
        "accounts/reset/<uidb64>/<token>/",
        accounts_auth.PasswordResetConfirmView.as_view(),
        name="password_reset_confirm",
    ),
    path("accounts/", include("django.contrib.auth.urls")),
    # The admin signs in through the same throttled, two-factor sign-in (Django's admin login would bypass both).
    path("admin/login/", accounts_auth.login_view, name="admin_login"),
    path("accounts/", include("accounts.urls")),
    path("admin/", admin.site.urls),
    path("api/v1/", include((api_v1, "api"), namespace="api")),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    # The portal's own reference page from the same schema (WCAG 2.1 AA, no 1.6 MB script): portal/api_docs.py.
    path("api/docs/", api_docs, name="api-docs"),
    path("api/redoc/", redoc_view, name="api-redoc"),
    path("", include("submissions.urls")),
    path("review/", include("review.urls")),
    path("audit/", include("audit.urls")),
    path("leaderboard/", include("leaderboard.urls")),
    path("previews/", include("previews.urls")),
    path("", include("leaderboard.urls_results")),
    path("log/", include("leaderboard.urls_log")),
    path("", include("spotchecks.urls_results")),
]

# Under /api/ every error is JSON in the API's shape; elsewhere the portal's pages (portal.errorpages).
handler400 = "portal.errorpages.bad_request"
handler403 = "portal.errorpages.permission_denied"
handler404 = "portal.errorpages.page_not_found"
handler500 = "portal.errorpages.server_error"
