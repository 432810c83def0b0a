"""The per-user cache of signed-in pages and API lists (portal/private_cache.py): a repeated request is answered
from the cache, any committed change shows on the next request, and nobody reads another user's entry."""

from __future__ import annotations

import pytest
from django.db import transaction
from django.urls import reverse
from rest_framework.test import APIClient

from portal import private_cache
from submissions.models import Submission
from tests.factories import ApiTokenFactory, SubmissionFactory, SystemFactory, UserFactory


@pytest.fixture
def acme_submission(role_users, settings):
    settings.PORTAL_PRIVATE_CACHE = True
    system = SystemFactory(organisation=role_users["organisations"]["acme"])
    return SubmissionFactory(system=system, title="Baseline r16", draft=True)


def _page(client, path):
    response = client.get(path)
    assert response.status_code == 200
    return response.content.decode(), response.headers.get("X-Portal-Cache")


@pytest.mark.parametrize(
    ("sql", "tracked"),
    [
        ('INSERT INTO "submissions_submission" ("title") VALUES (%s)', True),
        ('UPDATE "submissions_submission" SET "title" = %s', True),
        ('DELETE FROM "review_review" WHERE id = 1', True),
        ('TRUNCATE "audit_auditevent"', True),
        ("WITH x AS (DELETE FROM t RETURNING *) SELECT * FROM x", True),
        ('SELECT "id" FROM "submissions_submission" FOR UPDATE', False),
        ("  select 1", False),
        ('SAVEPOINT "s1"', False),
        ('UPDATE "django_session" SET "expire_date" = %s', False),
        ('UPDATE "accounts_apitoken" SET "last_used_at" = %s WHERE "id" = 3', False),
        ('INSERT INTO "django_session" ("session_key") VALUES (%s)', False),
    ],
)
def test_which_statements_start_a_new_generation(sql, tracked):
    assert private_cache._is_tracked_write(sql) is tracked


@pytest.mark.django_db(transaction=True)
def test_dashboard_repeats_from_the_cache_and_shows_a_committed_change(client, acme_submission, role_users):
    client.force_login(role_users["submitter"])
    path = reverse("submissions:dashboard")
    first, state = _page(client, path)  # sets the CSRF cookie: from now on the page is cacheable
    assert "Baseline r16" in first
    _, state = _page(client, path)
    body, state = _page(client, path)
    assert state == "hit" and "Baseline r16" in body

    # A bulk update, committed: no signal, no service, still a new generation.
    Submission.objects.filter(pk=acme_submission.pk).update(title="Renamed r32")
    body, state = _page(client, path)
    assert state is None and "Renamed r32" in body and "Baseline r16" not in body


@pytest.mark.django_db(transaction=True)
def test_a_change_rolled_back_or_still_open_never_freezes_an_old_page(client, acme_submission, role_users):
    client.force_login(role_users["submitter"])
    path = reverse("submissions:detail", args=[acme_submission.pk])
    _page(client, path)
    _page(client, path)
    with transaction.atomic():
        Submission.objects.filter(pk=acme_submission.pk).update(title="Inside r48")
        # Read inside the same transaction: the write already started a generation.
        body, state = _page(client, path)
        assert state is None and "Inside r48" in body
    body, state = _page(client, path)
    assert "Inside r48" in body
    with pytest.raises(RuntimeError), transaction.atomic():
        Submission.objects.filter(pk=acme_submission.pk).update(title="Never r64")
        raise RuntimeError
    body, _ = _page(client, path)
    assert "Inside r48" in body and "Never r64" not in body


@pytest.mark.django_db(transaction=True)
def test_each_user_reads_only_their_own_entry(client, acme_submission, role_users):
    path = reverse("submissions:dashboard")
    client.force_login(role_users["submitter"])
    _page(client, path)  # sets the CSRF cookie
    _page(client, path)  # stored
    body, state = _page(client, path)
    assert state == "hit" and "Baseline r16" in body

    other = APIClient()
    other.force_login(role_users["reviewer"])  # another organisation: acme's draft is not theirs to see
    other.cookies["csrftoken"] = client.cookies["csrftoken"].value  # even with the same CSRF secret
    body, state = _page(other, path)
    assert state is None and "Baseline r16" not in body


@pytest.mark.django_db(transaction=True)
def test_a_request_without_a_csrf_cookie_is_not_cached(client, acme_submission, role_users):
    client.force_login(role_users["submitter"])
    path = reverse("submissions:dashboard")
    for _ in range(3):
        client.cookies.pop("csrftoken", None)
        _, state = _page(client, path)
        assert state is None


@pytest.mark.django_db(transaction=True)
def test_api_list_is_cached_per_token_user_and_a_revoked_token_is_still_refused(acme_submission, role_users):
    submitter = role_users["submitter"]
    token = ApiTokenFactory(user=submitter, scope="read")
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    path = "/api/v1/submissions/"
    first = api.get(path)
    second = api.get(path)
    assert second.headers.get("X-Portal-Cache") == "hit"
    assert second.json() == first.json()
    assert [row["title"] for row in second.json()["results"]] == ["Baseline r16"]

    stranger = UserFactory(username="stranger")
    stranger_token = ApiTokenFactory(user=stranger, scope="read")
    api.credentials(HTTP_AUTHORIZATION=f"Token {stranger_token.key}")
    assert api.get(path).json()["results"] == []

    # A new submission (committed by the service layer's own transaction) shows on the next request.
    SubmissionFactory(system=acme_submission.system, title="Second r32", draft=True)
    api.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    titles = {row["title"] for row in api.get(path).json()["results"]}
    assert titles == {"Baseline r16", "Second r32"}

    token.delete()
    assert api.get(path).status_code == 401


@pytest.mark.django_db(transaction=True)
def test_cache_outage_serves_the_page_uncached(client, acme_submission, role_users, monkeypatch):
    client.force_login(role_users["submitter"])
    path = reverse("submissions:dashboard")
    _page(client, path)

    def broken(*args, **kwargs):
        raise ConnectionError("redis is down")

    monkeypatch.setattr(private_cache.cache, "get", broken)
    body, state = _page(client, path)
    assert state is None and "Baseline r16" in body


@pytest.mark.django_db(transaction=True)
def test_a_finished_check_section_is_rendered_once_for_everyone_who_may_see_it(
    role_users, settings, monkeypatch
):
    from django.test import Client

    from submissions.models import Finding
    from submissions.views import submissions as views
    from tests.factories import MembershipFactory
    from tests.submissions.support import make_catalog
    from tests.submissions.test_private_page_queries import _add_submissions

    settings.PORTAL_PRIVATE_CACHE = True
    acme = role_users["organisations"]["acme"]
    benchmark, _ = make_catalog(acme)
    (submission,) = _add_submissions(acme, role_users["submitter"], benchmark, 1)
    colleague = UserFactory(username="colleague")
    MembershipFactory(user=colleague, organisation=acme, role="submitter")
    renders = []
    real = views.check_section_context
    monkeypatch.setattr(views, "check_section_context", lambda *a: renders.append(a) or real(*a))
    path = reverse("submissions:detail", args=[submission.pk])

    browsers = {}
    for user in (role_users["submitter"], colleague):  # signing in writes (last_login): both before the reads
        browsers[user.pk] = Client()
        browsers[user.pk].force_login(user)
    for browser in browsers.values():
        browser.cookies["csrftoken"] = "a" * 32  # the CSRF cookie a browser holds once it has seen a form

    def check_section(user) -> str:
        body = browsers[user.pk].get(path).content.decode()
        return body[
            body.index('<div id="check-section"') : body.index("</section>", body.index("check-section"))
        ]

    first = check_section(role_users["submitter"])
    assert "error 0" in first and len(renders) == 1
    assert check_section(colleague) == first and len(renders) == 1  # the colleague's first request: shared

    Finding.objects.filter(check_run__version__submission=submission, message__startswith="error 0").update(
        message="corrected finding text"
    )
    assert "corrected finding text" in check_section(colleague) and len(renders) == 2

    outsider = Client()
    outsider.force_login(role_users["reviewer"])  # another organisation: the draft stays hidden, cache or not
    assert outsider.get(path).status_code == 404
