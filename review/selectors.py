"""Reads of the review app: the review queue for the signed-in reviewer."""

from __future__ import annotations

from accounts.models import Membership
from accounts.selectors import user_org_ids


def user_is_reviewer(user) -> bool:
    """Whether the user holds a reviewer role in any organisation."""
    return bool(user_org_ids(user, roles=(Membership.Role.REVIEWER,)))
