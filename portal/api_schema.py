"""The OpenAPI schema's operations tagged by their group (portal.api_tags)."""

from __future__ import annotations

from drf_spectacular.openapi import AutoSchema

from portal.api_tags import tag_of


class GroupedAutoSchema(AutoSchema):
    def get_tags(self) -> list[str]:
        return [tag_of(self.path)]
