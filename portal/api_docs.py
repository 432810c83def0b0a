"""The API reference page (/api/docs/): every operation of the OpenAPI schema drf-spectacular generates, grouped
as portal.api_tags groups them, rendered by the portal's own template: readable by keyboard and screen reader, in
the portal's layout, without a 1.6 MB script. The schema itself stays at /api/schema/ for tools; Redoc at
/api/redoc/."""

from __future__ import annotations

from functools import cache

from django.shortcuts import render
from django.views.decorators.http import require_GET

from portal.api_tags import OTHER, TAG_GROUPS

METHODS = ("get", "post", "put", "patch", "delete")


def _type_of(schema: dict) -> str:
    if not isinstance(schema, dict):
        return ""
    if "$ref" in schema:
        return schema["$ref"].rsplit("/", 1)[-1]
    kind = schema.get("type", "")
    if kind == "array":
        return f"array of {_type_of(schema.get('items') or {})}"
    if schema.get("enum"):
        return f"{kind or 'string'}: " + ", ".join(str(value) for value in schema["enum"])
    return kind + (f" ({schema['format']})" if schema.get("format") else "")


def _operation(path: str, method: str, operation: dict) -> dict:
    body = (operation.get("requestBody") or {}).get("content") or {}
    signed_in = not any(requirement == {} for requirement in operation.get("security") or [])
    return {
        "id": operation.get("operationId", f"{method}-{path}"),
        "method": method.upper(),
        "path": path,
        "summary": operation.get("summary", ""),
        "description": operation.get("description", ""),
        "signed_in": signed_in,
        "parameters": [
            {
                "name": parameter.get("name", ""),
                "where": parameter.get("in", ""),
                "required": bool(parameter.get("required")),
                "type": _type_of(parameter.get("schema") or {}),
                "description": parameter.get("description", ""),
            }
            for parameter in operation.get("parameters") or []
        ],
        "body": [
            {"media_type": media_type, "type": _type_of(content.get("schema") or {})}
            for media_type, content in body.items()
        ],
        "responses": [
            {
                "status": status,
                "description": (response or {}).get("description", ""),
                "types": sorted(
                    {
                        _type_of(c.get("schema") or {})
                        for c in ((response or {}).get("content") or {}).values()
                    }
                    - {""}
                ),
            }
            for status, response in (operation.get("responses") or {}).items()
        ],
    }


@cache
def api_reference() -> dict:
    """The schema's operations by group, in the order of portal.api_tags (generated once per process: the
    schema changes only with the code)."""
    from drf_spectacular.generators import SchemaGenerator

    schema = SchemaGenerator().get_schema(request=None, public=True)
    order = [tag for tag, _, _ in TAG_GROUPS] + [OTHER]
    descriptions = {tag: description for tag, description, _ in TAG_GROUPS}
    groups: dict[str, list[dict]] = {tag: [] for tag in order}
    for path, item in schema["paths"].items():
        for method in METHODS:
            if method in item:
                operation = item[method]
                tag = (operation.get("tags") or [OTHER])[0]
                groups.setdefault(tag, []).append(_operation(path, method, operation))
    return {
        "title": schema["info"]["title"],
        "version": schema["info"]["version"],
        "description": schema["info"].get("description", ""),
        "groups": [
            {"tag": tag, "description": descriptions.get(tag, ""), "operations": operations}
            for tag, operations in groups.items()
            if operations
        ],
        "security": (schema.get("components") or {}).get("securitySchemes") or {},
    }


@require_GET
def api_docs(request):
    return render(request, "portal/api_docs.html", {"api": api_reference()})
