"""The dashboard and the submission/version lists prefetch the latest version and check: their number of
queries does not grow with the number of rows (3 vs 30 submissions, each with two versions and re-checks)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from submissions.models import CheckRun, Submission, SubmissionVersion, VersionFile
from tests.factories import SystemFactory
from tests.states import put
from tests.submissions.support import api_client, make_catalog

pytestmark = pytest.mark.django_db


def _add_submissions(organisation, user, benchmark, count: int, *, status=Submission.Status.DRAFT):
    for _ in range(count):
        system = SystemFactory(
            organisation=organisation, name=f"{organisation.slug}-sys-{Submission.objects.count()}"
        )
        submission = Submission.objects.create(
            organisation=organisation, system=system, benchmark=benchmark, created_by=user
        )
        put(Submission.objects.filter(pk=submission.pk), status)
        for number in (1, 2):
            version = SubmissionVersion.objects.create(
                submission=submission,
                number=number,
                kind="bundle",
                size_bytes=10 * number,
                sha256=f"{number}" * 64,
                uploader=user,
            )
            VersionFile.objects.create(
                version=version,
                position=0,
                original_filename=f"v{number}.tar.gz",
                storage_key=f"blobs/x/{number}",
                size_bytes=10 * number,
                sha256=f"{number}" * 64,
            )
            for status_ in (
                CheckRun.Status.ERROR,
                CheckRun.Status.PASSED,
            ):  # a re-check: the later run counts
                run = CheckRun.objects.create(version=version)
                put(CheckRun.objects.filter(pk=run.pk), status_, counts={"error": 0, "warning": number})


def _queries(fetch) -> tuple[int, object]:
    with CaptureQueriesContext(connection) as captured:
        result = fetch()
    return len(captured.captured_queries), result


@pytest.fixture
def world(role_users):
    acme, nimbus = role_users["organisations"]["acme"], role_users["organisations"]["nimbus"]
    benchmark, _ = make_catalog(acme)
    return acme, nimbus, benchmark


def test_dashboard_queries_do_not_grow_with_rows(client, role_users, world, django_assert_max_num_queries):
    acme, nimbus, benchmark = world
    chair = role_users["chair"]
    from tests.factories import MembershipFactory

    MembershipFactory(
        user=chair, organisation=acme, role="submitter"
    )  # own rows and other organisations' rows
    client.force_login(chair)
    _add_submissions(acme, chair, benchmark, 3)
    _add_submissions(nimbus, chair, benchmark, 3, status=Submission.Status.SUBMITTED)
    few, response = _queries(lambda: client.get("/dashboard/"))
    assert response.status_code == 200
    assert response.content.decode().count("check: passed") == 6
    _add_submissions(acme, chair, benchmark, 27)
    _add_submissions(nimbus, chair, benchmark, 27, status=Submission.Status.SUBMITTED)
    with django_assert_max_num_queries(few):
        response = client.get("/dashboard/")
    page = response.content.decode()
    assert (
        page.count("check: passed") == 60 and "check: error" not in page
    )  # the latest run of the latest version
    assert page.count("v2 ·") == 60


def test_submission_and_version_lists_queries_do_not_grow_with_rows(
    role_users, world, django_assert_max_num_queries
):
    acme, _, benchmark = world
    submitter = role_users["submitter"]
    api = api_client(submitter)
    _add_submissions(acme, submitter, benchmark, 3)
    few_submissions, response = _queries(lambda: api.get("/api/v1/submissions/"))
    few_versions, _ = _queries(lambda: api.get("/api/v1/versions/"))
    assert response.json()["count"] == 3
    _add_submissions(acme, submitter, benchmark, 27)
    with django_assert_max_num_queries(few_submissions):
        response = api.get("/api/v1/submissions/")
    rows = response.json()["results"]
    assert len(rows) == 30
    assert {row["latest_version"]["number"] for row in rows} == {2}
    assert {row["latest_version"]["latest_check_run"]["status"] for row in rows} == {"passed"}
    assert all(row["latest_version"]["files"][0]["original_filename"] == "v2.tar.gz" for row in rows)
    with django_assert_max_num_queries(few_versions):
        versions = api.get("/api/v1/versions/").json()
    assert versions["count"] == 60
    assert {v["latest_check_run"]["status"] for v in versions["results"]} == {"passed"}


def test_submission_page_queries_do_not_grow_with_versions(
    client, role_users, world, django_assert_max_num_queries
):
    acme, _, benchmark = world
    submitter = role_users["submitter"]
    client.force_login(submitter)
    _add_submissions(acme, submitter, benchmark, 1)
    submission = Submission.objects.get()

    def add_versions(count):
        for _ in range(count):
            number = submission.versions.count() + 1
            version = SubmissionVersion.objects.create(
                submission=submission,
                number=number,
                kind="bundle",
                size_bytes=1,
                sha256="f" * 64,
                uploader=submitter,
            )
            CheckRun.objects.create(version=version)

    few, response = _queries(lambda: client.get(f"/submissions/{submission.pk}/"))
    assert response.status_code == 200
    add_versions(20)
    with django_assert_max_num_queries(few):
        response = client.get(f"/submissions/{submission.pk}/")
    assert response.status_code == 200 and response.context["versions"][0].number == 22
