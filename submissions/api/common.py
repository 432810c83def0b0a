"""What every endpoint of the submissions API shares: the Idempotency-Key parameter and the permission
that lets anyone read (what access.visibility shows them) and signed-in users write."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter
from rest_framework.permissions import SAFE_METHODS, BasePermission

from submissions.idempotency import HEADER as IDEMPOTENCY_HEADER

IDEMPOTENCY_PARAMETER = OpenApiParameter(
    IDEMPOTENCY_HEADER,
    OpenApiTypes.STR,
    OpenApiParameter.HEADER,
    required=False,
    description="Any unique string; a retry with the same key and body returns the first response.",
)


class ReadAnyoneWriteAuthenticated(BasePermission):
    """Reads are filtered by visibility (anonymous: published only); writes need a signed-in user."""

    def has_permission(self, request, view):
        return request.method in SAFE_METHODS or bool(request.user and request.user.is_authenticated)
