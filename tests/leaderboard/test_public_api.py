"""The public API (/api/v1/public/...): read-only without login, only published results in every format,
paginated with a maximum page size, cached and invalidated on publication, annotation and retraction, ETag and
Last-Modified with 304s, a fixed number of queries whatever the number of results, in the OpenAPI schema."""

from __future__ import annotations

import csv
import io

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from leaderboard.api.results import MAX_PAGE_SIZE
from leaderboard.board.cache import public_cache_bump
from leaderboard.publishing import services
from tests.factories import BenchmarkFactory, PublicationFactory, SubmissionFactory, SystemFactory
from tests.leaderboard.support import make_curve, publish

pytestmark = pytest.mark.django_db

SLO = "/api/v1/public/slo/?benchmark=api-model&ttft_p90_ms_max=100000&interactivity_min=0"
PROCUREMENT = "/api/v1/public/procurement/?model_1=api-model&ttft_p90_ms_max_1=100000"
LISTS = [
    "/api/v1/public/benchmarks/",
    "/api/v1/public/results/",
    "/api/v1/public/points/",
    "/api/v1/public/curves/",
    SLO,
    PROCUREMENT,
]


@pytest.fixture(autouse=True)
def _fresh_public_cache():
    public_cache_bump()


@pytest.fixture
def benchmark():
    return BenchmarkFactory(model_id="api-model")


@pytest.fixture
def hidden(benchmark, role_users):
    """Everything the public must never see: an embargoed result (scheduled publication with a snapshot), an
    audited one without a publication, a draft; all named so a leak is easy to spot."""
    acme = role_users["organisations"]["acme"]
    scheduled = PublicationFactory(
        scheduled=True,
        submission__benchmark=benchmark,
        submission__system=SystemFactory(organisation=acme, name="Unreleased-Z9"),
        curve=make_curve("Unreleased-Z9", "api-model", scale=30.0),
        public_id="EP-HIDDEN1",
    )
    SubmissionFactory(audited=True, benchmark=benchmark, system=SystemFactory(name="Audited-Secret"))
    SubmissionFactory(draft=True, benchmark=benchmark, system=SystemFactory(name="Draft-Secret"))
    return scheduled


def _csv_rows(response) -> list[dict]:
    return list(csv.DictReader(io.StringIO(response.content.decode())))


@pytest.mark.parametrize("url", LISTS)
@pytest.mark.parametrize("fmt", ["json", "csv"])
@pytest.mark.parametrize("who", ["anonymous", "submitter", "auditor", "chair"])
def test_nothing_unpublished_appears_in_any_list_or_format(url, fmt, who, benchmark, hidden, role_users):
    shown = publish(benchmark=benchmark)
    client = Client()
    if (
        who != "anonymous"
    ):  # the owner, an auditor and the chair see the embargoed result elsewhere, never here
        client.force_login(role_users[who])
    response = client.get(url + ("&" if "?" in url else "?") + f"format={fmt}")
    assert response.status_code == 200, response.content[:300]
    text = response.content.decode()
    for secret in ("Unreleased-Z9", "EP-HIDDEN1", "Audited-Secret", "Draft-Secret"):
        assert secret not in text, (url, fmt, who, secret)
    if "benchmarks" not in url:
        assert shown.public_id in text
    if fmt == "csv":
        assert response["Content-Type"].startswith("text/csv")
        assert response["Content-Disposition"].startswith("attachment")
        assert _csv_rows(response)


def test_an_unpublished_result_is_404_for_everyone(benchmark, hidden, role_users):
    for who in (None, "submitter", "auditor", "chair"):
        client = Client()
        if who:
            client.force_login(role_users[who])
        for suffix in ("", "?format=csv"):
            response = client.get(f"/api/v1/public/results/EP-HIDDEN1/{suffix}")
            assert response.status_code == 404 and "Unreleased" not in response.content.decode()
    assert Client().get("/api/v1/public/results/EP-HIDDEN1/").json()["code"] == "not_found"


def test_result_detail_has_points_curve_provenance_and_csv_of_its_points(benchmark):
    publication = publish(benchmark=benchmark)
    body = Client().get(f"/api/v1/public/results/{publication.public_id}/").json()
    assert body["bundle_sha256"] == publication.version.sha256
    assert body["result_url"] == f"/results/{publication.public_id}/"
    assert [p["point"] for p in body["points"]] == [p["point"] for p in publication.curve["points"]]
    assert body["pareto"]["tps_per_user"]["steps"] == publication.curve["pareto"]["tps_per_user"]["steps"]
    assert body["accelerators"] == 8
    rows = _csv_rows(Client().get(f"/api/v1/public/results/{publication.public_id}.csv"))
    assert [r["point"] for r in rows] == [p["point"] for p in publication.curve["points"]]
    assert {r["bundle_sha256"] for r in rows} == {publication.version.sha256}


def test_retracted_results_are_flagged_in_results_and_leave_the_slo_ranking(benchmark, role_users):
    kept = publish(benchmark=benchmark)
    gone = publish(benchmark=benchmark, scale=5.0)
    services.publication_retract(publication=gone, actor=role_users["chair"], reason="Not reproducible.")
    results = {r["public_id"]: r for r in Client().get("/api/v1/public/results/").json()["results"]}
    assert results[gone.public_id]["retracted"] is True and results[kept.public_id]["retracted"] is False
    ranked = Client().get("/api/v1/public/results/?retracted=false").json()["results"]
    assert [r["public_id"] for r in ranked] == [kept.public_id]
    slo = Client().get(SLO).json()["results"]
    assert [r["public_id"] for r in slo] == [kept.public_id]
    counts = Client().get("/api/v1/public/benchmarks/api-model/").json()
    assert counts["published_results"] == 2 and counts["ranked_results"] == 1


def test_pages_have_a_maximum_size(benchmark):
    for scale in (1.0, 2.0, 3.0):
        publish(benchmark=benchmark, scale=scale)
    body = Client().get("/api/v1/public/points/?limit=5").json()
    assert body["count"] == 24 and len(body["results"]) == 5 and "offset=5" in body["next"]
    body = Client().get(f"/api/v1/public/points/?limit={MAX_PAGE_SIZE * 10}").json()
    assert len(body["results"]) == 24
    from leaderboard.api.results import PublicPagination

    assert PublicPagination().max_limit == MAX_PAGE_SIZE


def test_the_api_is_read_only(benchmark):
    publish(benchmark=benchmark)
    for url in ("/api/v1/public/results/", "/api/v1/public/slo/"):
        assert Client().post(url, {}).status_code == 405


def test_cached_answers_change_on_publication_annotation_and_retraction(
    benchmark, role_users, django_capture_on_commit_callbacks
):
    first = publish(benchmark=benchmark)
    client = Client()
    before = client.get("/api/v1/public/results/")
    assert [r["public_id"] for r in before.json()["results"]] == [first.public_id]
    # a row added behind the services' back is not seen: the answer comes from the cache
    sneaked = publish(benchmark=benchmark)
    assert client.get("/api/v1/public/results/").content == before.content

    submission = SubmissionFactory(
        audited=True,
        benchmark=benchmark,
        system=SystemFactory(organisation=role_users["organisations"]["acme"]),
    )
    with django_capture_on_commit_callbacks(execute=True):
        published = services.publication_schedule(
            submission=submission, actor=role_users["submitter"], mode="now"
        )
    after = {r["public_id"] for r in client.get("/api/v1/public/results/").json()["results"]}
    assert after == {first.public_id, sneaked.public_id, published.public_id}

    detail = f"/api/v1/public/results/{first.public_id}/"
    assert client.get(detail).json()["annotations"] == []
    with django_capture_on_commit_callbacks(execute=True):
        services.annotation_add(publication=first, actor=role_users["chair"], text="Dataset revision noted.")
    assert [a["text"] for a in client.get(detail).json()["annotations"]] == ["Dataset revision noted."]

    with django_capture_on_commit_callbacks(execute=True):
        services.publication_retract(
            publication=first, actor=role_users["chair"], reason="Withdrawn by the chair."
        )
    assert client.get(detail).json()["retracted"] is True


def test_etag_and_last_modified_answer_304_until_something_is_published(
    benchmark, role_users, django_capture_on_commit_callbacks
):
    publish(benchmark=benchmark)
    client = Client()
    response = client.get("/api/v1/public/results/")
    etag, modified = response["ETag"], response["Last-Modified"]
    assert etag and modified and "no-cache" in response["Cache-Control"]
    assert client.get("/api/v1/public/results/", HTTP_IF_NONE_MATCH=etag).status_code == 304
    assert client.get("/api/v1/public/results/", HTTP_IF_MODIFIED_SINCE=modified).status_code == 304
    assert client.get("/api/v1/public/results/", HTTP_IF_NONE_MATCH='"other"').status_code == 200
    csv_etag = client.get("/api/v1/public/results/?format=csv")["ETag"]
    assert csv_etag != etag  # another representation, another tag

    submission = SubmissionFactory(
        audited=True,
        benchmark=benchmark,
        system=SystemFactory(organisation=role_users["organisations"]["acme"]),
    )
    with django_capture_on_commit_callbacks(execute=True):
        services.publication_schedule(submission=submission, actor=role_users["submitter"], mode="now")
    fresh = client.get("/api/v1/public/results/", HTTP_IF_NONE_MATCH=etag)
    assert fresh.status_code == 200 and fresh["ETag"] != etag


ENDPOINTS = [
    *LISTS,
    "/api/v1/public/benchmarks/api-model/",
    "/api/v1/public/results/?format=csv",
    "/api/v1/public/points/?benchmark=api-model&format=csv",
    "/leaderboard/slo/?benchmark=api-model&ttft_p90_ms_max=100000&interactivity_min=0",
    "/leaderboard/procurement/?model_1=api-model&ttft_p90_ms_max_1=100000",
]


def _queries(url: str) -> int:
    public_cache_bump()  # measure the uncached answer
    with CaptureQueriesContext(connection) as captured:
        response = Client().get(url)
    assert response.status_code == 200, (url, response.content[:200])
    return len(captured)


@pytest.mark.parametrize("url", ENDPOINTS)
def test_queries_do_not_grow_with_the_number_of_results(url, benchmark):
    publish(benchmark=benchmark)
    few = _queries(url)
    for scale in range(2, 12):
        publish(benchmark=benchmark, scale=float(scale))
    many = _queries(url)
    assert many == few and many <= 10, (url, few, many)


def test_result_detail_queries_are_fixed(benchmark):
    publication = publish(benchmark=benchmark)
    for scale in range(2, 6):
        publish(benchmark=benchmark, scale=float(scale))
    assert _queries(f"/api/v1/public/results/{publication.public_id}/") <= 10


def test_every_public_endpoint_is_in_the_openapi_schema():
    schema = Client().get("/api/schema/?format=json").json()
    for path in (
        "/api/v1/public/benchmarks/",
        "/api/v1/public/benchmarks/{model_id}/",
        "/api/v1/public/results/",
        "/api/v1/public/results/{public_id}/",
        "/api/v1/public/points/",
        "/api/v1/public/curves/",
        "/api/v1/public/slo/",
        "/api/v1/public/procurement/",
    ):
        assert path in schema["paths"], path
    slo = schema["paths"]["/api/v1/public/slo/"]["get"]
    names = {p["name"] for p in slo["parameters"]}
    assert {
        "benchmark",
        "ttft_p90_ms_max",
        "interactivity_min",
        "power_kw_max",
        "accelerators_max",
        "limit",
    } <= names
    assert "security" not in slo or {} in slo["security"]


def test_response_memo_keeps_the_newest_entries_within_its_byte_budget():
    from leaderboard.board.cache import _ResponseMemo

    memo = _ResponseMemo(max_bytes=1000)
    for name in "abcd":
        memo.put(name, {"content": b"x" * 240})
    assert memo.get("a") is not None  # a is now the most recently used
    memo.put("e", {"content": b"x" * 240})  # 1200 bytes: the least recently used (b) goes
    assert memo.get("b") is None
    assert [memo.get(n) is not None for n in "acde"] == [True, True, True, True]
    assert memo.size <= 1000
    memo.put("huge", {"content": b"x" * 300})  # over a quarter of the budget: never kept
    assert memo.get("huge") is None


def test_a_cleared_cache_never_repeats_a_generation(db):
    from django.core.cache import cache

    from leaderboard.board.cache import _namespace, public_generation

    before, _ = public_generation()
    cache.delete_many([f"{_namespace()}:generation", f"{_namespace()}:changed"])
    after, _ = public_generation()
    assert after != before


def test_the_boards_csv_lists_the_results_in_the_boards_order_with_their_rank(benchmark, settings):
    import re

    settings.PORTAL_SITE_URL = "https://portal.example.org"
    middle = publish(benchmark=benchmark, scale=1.5, days_ago=3)
    low = publish(
        benchmark=benchmark, scale=1.0, days_ago=1
    )  # the newest: publication order is not rank order
    top = publish(benchmark=benchmark, scale=2.0, days_ago=2)
    claimed = publish(benchmark=benchmark, scale=3.0, claimed=True)  # highest peak, but not ranked by default
    page = Client().get(f"/leaderboard/{benchmark.model_id}/").content.decode()
    board_order = re.findall(r'<code class="small">(EP-[A-Za-z0-9]+)</code>', page)
    assert board_order == [top.public_id, middle.public_id, low.public_id]
    link = re.search(r'href="([^"]+format=csv[^"]*)"', page).group(1).replace("&amp;", "&")
    assert link.startswith("https://portal.example.org/api/v1/public/results/?") and "order=rank" in link
    body = Client().get(link.removeprefix("https://portal.example.org")).content.decode()
    rows = list(csv.DictReader(io.StringIO(body)))
    assert list(rows[0])[0] == "rank"
    assert [(r["rank"], r["public_id"]) for r in rows] == [
        ("1", top.public_id),
        ("2", middle.public_id),
        ("3", low.public_id),
        ("", claimed.public_id),
    ]
    refused = Client().get("/api/v1/public/results/?order=rank")
    assert refused.status_code == 400 and "benchmark=" in refused.json()["detail"]
