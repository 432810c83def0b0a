"""The API's list pagination: limit/offset with a maximum page size, so a huge `limit` or `offset` is clamped to
a sane range instead of reaching the database (PostgreSQL refuses a LIMIT beyond bigint: a 500)."""

from __future__ import annotations

from django.conf import settings
from rest_framework.pagination import LimitOffsetPagination

from portal.parsers import parse_positive

MAX_OFFSET = 10**9  # far beyond any list the portal keeps; larger offsets give the same empty page


class PortalPagination(LimitOffsetPagination):
    """`?limit=` between 1 and PORTAL_API_MAX_PAGE_SIZE (a larger one is clamped; one that is not a plain ASCII
    number gives the default page size); `?offset=` between 0 and MAX_OFFSET, clamped the same way."""

    @property
    def max_limit(self) -> int:  # type: ignore[override]
        return settings.PORTAL_API_MAX_PAGE_SIZE

    def get_limit(self, request):
        default = min(self.default_limit, self.max_limit)
        return parse_positive(
            request.query_params.get(self.limit_query_param), default=default, maximum=self.max_limit
        )

    def get_offset(self, request):
        return parse_positive(
            request.query_params.get(self.offset_query_param), default=0, maximum=MAX_OFFSET
        )
