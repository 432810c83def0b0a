"""One edge-case suite over every route of the URL conf: every query parameter the code reads (found by reading
the source, so a new parameter is covered the day it is added) with hostile values, and every API route with
format suffixes, for the anonymous public, a submitter and the chair. Nothing may answer 5xx.

Each row of the issue's fuzzing walk was a 500 before: `.json` on a custom API action (`files/0.json`,
`chair/dashboard.json`, `review-versions/N/diff.json`), `?revision=²` on result pages and exports, `?a=²` on
the version comparison."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.db import transaction
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver

from tests.factories import PublicationFactory, SubmissionFactory, SubmissionVersionFactory

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]
APPS = ("accounts", "audit", "catalog", "leaderboard", "review", "submissions", "portal", "access")

# request.GET.get("x"), request.query_params.getlist("x"), params.get("x") ... in the portal's own code.
_PARAM_READ = re.compile(r"""(?:GET|query_params|params|query)\.(?:get|getlist)\(\s*["']([a-z_0-9]+)["']""")

HOSTILE = ("²", "١٢", "99999999999999999999", "-1", "", "0x1F", "1e309", "NaN", "../../etc/passwd")
SUFFIXES = ("json", "api", "csv", "txt")


# Read through a variable (`for side in ("a", "b")`) or by DRF itself (pagination, format override).
INDIRECT = ("a", "b", "limit", "offset", "format", "ordering", "search", "cursor")


def _filterset_parameters() -> set[str]:
    """The query parameters of every API list's FilterSet (django-filter reads them, not our code)."""
    from portal.urls import router

    names = set()
    for _, viewset, _ in router.registry:
        filterset = getattr(viewset, "filterset_class", None)
        if filterset is not None:
            names.update(filterset.base_filters)
    return names


def query_parameters() -> list[str]:
    names = set(INDIRECT) | _filterset_parameters()
    for app in APPS:
        for path in (ROOT / app).rglob("*.py"):
            if "migrations" in path.parts:
                continue
            names.update(_PARAM_READ.findall(path.read_text()))
    return sorted(names)


def routes() -> list[str]:
    found = []

    def walk(patterns, prefix):
        for pattern in patterns:
            route = prefix + str(pattern.pattern)
            if isinstance(pattern, URLResolver):
                walk(pattern.url_patterns, route)
            elif isinstance(pattern, URLPattern):
                found.append(route)

    walk(get_resolver().url_patterns, "")
    # (the admin is Django's; logging out would end the session for every route after it)
    return [route for route in found if not route.startswith("admin/") and "logout" not in route]


def url_of(route: str, fills: dict[str, str], suffix: str = "json") -> str:
    """A concrete path for a route, path converters (`<int:pk>`) and the router's regexes alike."""
    path = re.sub(r"<(?:\w+:)?(\w+)>", lambda m: fills.get(m.group(1), "1"), route)
    path = re.sub(
        r"\(\?P<(\w+)>[^)]*\)",
        lambda m: suffix if m.group(1) == "format" else fills.get(m.group(1), "1"),
        path,
    )
    path = path.replace("^", "").replace("/?$", "/").replace("$", "").replace("\\.", ".")
    return "/" + path


@pytest.fixture
def world(role_users, sample_catalog):
    benchmark, system = sample_catalog
    publication = PublicationFactory(
        submission=SubmissionFactory(published=True, system=system, benchmark=benchmark)
    )
    in_review = SubmissionFactory(in_review=True, system=system, benchmark=benchmark)
    SubmissionVersionFactory(submission=in_review)
    return {
        "publication": publication,
        "fills": {
            "pk": str(in_review.pk),
            "id": str(in_review.pk),
            "number": "1",
            "position": "0",
            "index": "1",
            "model_id": benchmark.model_id,
            "public_id": publication.public_id,
            "system_id": str(system.pk),
            "slug": "acmecompute",
        },
    }


def _client(user) -> Client:
    client = Client(raise_request_exception=False)
    if user is not None:
        client.force_login(user)
    return client


def test_the_suite_reads_the_parameters_and_routes_the_issue_named():
    names = query_parameters()
    for expected in ("revision", "version", "a", "b", "ids", "page", "limit", "offset"):
        assert expected in names, expected
    found = routes()
    assert "results/<str:public_id>/points.csv" in found
    assert any("review-versions" in route and "diff" in route for route in found)


def test_every_route_survives_hostile_values_in_every_query_parameter(role_users, world):
    names = query_parameters()
    failures = []
    for who in ("anonymous", "submitter", "chair"):
        client = _client(role_users[who])
        for route in routes():
            url = url_of(route, world["fills"])
            for value in HOSTILE:
                # every parameter at once, and the first one repeated (`?a=1&a=²`)
                query = {name: value for name in names}
                query[names[0]] = ["1", value]
                with transaction.atomic():
                    response = client.get(url, query)
                    transaction.set_rollback(True)
                if response.status_code >= 500:
                    failures.append(f"{who} GET {url} ={value!r}: {response.status_code}")
    assert not failures, "\n".join(failures[:40])


def test_every_api_route_takes_any_format_suffix_without_a_server_error(role_users, world):
    api_routes = [route for route in routes() if route.startswith("api/v1/") and "(?P<format>" in route]
    assert len(api_routes) > 40
    failures = []
    for who in ("anonymous", "submitter", "chair"):
        client = _client(role_users[who])
        for route in api_routes:
            for suffix in SUFFIXES:
                url = url_of(route, world["fills"], suffix)
                with transaction.atomic():
                    response = client.get(url)
                    transaction.set_rollback(True)
                if response.status_code >= 500:
                    failures.append(f"{who} GET {url}: {response.status_code}")
    assert not failures, "\n".join(failures[:40])


def test_a_json_suffix_on_a_custom_action_answers_what_the_plain_route_answers(role_users, world):
    chair = _client(role_users["chair"])
    plain = chair.get("/api/v1/chair/dashboard/")
    suffixed = chair.get("/api/v1/chair/dashboard.json")
    assert plain.status_code == 200
    assert suffixed.status_code == 200 and suffixed.json() == plain.json()
    # `.api` is the browsable API; an unknown format is the API's JSON 404, not a page and not a 500
    assert chair.get("/api/v1/chair/dashboard.api").status_code == 200
    unknown = chair.get("/api/v1/chair/dashboard.txt")
    assert unknown.status_code == 404 and unknown.json()["code"] == "not_found"


@pytest.mark.parametrize(
    "path",
    [
        "/results/{public_id}/?revision=%C2%B2",
        "/results/{public_id}/points.json?revision=%C2%B2",
        "/results/{public_id}/points.csv?revision=%C2%B2",
        "/api/v1/public/results/{public_id}/?revision=%C2%B2",
    ],
)
def test_a_unicode_digit_revision_is_a_404_not_a_500(world, path):
    response = Client(raise_request_exception=False).get(
        path.format(public_id=world["publication"].public_id)
    )
    assert response.status_code == 404
