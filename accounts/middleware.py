"""The chair and auditors act only from a session verified by their second factor.

Signed in with a password alone (a session from before two-factor sign-in was set up, or none set up yet),
they are sent to set it up (or to type a code) from every page, and every write is refused with 403
`two_factor_required`: publishing, waiving, rejecting, attesting and the rest. Their sign-in, sign-out and
two-factor pages, password reset and the static files stay open. API token requests are handled by
accounts.authentication (a token carries no session)."""

from __future__ import annotations

from urllib.parse import urlencode

from django.http import JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse

from accounts.selectors import user_has_second_factor, user_requires_second_factor

SAFE_METHODS = ("GET", "HEAD", "OPTIONS")
OPEN_PREFIXES = (
    "/accounts/login/",
    "/accounts/logout/",
    "/accounts/two-factor/",
    "/accounts/password_reset/",
    "/accounts/reset/",
    "/static/",
    "/healthz",
)
MESSAGE = (
    "Chair and auditor accounts act only after two-factor sign-in: set it up (or type your code) at "
    "/accounts/two-factor/, then try again."
)


class SecondFactorRequiredMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        user = getattr(request, "user", None)
        if (
            user is None
            or not user.is_authenticated
            or request.path.startswith(OPEN_PREFIXES)
            or user.is_verified()
            or not user_requires_second_factor(user)
        ):
            return self.get_response(request)
        if request.path.startswith("/api/"):
            if request.method in SAFE_METHODS:
                return self.get_response(request)
            return JsonResponse({"code": "two_factor_required", "detail": MESSAGE}, status=403)
        if request.method in SAFE_METHODS:
            target = reverse("accounts:two_factor" if not user_has_second_factor(user) else "accounts:verify")
            return redirect(f"{target}?{urlencode({'next': request.get_full_path()})}")
        return render(request, "accounts/two_factor_required.html", {"message": MESSAGE}, status=403)
