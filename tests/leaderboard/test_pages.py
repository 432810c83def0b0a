"""The public leaderboard pages per actor: home, benchmark board with filters, result page (retracted kept and
marked), compare, a system's history, data downloads; the submitter's publication choice; challenges; query
counts that do not grow with the number of results; nothing unpublished on any public page."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from leaderboard.models import Challenge, Publication
from tests.factories import (
    AttestationFactory,
    BenchmarkFactory,
    PublicationFactory,
    SubmissionFactory,
    SystemFactory,
    WaiverFactory,
)
from tests.leaderboard.support import publish

pytestmark = pytest.mark.django_db

HIDDEN = "Unreleased-Z9"


def _client(user=None) -> Client:
    client = Client()
    if user is not None:
        client.force_login(user)
    return client


@pytest.fixture
def world(role_users, storage_dir):
    """Two published results and a retracted one on one benchmark, plus a hidden system under embargo, an
    audited one and a draft (all three named Unreleased-Z9)."""
    benchmark = BenchmarkFactory(model_id="bench-8b", display_name="Bench 8B")
    acme = role_users["organisations"]["acme"]
    nimbus = role_users["organisations"]["nimbus"]
    first = publish(benchmark=benchmark, organisation=acme, scale=2.0, days_ago=3)
    second = publish(benchmark=benchmark, organisation=nimbus, scale=1.0, division="open")
    retracted = publish(benchmark=benchmark, organisation=nimbus, scale=5.0, retracted=True)
    hidden_system = SystemFactory(organisation=acme, name=HIDDEN, description={"system_name": HIDDEN})
    embargoed = PublicationFactory(
        scheduled=True, submission__system=hidden_system, submission__benchmark=benchmark
    )
    SubmissionFactory(status="audited", system=hidden_system, benchmark=benchmark)
    SubmissionFactory(status="draft", system=hidden_system, benchmark=benchmark)
    return {
        "benchmark": benchmark,
        "first": first,
        "second": second,
        "retracted": retracted,
        "embargoed": embargoed,
        "hidden_system": hidden_system,
    }


def _public_pages(w) -> list[str]:
    b = w["benchmark"].model_id
    ids = f"{w['first'].public_id},{w['second'].public_id}"
    return [
        "/",
        "/leaderboard/",
        f"/leaderboard/{b}/",
        f"/leaderboard/{b}/?division=open",
        f"/leaderboard/{b}/compare/?ids={ids}",
        f"/results/{w['first'].public_id}/",
        f"/results/{w['retracted'].public_id}/",
        f"/results/{w['first'].public_id}/points.json",
        f"/results/{w['first'].public_id}/points.csv",
        f"/systems/{w['first'].submission.system_id}/history/",
    ]


@pytest.mark.parametrize("actor", ["anonymous", "submitter", "reviewer", "auditor", "chair"])
def test_public_pages_answer_everyone_and_never_show_unpublished(actor, role_users, world):
    client = _client(role_users[actor])
    for url in _public_pages(world):
        response = client.get(url)
        assert response.status_code == 200, (url, actor)
        assert HIDDEN not in response.content.decode(), (url, actor)
        assert world["embargoed"].public_id not in response.content.decode(), (url, actor)


@pytest.mark.parametrize("actor", ["anonymous", "submitter", "auditor", "chair"])
def test_unpublished_results_and_systems_have_no_public_page(actor, role_users, world):
    client = _client(role_users[actor])
    assert client.get(f"/results/{world['embargoed'].public_id}/").status_code == 404
    assert client.get(f"/results/{world['embargoed'].public_id}/points.json").status_code == 404
    assert client.get(f"/systems/{world['hidden_system'].pk}/history/").status_code == 404
    assert client.get("/leaderboard/no-such-model/").status_code == 404


def test_home_counts_published_results_and_lists_the_latest(world):
    page = _client().get("/").content.decode()
    assert 'data-published-count="bench-8b">2<' in page  # the retracted one is not counted
    assert world["first"].public_id in page and world["second"].public_id in page
    assert world["retracted"].public_id not in page


def test_home_keeps_the_dashboard_link_for_signed_in_users(role_users, world):
    assert "/dashboard/" in _client(role_users["submitter"]).get("/").content.decode()


def test_the_board_ranks_curves_and_filters(world):
    b = world["benchmark"].model_id
    response = _client().get(f"/leaderboard/{b}/")
    page = response.content.decode()
    spec = response.context["spec"]
    assert [s["id"] for s in spec["series"]] == [world["first"].public_id, world["second"].public_id]
    assert world["retracted"].public_id not in page  # out of the rankings
    for series in spec["series"]:  # the step vertices are measured coordinates only
        measured_x = {p["x"] for p in series["points"]}
        measured_y = {p["y"] for p in series["points"]}
        assert series["steps"] and all(x in measured_x and y in measured_y for x, y in series["steps"])
    open_only = _client().get(f"/leaderboard/{b}/?division=open").context["spec"]
    assert [s["id"] for s in open_only["series"]] == [world["second"].public_id]
    acme = _client().get(f"/leaderboard/{b}/?organisation=acmecompute").context["spec"]
    assert [s["id"] for s in acme["series"]] == [world["first"].public_id]
    assert (
        "No published result matches" in _client().get(f"/leaderboard/{b}/?power=measured").content.decode()
    )


def test_agentic_boards_use_end_to_end_interactivity(role_users, storage_dir):
    benchmark = BenchmarkFactory(workload="agentic")
    publish(benchmark=benchmark)
    spec = _client().get(f"/leaderboard/{benchmark.model_id}/").context["spec"]
    assert spec["x"]["key"] == "e2e_interactivity"


def test_the_result_page_shows_provenance_power_and_downloads(role_users, world):
    publication = world["first"]
    AttestationFactory(submission=publication.submission, version=publication.version)
    WaiverFactory(version=publication.version, status="granted", rule="accuracy-sample-count")
    page = _client().get(f"/results/{publication.public_id}/").content.decode()
    assert publication.version.sha256 in page
    assert "every point recomputed from its raw log" in page.lower()
    assert "accuracy-sample-count" in page
    assert "Reviewed by 0 organisations, audited on" in page
    assert f"/results/{publication.public_id}/files/0/" in page
    download = _client().get(f"/results/{publication.public_id}/files/0/")
    assert download.status_code == 200
    assert b"".join(download.streaming_content)
    data = json.loads(_client().get(f"/results/{publication.public_id}/points.json").content)
    assert data["bundle_sha256"] == publication.version.sha256 and len(data["points"]) == 8
    rows = list(
        csv.DictReader(
            io.StringIO(_client().get(f"/results/{publication.public_id}/points.csv").content.decode())
        )
    )
    assert [int(r["concurrency"]) for r in rows] == [1, 2, 4, 8, 16, 32, 64, 128]


def test_a_retracted_result_keeps_its_page_marked(world):
    page = _client().get(f"/results/{world['retracted'].public_id}/").content.decode()
    assert "Retracted on" in page and "The load points do not reproduce." in page


def test_compare_takes_two_to_four_results_of_the_benchmark(world):
    b = world["benchmark"].model_id
    assert _client().get(f"/leaderboard/{b}/compare/?ids={world['first'].public_id}").status_code == 400
    assert (
        _client()
        .get(f"/leaderboard/{b}/compare/?ids={world['first'].public_id},{world['embargoed'].public_id}")
        .status_code
        == 400
    )
    response = _client().get(
        f"/leaderboard/{b}/compare/?ids={world['first'].public_id}&ids={world['second'].public_id}"
    )
    assert response.status_code == 200 and len(response.context["charts"][0]["series"]) == 2


def test_history_lists_a_systems_published_results_over_time(world):
    system = world["first"].submission.system
    later = publish(benchmark=world["benchmark"], system=system, scale=3.0)
    response = _client().get(f"/systems/{system.pk}/history/")
    assert [s["id"] for s in response.context["groups"][0]["spec"]["series"]] == [
        world["first"].public_id,
        later.public_id,
    ]


def test_queries_per_page_do_not_grow_with_the_number_of_results(world):
    b = world["benchmark"]
    pages = ["/", "/leaderboard/", f"/leaderboard/{b.model_id}/", f"/results/{world['first'].public_id}/"]

    def counts():
        out = []
        for url in pages:
            with CaptureQueriesContext(connection) as queries:
                assert _client().get(url).status_code == 200
            out.append(len(queries))
        return out

    before = counts()
    for _ in range(5):
        publish(benchmark=b)
    after = counts()
    assert after == before and max(after) <= 10, (before, after)


# --- The submitter's choice, challenges ---------------------------------------------------------------


def test_the_submitter_chooses_the_cohort_and_then_sees_the_public_link(role_users, storage_dir):
    acme = role_users["organisations"]["acme"]
    submission = SubmissionFactory(status="audited", system=SystemFactory(organisation=acme))
    client = _client(role_users["submitter"])
    page = client.get(f"/submissions/{submission.pk}/").content.decode()
    assert "In the next cohort" in page and "US Pacific" in page
    assert (
        "When should this audited result"
        not in _client(role_users["auditor"]).get(f"/submissions/{submission.pk}/").content.decode()
    )
    client.post(f"/leaderboard/submissions/{submission.pk}/publish/", {"mode": "cohort"})
    publication = Publication.objects.get(submission=submission)
    assert publication.status == "scheduled" and publication.mode == "cohort"
    assert _client().get(f"/results/{publication.public_id}/").status_code == 404
    client.post(f"/leaderboard/submissions/{submission.pk}/publish/", {"mode": "now"})
    publication.refresh_from_db()
    assert publication.status == "published"
    page = client.get(f"/submissions/{submission.pk}/").content.decode()
    assert f'href="/results/{publication.public_id}/"' in page


def test_others_cannot_choose_the_date(role_users, storage_dir):
    acme = role_users["organisations"]["acme"]
    submission = SubmissionFactory(status="audited", system=SystemFactory(organisation=acme))
    for actor in ("reviewer", "auditor", "chair"):
        response = _client(role_users[actor]).post(
            f"/leaderboard/submissions/{submission.pk}/publish/", {"mode": "now"}
        )
        assert response.status_code in (302, 404)
    assert not Publication.objects.filter(submission=submission).exists()


def test_a_member_challenges_and_the_chair_retracts_from_the_page(role_users, world):
    publication = world["first"]
    url = f"/results/{publication.public_id}/"
    assert "Challenge this result" not in _client().get(url).content.decode()
    assert "Challenge this result" in _client(role_users["reviewer"]).get(url).content.decode()
    _client(role_users["reviewer"]).post(f"{url}challenge/", {"reason": "The c64 point does not reproduce."})
    challenge = Challenge.objects.get(publication=publication)
    chair_page = _client(role_users["chair"]).get(url).content.decode()
    assert "Resolve challenge" in chair_page
    assert "Resolve challenge" not in _client(role_users["reviewer"]).get(url).content.decode()
    _client(role_users["reviewer"]).post(
        f"/results/challenges/{challenge.pk}/resolve/", {"outcome": "retracted", "text": "x"}
    )
    challenge.refresh_from_db()
    assert challenge.status == "open"
    _client(role_users["chair"]).post(
        f"/results/challenges/{challenge.pk}/resolve/", {"outcome": "retracted", "text": "Not reproducible."}
    )
    publication.refresh_from_db()
    assert publication.is_retracted
    assert "Retracted on" in _client().get(url).content.decode()
    board = _client().get(f"/leaderboard/{world['benchmark'].model_id}/").context["spec"]
    assert publication.public_id not in [s["id"] for s in board["series"]]
