"""Malformed and probing requests: a 4xx that says nothing about rows the caller may not see, never a 500."""

from __future__ import annotations

import uuid

import pytest

from submissions.models import (
    CheckRun,
    Submission,
    SubmissionVersion,
    SystemDescriptionRevision,
    Upload,
    UploadPart,
)
from tests.factories import SystemFactory
from tests.states import put
from tests.submissions.support import api_client, make_catalog

pytestmark = pytest.mark.django_db


@pytest.fixture
def hidden_draft(role_users):
    """A draft of acme with a version and a check run: the nimbus reviewer (unassigned) may not see any of it."""
    benchmark, system = make_catalog(role_users["organisations"]["acme"])
    submission = Submission.objects.create(
        organisation=system.organisation,
        system=system,
        benchmark=benchmark,
        created_by=role_users["submitter"],
    )
    version = SubmissionVersion.objects.create(
        submission=submission,
        number=1,
        kind="bundle",
        size_bytes=1,
        sha256="ab" * 32,
        uploader=role_users["submitter"],
    )
    CheckRun.objects.create(version=version)
    return submission, version


@pytest.mark.parametrize(
    "url",
    [
        "/api/v1/versions/abc/files/0/",
        "/api/v1/versions/999999999999999999999999/files/0/",
        "/api/v1/versions/1/files/999999999999999999999999/",
    ],
)
def test_malformed_file_download_ids_are_404(role_users, hidden_draft, url):
    response = api_client(role_users["submitter"]).get(url)
    assert response.status_code == 404 and response.json()["code"] == "not_found"


@pytest.mark.parametrize(
    "url",
    [
        "/api/v1/versions/?submission={submission}",
        "/api/v1/check-runs/?version={version}",
        "/api/v1/uploads/?submission={submission}",
    ],
)
def test_list_filters_do_not_tell_hidden_ids_from_missing_ones(role_users, hidden_draft, url):
    submission, version = hidden_draft
    client = api_client(role_users["reviewer"])
    hidden = client.get(url.format(submission=submission.pk, version=version.pk))
    missing = client.get(url.format(submission=submission.pk + 1000, version=version.pk + 1000))
    assert hidden.status_code == missing.status_code == 200
    assert hidden.json() == missing.json() and hidden.json()["count"] == 0
    assert client.get(url.format(submission="abc", version="abc")).status_code == 400
    own = api_client(role_users["submitter"]).get(url.format(submission=submission.pk, version=version.pk))
    assert own.status_code == 200  # the filter still works for who may see the rows


def test_systems_page_counts_only_visible_submissions(client, role_users, hidden_draft):
    """An auditor sees the system of acme's published result, but not how many drafts acme keeps for it."""
    submission, _ = hidden_draft
    published = Submission.objects.create(
        organisation=submission.organisation,
        system=submission.system,
        benchmark=submission.benchmark,
        created_by=role_users["submitter"],
    )
    put(Submission.objects.filter(pk=published.pk), Submission.Status.PUBLISHED)
    client.force_login(role_users["auditor"])
    response = client.get("/systems/")
    assert response.status_code == 200
    rows = [line for line in response.content.decode().splitlines() if 'class="num"' in line]
    assert rows == ['        <td class="num">1</td></tr>']


def test_list_queries_do_not_grow_with_rows(role_users, django_assert_max_num_queries):
    """Systems (latest description revision) and uploads (received and missing parts) list in fixed queries."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    acme = role_users["organisations"]["acme"]
    benchmark, system = make_catalog(acme)
    submission = Submission.objects.create(
        organisation=acme, system=system, benchmark=benchmark, created_by=role_users["submitter"]
    )
    client = api_client(role_users["submitter"])

    def add(count):
        for _ in range(count):
            other = SystemFactory(organisation=acme, name=f"sys-{SystemDescriptionRevision.objects.count()}")
            SystemDescriptionRevision.objects.create(system=other, number=1, description={}, sha256="0" * 64)
            upload = Upload.objects.create(
                id=uuid.uuid4(),
                submission=submission,
                filename="a.tar.gz",
                size_bytes=20,
                sha256="0" * 64,
                part_size=10,
                parts_expected=2,
                created_by=role_users["submitter"],
            )
            UploadPart.objects.create(upload=upload, index=1, sha256="1" * 64, size_bytes=10, storage_key="k")

    add(2)
    counts = {}
    for url in ("/api/v1/systems/", "/api/v1/uploads/"):
        with CaptureQueriesContext(connection) as captured:
            assert client.get(url).status_code == 200
        counts[url] = len(captured.captured_queries)
    add(10)
    for url, few in counts.items():
        with django_assert_max_num_queries(few):
            rows = client.get(url).json()["results"]
        assert len(rows) >= 12
    systems = client.get("/api/v1/systems/").json()["results"]
    assert {row["description_revision"] for row in systems if row["name"].startswith("sys-")} == {1}
    uploads = client.get("/api/v1/uploads/").json()["results"]
    assert {(tuple(row["missing_parts"]), row["received_parts"][0]["index"]) for row in uploads} == {
        ((0,), 1)
    }
