"""The API docs come in sections by who uses them, and no endpoint falls outside a section."""

from __future__ import annotations

import pytest
from django.test import Client

from portal.api_tags import OTHER, TAG_GROUPS

pytestmark = pytest.mark.django_db


def test_every_operation_of_the_schema_sits_in_one_named_section():
    schema = Client().get("/api/schema/?format=json").json()
    names = [tag for tag, _, _ in TAG_GROUPS]
    assert [tag["name"] for tag in schema["tags"]] == names
    sections: dict[str, list[str]] = {}
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            assert len(operation["tags"]) == 1, (path, method)
            sections.setdefault(operation["tags"][0], []).append(f"{method.upper()} {path}")
    assert OTHER not in sections, sections.get(OTHER)
    assert set(sections) == set(names)  # every section holds something
    assert "GET /api/v1/public/results/" in sections["Public results"]
    assert "POST /api/v1/uploads/{id}/finish/" in sections["Uploads and checks"]
