"""/accounts/: the account page (memberships, API tokens, two-factor, notification e-mail, recent sign-ins). A user
sees only their own (access.visibility)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.http import require_GET

from access.permissions import can
from access.visibility import sign_ins_visible_to
from accounts.models import ApiToken, GlobalRole
from accounts.selectors import (
    membership_labels,
    organisations_administered_by,
    recovery_codes_left,
    totp_device_of,
    user_email_verified,
    user_requires_second_factor,
)
from accounts.services.notifications import (
    notification_preference_of,
)
from accounts.views.notifications import PreferenceForm

# --- The account page -------------------------------------------------------------------------------


def _api_tokens_count(user) -> int:
    """How many active API tokens the user holds (accounts.ApiToken; their page is /accounts/tokens/)."""
    return (
        ApiToken.objects.filter(user=user, revoked_at__isnull=True)
        .exclude(expiry__lte=timezone.now())
        .count()
    )


@login_required
@require_GET
def account(request):
    user = request.user
    confirmed = totp_device_of(user)
    return render(
        request,
        "accounts/account.html",
        {
            "memberships": membership_labels(user),
            "global_roles": [
                GlobalRole.Role(role).label for role in user.global_roles.values_list("role", flat=True)
            ],
            "administered": list(organisations_administered_by(user)),
            "is_chair": can(user, "chair"),
            "two_factor": confirmed,
            "two_factor_required": user_requires_second_factor(user),
            "codes_left": recovery_codes_left(user) if confirmed else 0,
            "tokens_count": _api_tokens_count(user),
            "email_verified": user_email_verified(user),
            "preference_form": PreferenceForm(initial={"delivery": notification_preference_of(user)}),
            "sign_ins": sign_ins_visible_to(user)[:15],
        },
    )
