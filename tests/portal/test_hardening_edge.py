"""The HTTP edge against an attacker's inputs, on PostgreSQL: text the database cannot store (NUL, lone
surrogates), JSON nested 100,000 deep or too large, Unicode digits as ids, huge page sizes, unknown API paths and
server errors under /api/ (JSON, never the HTML pages), and expected 403/404s logged on one line. Each of these
was a 500 before."""

from __future__ import annotations

import json
import logging
import re
from urllib.parse import urlencode

import pytest
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import transaction
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver

from submissions.models import Submission, System
from tests.factories import SubmissionFactory, SubmissionVersionFactory
from tests.submissions.support import api_client
from tests.submissions.test_systems import sample_system_desc

pytestmark = pytest.mark.django_db


def _api(user):
    client = api_client(user)
    client.raise_request_exception = False
    return client


def _web(user) -> Client:
    client = Client(raise_request_exception=False)
    if user is not None:
        client.force_login(user)
    return client


def _json_file(text: str) -> SimpleUploadedFile:
    return SimpleUploadedFile("system_desc.json", text.encode(), content_type="application/json")


@pytest.fixture
def system(role_users):
    from submissions.services import system_register

    return system_register(
        organisation=role_users["organisations"]["acme"],
        name="Acme_AX-8000",
        description=sample_system_desc(),
        actor=role_users["submitter"],
    )


# --- 1. NUL and lone surrogates in a system description --------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "escape", "problem"),
    [("Acme\u0000AX", "\\u0000", "NUL character"), ("Acme\ud800AX", "\\ud800", "lone surrogate (\\ud800)")],
)
def test_api_description_with_unstorable_text_is_a_400_naming_the_field(
    role_users, system, value, escape, problem
):
    description = sample_system_desc()
    description["node_types"][0]["host_processor_model_name"] = value
    # ensure_ascii writes the character as the escape an attacker sends
    body = json.dumps({"description": description})
    assert escape in body
    response = _api(role_users["submitter"]).post(
        f"/api/v1/systems/{system.pk}/description/", body, content_type="application/json"
    )
    assert response.status_code == 400, response.content
    answer = response.json()
    assert answer["code"] == "text-unstorable"
    assert answer["field"] == "description.node_types[0].host_processor_model_name"
    assert answer["detail"].startswith("description.node_types[0].host_processor_model_name contains a ")
    assert problem in answer["detail"]
    system.refresh_from_db()
    assert system.description == sample_system_desc()
    # A key holding one is named too, and so is a new system's name.
    response = _api(role_users["submitter"]).post(
        "/api/v1/systems/",
        json.dumps({"name": f"X{value}", "description": sample_system_desc()}),
        content_type="application/json",
    )
    assert response.status_code == 400 and response.json()["field"] == "name"
    assert not System.objects.filter(name__startswith="X").exists()


@pytest.mark.parametrize("escape", ["\\u0000", "\\udfff"])
def test_multipart_system_desc_file_with_unstorable_text_is_refused_at_its_pointer(
    role_users, system, escape
):
    text = json.dumps(sample_system_desc()).replace('"system_name": "', f'"system_name": "{escape}', 1)
    response = _api(role_users["submitter"]).post(
        f"/api/v1/systems/{system.pk}/description/", {"system_desc": _json_file(text)}, format="multipart"
    )
    assert response.status_code == 400, response.content
    answer = response.json()
    assert answer["code"] == "system-desc-invalid"
    # NUL: the checker's own rule for a descriptor file (the file is not used); a lone surrogate: the edge's
    assert answer["problems"][0]["rule"] == ("json-nul" if escape == "\\u0000" else "text-unstorable")
    assert answer["problems"][0]["pointer"] == "/system_name"
    system.refresh_from_db()
    assert system.description == sample_system_desc()


def test_description_pages_refuse_unstorable_text_with_a_400_page(role_users, system):
    client = _web(role_users["submitter"])
    text = json.dumps(sample_system_desc()).replace('"division": "', '"division": "\\u0000', 1)
    page = client.post(f"/systems/{system.pk}/description/", {"system_desc": _json_file(text)})
    assert page.status_code == 400
    assert "json-nul" in page.content.decode() and "/division" in page.content.decode()
    registered = client.post(
        "/systems/new/",
        {
            "organisation": role_users["organisations"]["acme"].pk,
            "name": "Other",
            "system_desc": _json_file(text.replace("\\u0000", "\\ud83d")),
        },
    )
    assert registered.status_code == 400 and "lone surrogate" in registered.content.decode()
    assert list(System.objects.values_list("name", flat=True)) == ["Acme_AX-8000"]


def test_nul_in_a_query_string_or_url_encoded_page_form_is_a_400_naming_the_field(role_users, draft):
    client = _web(role_users["submitter"])
    page = client.get("/leaderboard/slo/?benchmark=llama%00")
    assert page.status_code == 400
    assert "benchmark contains a NUL character" in page.content.decode()
    posted = client.post(
        f"/submissions/{draft.pk}/withdraw/",
        urlencode({"reason": "gone\x00"}),
        content_type="application/x-www-form-urlencoded",
    )
    assert posted.status_code == 400 and "reason contains a NUL character" in posted.content.decode()
    draft.refresh_from_db()
    assert draft.status == Submission.Status.DRAFT
    api = _api(role_users["submitter"]).get("/api/v1/submissions/?status=%00")
    assert api.status_code == 400 and api.json()["field"] == "status"
    # A header that is stored (the Idempotency-Key) is checked too.
    keyed = _api(role_users["submitter"]).post(
        f"/api/v1/submissions/{draft.pk}/withdraw/",
        {"reason": "x"},
        format="json",
        HTTP_IDEMPOTENCY_KEY="k\x00",
    )
    assert keyed.status_code == 400 and keyed.json()["field"] == "The Idempotency-Key header"
    # A NUL in the path names nothing: 404 (JSON under /api/).
    assert _api(None).get("/api/v1/benchmarks/%00/").json()["code"] == "not_found"
    assert client.get("/leaderboard/llama%00/").status_code == 404


# --- 2. JSON bodies: depth and size -----------------------------------------------------------------------------


def test_json_nested_100000_deep_is_a_400_not_a_recursion_error(role_users, system):
    client = _api(role_users["submitter"])
    deep = '{"description": ' + "[" * 100_000 + "]" * 100_000 + "}"
    response = client.post(f"/api/v1/systems/{system.pk}/description/", deep, content_type="application/json")
    assert response.status_code == 400
    assert response.json()["code"] == "json-too-deep"
    assert f"more than {settings.PORTAL_API_JSON_MAX_DEPTH} levels" in response.json()["detail"]
    # Deeper than the cap but shallow enough for Python's parser: the same answer.
    depth = settings.PORTAL_API_JSON_MAX_DEPTH
    response = client.post(
        "/api/v1/submissions/",
        '{"title": ' + "[" * depth + "]" * depth + "}",
        content_type="application/json",
    )
    assert response.status_code == 400 and response.json()["code"] == "json-too-deep"


def test_json_body_size_and_number_limits(role_users, system, settings):
    settings.PORTAL_API_BODY_MAX_BYTES = 64 * 1024
    client = _api(role_users["submitter"])
    big = json.dumps({"title": "x" * 70_000})
    response = client.post("/api/v1/submissions/", big, content_type="application/json")
    assert response.status_code == 400 and response.json()["code"] == "body-too-large"
    assert "larger than 65,536 bytes" in response.json()["detail"]
    for number in ("1e999", "9" * 30):
        response = client.post(
            f"/api/v1/systems/{system.pk}/description/",
            '{"description": {"batch": ' + number + "}}",
            content_type="application/json",
        )
        assert response.status_code == 400 and response.json()["code"] == "json-number-too-large", number


# --- 3. ids: ASCII decimals only ----------------------------------------------------------------------------


def test_unicode_digit_as_system_id_is_a_400_unknown_system(role_users, sample_catalog):
    benchmark, _ = sample_catalog
    response = _api(role_users["submitter"]).post(
        "/api/v1/submissions/", {"system": "²", "benchmark": benchmark.model_id}, format="json"
    )
    assert response.status_code == 400
    assert response.json()["code"] == "unknown-system"
    assert "No single system '²'" in response.json()["detail"]


def test_unicode_digit_as_version_on_the_submission_page_is_a_404_that_says_so(role_users, draft):
    SubmissionVersionFactory(submission=draft)
    client = _web(role_users["submitter"])
    page = client.get(f"/submissions/{draft.pk}/?version=%C2%B2")
    assert page.status_code == 404
    assert "has no version “²” (its versions: 1)" in page.content.decode()
    assert client.get(f"/submissions/{draft.pk}/?version=1").status_code == 200
    reviewer_page = _web(role_users["chair"]).get(f"/review/submissions/{draft.pk}/?version=%C2%B2")
    assert reviewer_page.status_code == 404


# --- 4. pagination: huge limit and offset --------------------------------------------------------------------


def _api_list_paths() -> list[str]:
    """Every API route without a path parameter that answers GET, read from the URL conf (new lists included)."""
    found = []

    def walk(patterns, prefix):
        for pattern in patterns:
            route = prefix + str(pattern.pattern).lstrip("^").rstrip("$")
            if isinstance(pattern, URLResolver):
                walk(pattern.url_patterns, route)
            elif isinstance(pattern, URLPattern) and route.startswith("api/v1/"):
                if "(?P<" in route or "<" in route or "\\." in route:
                    continue
                found.append("/" + route.replace("\\", ""))

    walk(get_resolver().url_patterns, "")
    return sorted(set(found))


def test_every_api_list_clamps_a_huge_limit_and_offset(role_users, draft):
    paths = _api_list_paths()
    assert "/api/v1/submissions/" in paths and "/api/v1/public/results/" in paths
    client = _api(role_users["chair"])
    for path in paths:
        for query in ("limit=99999999999999999999", "offset=99999999999999999999", "limit=%C2%B2&offset=-1"):
            response = client.get(f"{path}?{query}")
            assert response.status_code < 500, (path, query, response.content[:300])
    listed = _api(role_users["submitter"]).get("/api/v1/submissions/?limit=99999999999999999999").json()
    assert [row["id"] for row in listed["results"]] == [draft.pk]
    assert _api(None).get("/api/v1/public/results/?limit=99999999999999999999").status_code == 200
    from portal.pagination import PortalPagination

    class _Query:
        query_params = {"limit": "99999999999999999999", "offset": "99999999999999999999"}

    pagination = PortalPagination()
    assert pagination.get_limit(_Query) == settings.PORTAL_API_MAX_PAGE_SIZE
    assert pagination.get_offset(_Query) == 10**9


# --- 5. the API answers JSON for every status ---------------------------------------------------------------


def test_unknown_api_path_is_a_json_404(role_users):
    for client in (_api(None), _api(role_users["submitter"])):
        response = client.get("/api/v1/no-such-thing/")
        assert response.status_code == 404
        assert response["Content-Type"] == "application/json"
        assert response.json()["code"] == "not_found"
        assert "/api/docs/" in response.json()["detail"]
    # Pages keep the HTML page.
    page = _web(None).get("/no-such-page/")
    assert page.status_code == 404 and page["Content-Type"].startswith("text/html")


def test_server_error_under_api_is_json_with_the_request_id(role_users, monkeypatch):
    from accounts.api.me import MeApi

    def explode(self, request):
        raise RuntimeError("boom")

    monkeypatch.setattr(MeApi, "get", explode)
    response = _api(role_users["submitter"]).get("/api/v1/me/", HTTP_X_REQUEST_ID="req-edge-1")
    assert response.status_code == 500
    assert response["Content-Type"] == "application/json"
    assert response.json()["code"] == "server_error"
    assert response.json()["request_id"] == "req-edge-1"
    assert "req-edge-1" in response.json()["detail"]


# --- 6. expected 403/404 on one line ------------------------------------------------------------------------


def test_expected_403_and_404_are_logged_on_one_line(role_users, system, caplog):
    auditor = _web(role_users["auditor"])
    with caplog.at_level(logging.WARNING, logger="django.request"):
        forbidden = auditor.post(f"/systems/{system.pk}/description/", {"system_desc": _json_file("{}")})
        missing = _web(role_users["submitter"]).get("/systems/999999/")
    assert forbidden.status_code == 403 and missing.status_code == 404
    records = [r for r in caplog.records if r.name == "django.request"]
    assert [r.status_code for r in records] == [403, 404]
    for record in records:
        assert record.exc_info is None and record.exc_text is None
        formatted = logging.Formatter("%(levelname)s %(message)s").format(record)
        assert "\n" not in formatted and "Traceback" not in formatted
    assert records[0].getMessage() == (
        f"Forbidden (Permission denied): /systems/{system.pk}/description/ "
        "(PermissionDenied: Only submitters of the system's organisation can describe it.)"
    )
    assert records[1].getMessage() == "Not Found: /systems/999999/"


def test_a_server_error_keeps_its_traceback(role_users, monkeypatch, caplog):
    from accounts.api.me import MeApi

    monkeypatch.setattr(MeApi, "get", lambda self, request: 1 / 0)
    with caplog.at_level(logging.ERROR, logger="django.request"):
        _api(role_users["submitter"]).get("/api/v1/me/")
    (record,) = [r for r in caplog.records if r.name == "django.request"]
    assert record.exc_info is not None and record.exc_info[0] is ZeroDivisionError


# --- pages: any page, any query or form value ------------------------------------------------------------------

PAGE_PARAMS = (
    "page version line diff member anchor_line show ids benchmark status object_id object_type actor action "
    "per_page model_1 reason body parent finding reviewer id mode date outcome text decision rule point file "
    "answer next kind visibility organisation name title system"
).split()


def _page_routes() -> list[str]:
    """Every page route of the URL conf (the API and the admin aside), parameters filled in later."""
    found = []

    def walk(patterns, prefix):
        for pattern in patterns:
            route = prefix + str(pattern.pattern)
            if isinstance(pattern, URLResolver):
                walk(pattern.url_patterns, route)
            else:
                found.append(route)

    walk(get_resolver().url_patterns, "")
    # (logging out would end the signed-in client's session for every route after it)
    return [
        route for route in found if not route.startswith(("api/", "admin/", "^")) and "logout" not in route
    ]


def test_every_page_survives_unicode_digits_and_huge_numbers_in_its_query_and_form(
    role_users, draft, sample_catalog
):
    SubmissionVersionFactory(submission=draft)
    in_review = SubmissionFactory(in_review=True, system=sample_catalog[1], benchmark=sample_catalog[0])
    routes = _page_routes()
    assert "submissions/<int:pk>/" in routes and "systems/<int:pk>/description/" in routes
    failures = []
    for who, submission in (("submitter", draft), ("chair", in_review)):
        client = _web(role_users[who])
        fills = {"pk": str(submission.pk), "number": "1", "position": "0", "model_id": "llama3_1-8b"}
        for route in routes:
            url = "/" + re.sub(r"<(?:\w+:)?(\w+)>", lambda m, fills=fills: fills.get(m.group(1), "1"), route)
            for value in ("99999999999999999999", "²", "2147483648"):
                data = {name: value for name in PAGE_PARAMS}
                for method in ("GET", "POST"):
                    with (
                        transaction.atomic()
                    ):  # each request sees the same objects (no withdrawal in between)
                        if method == "GET":
                            response = client.get(url, data)
                        else:
                            form = urlencode(data)
                            response = client.post(
                                url, form, content_type="application/x-www-form-urlencoded"
                            )
                        transaction.set_rollback(True)
                    if response.status_code >= 500:
                        failures.append(f"{who} {method} {url} {value}")
    assert not failures, "\n".join(failures)


def test_oversized_multipart_or_form_api_bodies_are_json_400s(role_users, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1024
    settings.PORTAL_API_BODY_MAX_BYTES = 64 * 1024
    client = _api(role_users["submitter"])
    multipart = client.post("/api/v1/systems/", {"name": "x" * 5000}, format="multipart")
    assert multipart.status_code == 400 and multipart.json()["code"] == "body-too-large"
    form = client.post(
        "/api/v1/submissions/",
        urlencode({"title": "x" * 70_000}),
        content_type="application/x-www-form-urlencoded",
    )
    assert form.status_code == 400 and form.json()["code"] == "body-too-large"


@pytest.mark.parametrize("depth", [100_000, 900])
def test_a_deeply_nested_system_desc_file_is_refused_not_a_500(role_users, system, depth):
    # Deep under a key the schema leaves free: the schema passes, json.dumps on the way to the database recursed.
    text = json.dumps(sample_system_desc())[:-1] + ', "notes": ' + "[" * depth + "]" * depth + "}"
    response = _api(role_users["submitter"]).post(
        f"/api/v1/systems/{system.pk}/description/", {"system_desc": _json_file(text)}, format="multipart"
    )
    assert response.status_code == 400, response.content[:300]
    assert response.json()["code"] == "system-desc-invalid"
    rule = response.json()["problems"][0]["rule"]
    # too deep for the checker's loader to parse (json-syntax), or parsed and then refused (json-too-deep)
    assert rule in ("json-syntax", "json-too-deep")
