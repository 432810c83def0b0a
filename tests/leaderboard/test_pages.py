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

from accounts.selectors import user_org_ids
from leaderboard.board.cache import public_cache_bump
from leaderboard.models import Challenge, Publication
from leaderboard.publishing import services
from portal.errors import NotAllowedError
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
    benchmark = BenchmarkFactory(workload="agentic_coding")
    publish(benchmark=benchmark)
    spec = _client().get(f"/leaderboard/{benchmark.model_id}/").context["spec"]
    assert spec["x"]["key"] == "e2e_interactivity"


def test_the_result_page_shows_provenance_power_and_downloads(role_users, world):
    publication = world["first"]
    AttestationFactory(submission=publication.submission, version=publication.version)
    # A waiver granted after publication is not part of the published record (it is frozen when published).
    WaiverFactory(version=publication.version, status="granted", rule="accuracy-sample-count")
    page = _client().get(f"/results/{publication.public_id}/").content.decode()
    assert publication.version.sha256 in page
    assert "all 8 points recomputed from their raw logs" in page.lower()
    assert "accuracy-sample-count" not in page
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


def _query_counts(pages: list[str], client: Client) -> list[int]:
    out = []
    for url in pages:
        with CaptureQueriesContext(connection) as queries:
            assert client.get(url).status_code == 200, url
        out.append(len(queries))
    return out


@pytest.mark.parametrize("actor", ["anonymous", "reviewer"])
def test_queries_per_page_do_not_grow_with_the_number_of_results(actor, role_users, world):
    b = world["benchmark"]
    first, second = world["first"], world["second"]
    pages = [
        "/",
        "/leaderboard/",
        f"/leaderboard/{b.model_id}/",
        f"/leaderboard/{b.model_id}/?division=open&page=2",
        f"/leaderboard/{b.model_id}/compare/?ids={first.public_id},{second.public_id}",
        f"/results/{first.public_id}/",
        f"/systems/{first.submission.system_id}/history/",
    ]
    client = _client(role_users[actor])
    client.get("/leaderboard/")  # the session and the user are loaded once for every page alike
    public_cache_bump()  # uncached renders
    before = _query_counts(pages, client)
    cached_before = _query_counts(pages, client)
    for _ in range(12):  # past the ten drawn curves
        publish(benchmark=b)
    publish(benchmark=b, system=first.submission.system)
    public_cache_bump()
    after = _query_counts(pages, client)
    cached_after = _query_counts(pages, client)
    assert after == before and cached_after == cached_before, (before, after, cached_before, cached_after)
    if actor == "anonymous":  # a whole cached response: not one query
        assert max(after) <= 10 and max(cached_after) == 0, (after, cached_after)
    else:  # the visitor's header (session, user, organisations, roles, unread count) around the cached body
        header = cached_after[0]
        body = [u - c for u, c in zip(after, cached_after, strict=True)]
        assert min(body) > 0 and max(body) <= 10, (after, cached_after)
        # per visitor besides the header: a result page's challenges (who may see, raise and resolve them)
        assert max(c - header for c in cached_after) <= 6, cached_after


# --- The submitter's choice, challenges ---------------------------------------------------------------


def test_the_submitter_chooses_the_cohort_and_then_sees_the_public_link(role_users, storage_dir):
    acme = role_users["organisations"]["acme"]
    submission = SubmissionFactory(status="audited", system=SystemFactory(organisation=acme))
    client = _client(role_users["submitter"])
    page = client.get(f"/submissions/{submission.pk}/").content.decode()
    assert "In the next cohort" in page and ", 08:00 US Pacific (" in page  # shown in Pacific time, not UTC
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


def test_a_member_challenges_and_the_chair_retracts_from_the_page(
    role_users, world, django_capture_on_commit_callbacks
):
    publication = world["first"]
    url = f"/results/{publication.public_id}/"
    assert "Challenge this result" not in _client().get(url).content.decode()
    assert "Challenge this result" in _client(role_users["reviewer"]).get(url).content.decode()
    # The chair opens one from any result page; nobody challenges their own organisation's result, whatever
    # the page shows: the service refuses it.
    assert "Challenge this result" in _client(role_users["chair"]).get(url).content.decode()
    owner = role_users["submitter"]
    assert publication.submission.organisation_id in user_org_ids(owner)
    assert "Challenge this result" not in _client(owner).get(url).content.decode()
    _client(owner).post(f"{url}challenge/", {"reason": "Our own result."})
    with pytest.raises(NotAllowedError):
        services.challenge_raise(publication=publication, actor=owner, reason="Our own result.")
    assert not Challenge.objects.filter(publication=publication).exists()
    with django_capture_on_commit_callbacks(execute=True):  # a new generation of the public pages
        _client(role_users["reviewer"]).post(
            f"{url}challenge/", {"reason": "The c64 point does not reproduce."}
        )
    challenge = Challenge.objects.get(publication=publication)
    # In public: an anonymous visitor reads the challenge, who raised it, and then its resolution.
    anonymous = _client().get(url).content.decode()
    assert "The c64 point does not reproduce." in anonymous and "Open" in anonymous
    assert challenge.organisation.name in anonymous
    chair_page = _client(role_users["chair"]).get(url).content.decode()
    assert "Resolve challenge" in chair_page
    assert "Resolve challenge" not in _client(role_users["reviewer"]).get(url).content.decode()
    _client(role_users["reviewer"]).post(
        f"/results/challenges/{challenge.pk}/resolve/", {"outcome": "retracted", "text": "x"}
    )
    challenge.refresh_from_db()
    assert challenge.status == "open"
    with django_capture_on_commit_callbacks(execute=True):  # the public cache's new generation, on commit
        _client(role_users["chair"]).post(
            f"/results/challenges/{challenge.pk}/resolve/",
            {"outcome": "retracted", "text": "Not reproducible."},
        )
    publication.refresh_from_db()
    assert publication.is_retracted
    anonymous = _client().get(url).content.decode()
    assert "Retracted on" in anonymous
    assert "Resolution: Not reproducible." in anonymous
    board = _client().get(f"/leaderboard/{world['benchmark'].model_id}/").context["spec"]
    assert publication.public_id not in [s["id"] for s in board["series"]]


# --- A large board: the top curves drawn, the table a page at a time, the rest from the public API ------


@pytest.fixture
def small_pages(monkeypatch):
    """A board of 3 drawn curves and 5 rows a page, so a few results show what 1,000 would."""
    from leaderboard.views import public as views

    monkeypatch.setattr(views, "BOARD_DRAWN", 3)
    monkeypatch.setattr(views, "BOARD_PAGE_ROWS", 5)


def test_the_board_draws_the_top_curves_and_pages_the_table(world, small_pages):
    b = world["benchmark"]
    for scale in range(10):
        publish(benchmark=b, scale=0.1 + scale / 100)  # below the world's two
    public_cache_bump()
    response = _client().get(f"/leaderboard/{b.model_id}/")
    page = response.content.decode()
    ranked = response.context["board"].results
    assert len(ranked) == 12
    spec = response.context["spec"]
    assert [s["id"] for s in spec["series"]] == [p.public_id for p in ranked[:3]]  # only these are embedded
    assert "The chart draws the top 3 curves by peak system throughput" in page
    assert "The table lists results 1–5 of 12, 5 a page" in page
    assert [r["rank"] for r in response.context["rows"]] == [1, 2, 3, 4, 5]
    # the picker offers the drawn curves and this page's others, whose curves come from the public API
    assert f'data-series-src="/api/v1/public/results/{ranked[3].public_id}/"' in page
    assert ranked[5].public_id not in page  # on page 2
    detail = _client().get(f"/api/v1/public/results/{ranked[3].public_id}/")
    assert detail.status_code == 200 and detail.json()["pareto"]["tps_per_user"]["steps"]
    second = _client().get(f"/leaderboard/{b.model_id}/?page=2")
    assert [r["rank"] for r in second.context["rows"]] == [6, 7, 8, 9, 10]
    assert [s["id"] for s in second.context["spec"]["series"]] == [p.public_id for p in ranked[:3]]
    assert len(second.context["picker"]) == 3 + 5
    assert 'rel="prev"' in second.content.decode() and 'rel="next"' in second.content.decode()
    last = _client().get(f"/leaderboard/{b.model_id}/?page=99")  # past the end: the last page
    assert [r["rank"] for r in last.context["rows"]] == [11, 12]
    filtered = _client().get(f"/leaderboard/{b.model_id}/?power=provisioned").content.decode()
    assert 'href="?power=provisioned&amp;page=2" rel="next"' in filtered  # the filters stay on every page


def test_the_board_does_not_grow_with_the_number_of_results(world, small_pages):
    b = world["benchmark"]
    for _ in range(8):
        publish(benchmark=b, scale=0.5)
    public_cache_bump()
    before = _client().get(f"/leaderboard/{b.model_id}/")
    for _ in range(20):
        publish(benchmark=b, scale=0.5)
    public_cache_bump()
    after = _client().get(f"/leaderboard/{b.model_id}/")
    for key in ("rows", "picker"):
        assert len(after.context[key]) == len(before.context[key]), key
    assert len(after.context["spec"]["series"]) == 3
    assert abs(len(after.content) - len(before.content)) < 0.1 * len(before.content)


# --- Cached renders: the same body for everyone, the visitor's own header ----------------------------------


def _pages_of(w) -> list[str]:
    b = w["benchmark"].model_id
    return [
        "/",
        "/leaderboard/",
        f"/leaderboard/{b}/",
        f"/leaderboard/{b}/compare/?ids={w['first'].public_id},{w['second'].public_id}",
        f"/results/{w['first'].public_id}/",
        f"/systems/{w['first'].submission.system_id}/history/",
    ]


@pytest.mark.parametrize("actor", ["anonymous", "reviewer"])
def test_public_pages_carry_etag_and_last_modified_and_answer_304(actor, role_users, world):
    client = _client(role_users[actor])
    for url in _pages_of(world):
        response = client.get(url)
        etag, modified = response["ETag"], response["Last-Modified"]
        assert etag and modified, url
        assert "no-cache" in response["Cache-Control"]
        assert ("private" in response["Cache-Control"]) == (actor != "anonymous"), url
        assert "Cookie" in response["Vary"], url
        again = client.get(url, HTTP_IF_NONE_MATCH=etag)
        assert again.status_code == 304 and again["ETag"] == etag, url
        assert client.get(url, HTTP_IF_NONE_MATCH='"other"').status_code == 200, url


def test_pages_are_cached_until_the_public_data_changes(world):
    """A row added behind the services' back is not seen until a new generation starts (the services start one
    when a publication, annotation or retraction commits: test_public_api)."""
    b = world["benchmark"]
    urls = _pages_of(world)
    first = {url: _client().get(url).content for url in urls}
    later = publish(benchmark=b, system=world["first"].submission.system, scale=9.0)
    Publication.objects.filter(pk=world["first"].pk).update(retraction_reason="edited behind the cache")
    assert {url: _client().get(url).content for url in urls} == first
    public_cache_bump()
    assert later.public_id in _client().get(f"/leaderboard/{b.model_id}/").content.decode()
    assert later.public_id in _client().get("/").content.decode()
    history = _client().get(f"/systems/{world['first'].submission.system_id}/history/").content.decode()
    assert later.public_id in history


def test_signed_in_visitors_get_the_cached_body_under_their_own_header(role_users, world):
    url = f"/results/{world['first'].public_id}/"
    anonymous = _client().get(url).content.decode()
    reviewer = _client(role_users["reviewer"]).get(url).content.decode()
    chair = _client(role_users["chair"]).get(url).content.decode()
    assert role_users["reviewer"].username not in anonymous and "Log out" not in anonymous
    assert role_users["reviewer"].username in reviewer and "Challenge this result" in reviewer
    assert role_users["chair"].username in chair and role_users["reviewer"].username not in chair
    body = anonymous.split('<nav class="crumbs"')[1].split("No annotations.</p>")[0]
    assert len(body) > 1000 and body in reviewer and body in chair  # the same cached fragment
    home = _client(role_users["submitter"]).get("/").content.decode()
    assert "Your dashboard" in home and "Log in to submit" in _client().get("/").content.decode()


def test_a_message_is_never_cached_into_the_shared_page(role_users, world):
    client = _client(role_users["submitter"])
    response = client.post("/accounts/logout/", follow=True)  # -> home, with or without a message
    page = response.content.decode()
    for message in response.context["messages"] if response.context else []:
        assert str(message) in page
    shared = _client().get("/").content.decode()
    assert 'class="messages"' not in shared
