"""Fuzzing every write endpoint of the API (read from the OpenAPI schema, so a new endpoint is covered the day it
is added) with random JSON as a signed-in submitter with a token: deep nesting, NUL characters, lone surrogates,
huge numbers, wrong types. Whatever the body, the answer is never a 5xx."""

from __future__ import annotations

import json
import re
import warnings

import pytest
from django.db import transaction
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.factories import SubmissionVersionFactory
from tests.submissions.support import api_client

pytestmark = pytest.mark.django_db

WRITE_METHODS = ("post", "put", "patch", "delete")
NASTY_TEXT = [
    "\x00",
    "a\x00b",
    "\ud800",
    "x\udfffy",
    "²",
    "١٢",
    "99999999999999999999",
    "-1",
    "",
    " ",
    "1e999",
    "NaN",
    "../../etc/passwd",
    "<script>alert(1)</script>",
    "x" * 5000,
    "llama3_1-8b",
    "Acme_AX-8000",
    "acmecompute",
    "draft",
    "objection",
]
NASTY_NUMBERS = [0, -1, 2**31, -(2**31) - 1, 2**63 - 1, 2**63, -(2**63) - 1, 10**30, 1e308, -1e-308]
DEEP_BODY = "[" * 100_000 + "]" * 100_000


def _write_endpoints() -> list[tuple[str, str, list[str]]]:
    """(METHOD, path template, request field names) of every write operation in the OpenAPI schema."""
    from drf_spectacular.generators import SchemaGenerator

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        schema = SchemaGenerator().get_schema(request=None, public=True)
    components = schema.get("components", {}).get("schemas", {})
    endpoints = []
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            if method not in WRITE_METHODS:
                continue
            content = operation.get("requestBody", {}).get("content", {})
            body_schema = next(iter(content.values()), {}).get("schema", {})
            ref = body_schema.get("$ref", "").rsplit("/", 1)[-1]
            fields = sorted(components.get(ref, body_schema).get("properties", {}))
            endpoints.append((method.upper(), path, fields))
    return endpoints


def _json_values():
    scalars = st.one_of(
        st.none(),
        st.booleans(),
        st.integers(min_value=-(2**64), max_value=2**64),
        st.sampled_from(NASTY_NUMBERS),
        st.floats(allow_nan=False, allow_infinity=False),
        st.text(max_size=12),
        st.sampled_from(NASTY_TEXT),
    )
    return st.recursive(
        scalars,
        lambda children: (
            st.lists(children, max_size=3)
            | st.dictionaries(
                st.one_of(st.text(max_size=6), st.sampled_from(NASTY_TEXT[:5])), children, max_size=3
            )
        ),
        max_leaves=6,
    )


@pytest.fixture
def targets(role_users, sample_catalog, draft):
    """Ids of objects the submitter owns, by the API collection a path's {id} belongs to."""
    benchmark, system = sample_catalog
    version = SubmissionVersionFactory(submission=draft)
    client = api_client(role_users["submitter"])
    upload = client.post(
        "/api/v1/uploads/",
        {"submission": draft.pk, "filename": "AX-8000_c1.tar.gz", "size": 10, "sha256": "0" * 64},
        format="json",
    )
    assert upload.status_code == 201, upload.content
    return {
        "submissions": draft.pk,
        "systems": system.pk,
        "versions": version.pk,
        "uploads": upload.json()["id"],
    }


def _path_for(template: str, targets: dict, choice: int) -> str:
    """The template with its parameters filled: an object the submitter owns (or id 1), or an id that is no id."""
    collection = template.split("/")[3]
    odd_ids = ["1", "99999999999999999999", "%C2%B2", "0"]
    real = str(targets.get(collection, 1))

    def fill(match):
        name = match.group(1)
        if name == "index":
            return ["0", "99999999999999999999", "1"][choice % 3]
        return real if choice % 2 == 0 else odd_ids[choice % len(odd_ids)]

    return re.sub(r"\{(\w+)\}", fill, template)


def _send(client, method: str, path: str, body: str):
    return getattr(client, method.lower())(path, body, content_type="application/json")


def test_the_schema_lists_the_write_endpoints_the_fuzzer_covers():
    endpoints = {(method, path) for method, path, _ in _write_endpoints()}
    assert ("POST", "/api/v1/systems/{id}/description/") in endpoints
    assert ("POST", "/api/v1/submissions/") in endpoints
    assert ("PUT", "/api/v1/notification-preference/") in endpoints
    assert len(endpoints) >= 25


def test_random_json_at_every_write_endpoint_never_answers_5xx(role_users, targets):
    client = api_client(role_users["submitter"])
    client.raise_request_exception = False
    endpoints = _write_endpoints()
    failures: list[str] = []

    def check(method, path, body):
        # Each request starts from the same objects (a withdrawn draft would make every later one a conflict).
        with transaction.atomic():
            response = _send(client, method, path, body)
            transaction.set_rollback(True)
        if response.status_code >= 500:
            failures.append(
                f"{method} {path} {body[:200]!r} -> {response.status_code} {response.content[:300]!r}"
            )

    # Every endpoint gets the attacker's bodies at least once.
    for method, template, fields in endpoints:
        path = _path_for(template, targets, 0)
        for body in (
            DEEP_BODY,
            json.dumps({field: "\x00" for field in fields} or {"x": "\x00"}),
            json.dumps({field: "\ud800" for field in fields} or {"x": "\ud800"}),
            json.dumps({field: 2**31 for field in fields} or {"x": 2**31}),
            json.dumps({field: "²" for field in fields} or {"x": "²"}),
        ):
            check(method, path, body)
    assert not failures, "\n".join(failures)

    values = _json_values()

    @settings(
        max_examples=150,
        deadline=None,
        database=None,
        derandomize=True,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(endpoint=st.sampled_from(endpoints), choice=st.integers(0, 11), data=st.data())
    def fuzz(endpoint, choice, data):
        method, template, fields = endpoint
        known = st.fixed_dictionaries({}, optional={field: values for field in fields})
        body = data.draw(st.one_of(known, known, values))
        check(method, _path_for(template, targets, choice), json.dumps(body))

    fuzz()
    assert not failures, "\n".join(failures[:10])
