"""Template context for the header and navigation: who is logged in, their organisations, their roles."""

from __future__ import annotations

from access.permissions import can
from accounts.models import Notification
from accounts.selectors import user_organisations


def navigation(request):
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {
            "nav_organisations": [],
            "nav_is_chair": False,
            "nav_is_auditor": False,
            "nav_is_reviewer": False,
            "nav_unread": 0,
        }
    return {
        "nav_organisations": user_organisations(user),
        "nav_is_chair": can(user, "chair"),
        "nav_is_auditor": can(user, "audit"),
        "nav_is_reviewer": can(user, "review"),
        "nav_unread": Notification.objects.filter(user=user, read_at__isnull=True).count(),
    }
