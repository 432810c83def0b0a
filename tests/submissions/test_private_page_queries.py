"""The pages a submitter reloads all day stay cheap as their organisation's submissions pile up: the dashboard, a
submission page and the token API lists read a fixed, small number of queries for 5 or 40 submissions (each with
two versions, an errored run and a failed re-check with findings, point metrics, curves and a report), and read the
user's memberships and roles once per page, however many headers, visibility rules and panels ask.
bench/private_load.py measures the same pages under load (docs/performance.md)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test import RequestFactory
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from accounts.selectors import request_memo, user_is_auditor, user_is_chair, user_org_ids
from portal.middleware import RoleMemoMiddleware
from review.models import Waiver
from submissions.models import (
    CheckRun,
    Finding,
    PointMetric,
    Submission,
    SubmissionVersion,
    VersionFile,
)
from tests.factories import MembershipFactory, OrganisationFactory, SystemFactory
from tests.states import put
from tests.submissions.support import api_client, make_catalog

pytestmark = pytest.mark.django_db

# What each page reads today, with no room to grow per row. The old code read 33 (dashboard), 42 (submission
# page), 11, 10, 8 and 6 (API lists) here: the same membership and role lookups again and again, the files of
# every version on the dashboard, the findings of the selected run three times.
# The lists read two more: the granted waivers and the error findings of the failed runs that have some, once for
# the whole list, so a run whose every error is waived reads "passed with N waived" (review.selectors). The
# submission page reads its published result twice (the publication panel asks the workflow table; the panel then
# loads it with its submission): one query more, the same for 5 or 40 submissions. The declared endpoint's panel
# (issue 24) reads its one row: one more again.
DASHBOARD_MAX = 13
SUBMISSION_PAGE_MAX = 22
API_LIST_MAX = {
    "/api/v1/submissions/": 11,
    "/api/v1/versions/": 10,
    "/api/v1/check-runs/": 8,
    "/api/v1/systems/": 5,
}
FINDINGS = 6  # error findings of each failed run; one of them waived


def _add_version(submission: Submission, number: int) -> SubmissionVersion:
    """Version `number` (two files) with an errored run and a failed re-check (findings, point metrics, curves,
    a report), and a granted waiver of one of its errors."""
    system, benchmark, user = submission.system, submission.benchmark, submission.created_by
    version = SubmissionVersion.objects.create(
        submission=submission,
        number=number,
        kind="run_archives",
        size_bytes=2048 * number,
        sha256=f"{number % 10}" * 64,
        uploader=user,
    )
    for position in (0, 1):
        VersionFile.objects.create(
            version=version,
            position=position,
            original_filename=f"v{number}-c{position}.tar.gz",
            storage_key=f"blobs/x/{number}{position}",
            size_bytes=1024 * number,
            sha256=f"{position}" * 64,
        )
    errored = CheckRun.objects.create(version=version)
    put(CheckRun.objects.filter(pk=errored.pk), "error", error_message="the worker was lost")
    run = CheckRun.objects.create(version=version)  # the re-check: the latest run
    points = [{"concurrency": c, "system_tps": 100.0 * c, "tps_per_user": 50.0} for c in (1, 2, 4)]
    put(
        CheckRun.objects.filter(pk=run.pk),
        "failed",
        finished_at=timezone.now(),
        counts={"error": FINDINGS, "warning": 1, "info": 0},
        curves=[{"system": system.name, "model": benchmark.model_id, "points": points}],
        report={"official": {"verdict": "fail"}, "findings": ["x" * 200] * 200},
    )
    Finding.objects.bulk_create(
        [
            Finding(
                check_run=run,
                rule=f"rule-{i}",
                severity="error",
                point=f"{system.name}/{benchmark.model_id}/r{2**i}",
                message=f"error {i}",
            )
            for i in range(FINDINGS)
        ]
        + [Finding(check_run=run, rule="note", severity="warning", message="a warning")]
    )
    PointMetric.objects.bulk_create(
        [
            PointMetric(
                check_run=run,
                system=system.name,
                model=benchmark.model_id,
                concurrency=c,
                key=f"{system.name}/{benchmark.model_id}/r{c}",
                source="run-archive",
                claimed={"system_tps": 100.0 * c},
                recomputed={"system_tps": 100.0 * c},
                extra={"region": "low_latency"},
            )
            for c in (1, 2, 4)
        ]
    )
    waiver = Waiver.objects.create(
        version=version,
        rule="rule-0",
        point=f"{system.name}/{benchmark.model_id}/r1",
        requested_by=user,
        request_reason="a known client bug",
    )
    put(waiver, Waiver.Status.GRANTED)
    return version


def _add_submissions(organisation, user, benchmark, count: int) -> list[Submission]:
    """`count` drafts of one system, each with two versions (_add_version)."""
    system = SystemFactory(organisation=organisation, name=f"sys-{Submission.objects.count()}")
    created = []
    for _ in range(count):
        submission = Submission.objects.create(
            organisation=organisation, system=system, benchmark=benchmark, created_by=user
        )
        created.append(submission)
        for number in (1, 2):
            _add_version(submission, number)
    return created


def _queries(get) -> tuple[list[str], object]:
    with CaptureQueriesContext(connection) as captured:
        response = get()
    assert response.status_code == 200, response.content[:500]
    return [q["sql"] for q in captured.captured_queries], response


@pytest.fixture(autouse=True)
def _uncached(settings):
    """These count what a render costs: the per-user cache (tests/portal/test_private_cache.py) is off here."""
    settings.PORTAL_PRIVATE_CACHE = False


@pytest.fixture
def acme(role_users):
    acme = role_users["organisations"]["acme"]
    benchmark, _ = make_catalog(acme)
    # A second organisation of the submitter and a reviewer role: more for every visibility rule to look at.
    MembershipFactory(user=role_users["submitter"], organisation=OrganisationFactory(), role="reviewer")
    return acme, benchmark, role_users["submitter"]


def test_dashboard_reads_few_queries_for_5_or_40_submissions(client, acme):
    organisation, benchmark, submitter = acme
    client.force_login(submitter)
    _add_submissions(organisation, submitter, benchmark, 5)
    few, _ = _queries(lambda: client.get("/dashboard/"))
    _add_submissions(organisation, submitter, benchmark, 35)
    many, response = _queries(lambda: client.get("/dashboard/"))
    assert len(many) == len(few) <= DASHBOARD_MAX, "\n".join(many)
    page = response.content.decode()
    # The latest run of the latest version, as before: the re-check failed with 6 errors, 1 of them waived.
    assert page.count("check: failed") == 40 and "check: error" not in page
    assert page.count(f"{FINDINGS} errors") == 40
    assert page.count("v2 · 4.0\xa0KB") == 40
    # The blobs a list never shows stay in the database.
    checkrun_reads = [q for q in many if 'FROM "submissions_checkrun"' in q]
    assert checkrun_reads and not any('"report"' in q or '"curves"' in q for q in checkrun_reads)
    assert not any('FROM "submissions_versionfile"' in q for q in many)


def test_submission_page_reads_few_queries_for_5_or_40_submissions(client, acme):
    organisation, benchmark, submitter = acme
    client.force_login(submitter)
    submission = _add_submissions(organisation, submitter, benchmark, 5)[0]
    few, _ = _queries(lambda: client.get(f"/submissions/{submission.pk}/"))
    _add_submissions(organisation, submitter, benchmark, 35)
    for number in range(3, 13):  # and ten more versions of this submission
        _add_version(submission, number)
    many, response = _queries(lambda: client.get(f"/submissions/{submission.pk}/"))
    assert len(many) == len(few) <= SUBMISSION_PAGE_MAX, "\n".join(many)
    page = response.content.decode()
    assert response.context["selected"].number == 12 and len(response.context["versions"]) == 12
    assert response.context["waived_errors"] == 1 and "1 waived" in page
    assert all(f"error {i}" in page for i in range(FINDINGS))
    # Memberships, global roles and conflicts: read once for the whole page.
    for table in ("accounts_membership", "accounts_globalrole", "review_conflict"):
        assert sum(f'FROM "{table}"' in q for q in many) <= 1, table


@pytest.mark.parametrize("path", list(API_LIST_MAX))
def test_api_lists_read_few_queries_for_5_or_40_submissions(acme, path):
    organisation, benchmark, submitter = acme
    api = api_client(submitter)
    _add_submissions(organisation, submitter, benchmark, 5)
    api.get(path)  # the token's first use records when it was last used (an UPDATE at most once a minute)
    few, _ = _queries(lambda: api.get(path))
    _add_submissions(organisation, submitter, benchmark, 35)
    many, response = _queries(lambda: api.get(path))
    assert len(many) == len(few) <= API_LIST_MAX[path], "\n".join(many)
    assert not any(
        '"submissions_checkrun"."report"' in q or '"submissions_checkrun"."curves"' in q for q in many
    )
    body = response.json()
    if path == "/api/v1/submissions/":
        assert body["count"] == 40
        for row in body["results"]:
            latest = row["latest_version"]
            assert latest["number"] == 2 and latest["uploader"] == "submitter"
            assert [f["original_filename"] for f in latest["files"]] == ["v2-c0.tar.gz", "v2-c1.tar.gz"]
            assert latest["latest_check_run"]["status"] == "failed"
            assert latest["latest_check_run"]["counts"] == {"error": FINDINGS, "warning": 1, "info": 0}
    elif path == "/api/v1/versions/":
        assert body["count"] == 80
        assert {v["latest_check_run"]["status"] for v in body["results"]} == {"failed"}


def test_api_list_shows_null_for_a_draft_without_versions(acme):
    organisation, benchmark, submitter = acme
    system = SystemFactory(organisation=organisation, name="bare")
    Submission.objects.create(
        organisation=organisation, system=system, benchmark=benchmark, created_by=submitter
    )
    version_only = _add_submissions(organisation, submitter, benchmark, 1)[0]
    CheckRun.objects.filter(version__submission=version_only).delete()
    rows = api_client(submitter).get("/api/v1/submissions/").json()["results"]
    assert [row["latest_version"] for row in rows if row["system"] == "bare"] == [None]
    latest = next(row["latest_version"] for row in rows if row["id"] == version_only.pk)
    assert latest["number"] == 2 and latest["latest_check_run"] is None


def test_roles_are_read_once_inside_a_read_only_request_and_fresh_otherwise(role_users):
    submitter, auditor = role_users["submitter"], role_users["auditor"]
    acme, nimbus = role_users["organisations"]["acme"], role_users["organisations"]["nimbus"]
    with request_memo():
        assert user_org_ids(submitter) == {acme.pk}
        MembershipFactory(user=submitter, organisation=nimbus, role="submitter")
        with CaptureQueriesContext(connection) as captured:
            assert user_org_ids(submitter) == {acme.pk}  # the answer of this request
            assert user_is_auditor(auditor) and not user_is_auditor(submitter)
            assert user_is_auditor(auditor) and not user_is_chair(submitter)
        assert len(captured.captured_queries) == 2  # the two users' global roles, once each
    assert user_org_ids(submitter) == {acme.pk, nimbus.pk}  # outside a request: the database


@pytest.mark.parametrize("method", ["get", "head", "post", "put", "delete"])
def test_only_get_and_head_requests_read_roles_once(method):
    from accounts.selectors import _request_memo

    seen = []
    middleware = RoleMemoMiddleware(lambda request: seen.append(_request_memo.get()) or "response")
    assert middleware(getattr(RequestFactory(), method)("/dashboard/")) == "response"
    assert (seen[0] is not None) == (method in ("get", "head"))
    assert _request_memo.get() is None  # closed after the request
