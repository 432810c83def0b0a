"""DESIGN.md's visibility table, as a generated matrix of role x state x endpoint (404 outside it)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from access.visibility import submissions_visible_to
from review.models import ReviewAssignment
from submissions.models import CheckRun, Submission, SubmissionVersion, VersionFile
from tests.states import put
from tests.submissions.support import api_client, make_catalog

pytestmark = pytest.mark.django_db

STATES = [s.value for s in Submission.Status]


def expected_visible(role: str, status: str) -> bool:
    """The table, written out independently of the selector."""
    return {
        "anonymous": status == "published",
        "submitter": True,  # member of the submitting organisation
        "reviewer": status != "draft",  # assigned, from submitted on
        "outsider": status == "published",  # member of another organisation, not assigned
        "auditor": status != "draft",
        "chair": status != "draft",
    }[role]


@pytest.fixture
def world(role_users, storage_dir):
    from django.core.files.base import ContentFile
    from django.core.files.storage import default_storage

    from tests.factories import MembershipFactory, UserFactory

    benchmark, system = make_catalog(role_users["organisations"]["acme"])
    outsider = UserFactory(username="outsider")
    MembershipFactory(user=outsider, organisation=role_users["organisations"]["nimbus"], role="submitter")
    key = default_storage.save("blobs/sha256/ab/secret", ContentFile(b"secret bytes"))
    by_state = {}
    for status in STATES:
        submission = Submission.objects.create(
            organisation=system.organisation,
            system=system,
            benchmark=benchmark,
            created_by=role_users["submitter"],
        )
        put(Submission.objects.filter(pk=submission.pk), status)
        version = SubmissionVersion.objects.create(
            submission=submission,
            number=1,
            kind="bundle",
            size_bytes=12,
            sha256="ab" * 32,
            uploader=role_users["submitter"],
        )
        VersionFile.objects.create(
            version=version,
            position=0,
            original_filename="b.tar.gz",
            storage_key=key,
            size_bytes=12,
            sha256="ab" * 32,
        )
        run = CheckRun.objects.create(version=version)
        ReviewAssignment.objects.create(
            submission=submission,
            reviewer=role_users["reviewer"],
            organisation=role_users["organisations"]["nimbus"],
            due_at=timezone.now() + timedelta(days=14),
        )
        by_state[status] = (submission, version, run)
    users = {
        **{k: role_users[k] for k in ("anonymous", "submitter", "reviewer", "auditor", "chair")},
        "outsider": outsider,
    }
    return users, by_state


ROLES = ["anonymous", "submitter", "reviewer", "outsider", "auditor", "chair"]
ENDPOINTS = {
    "submission": lambda s, v, r: f"/api/v1/submissions/{s.pk}/",
    "version": lambda s, v, r: f"/api/v1/versions/{v.pk}/",
    "file": lambda s, v, r: f"/api/v1/versions/{v.pk}/files/0/",
    "check-run": lambda s, v, r: f"/api/v1/check-runs/{r.pk}/",
}


@pytest.mark.parametrize("role", ROLES)
def test_matrix_role_state_endpoint(world, role):
    users, by_state = world
    client = api_client(users[role])
    for status, (submission, version, run) in by_state.items():
        visible = expected_visible(role, status)
        assert (submissions_visible_to(users[role]).filter(pk=submission.pk).exists()) is visible, (
            role,
            status,
        )
        for name, url in ENDPOINTS.items():
            response = client.get(url(submission, version, run))
            assert response.status_code == (200 if visible else 404), (
                role,
                status,
                name,
                response.status_code,
            )
            if not visible:
                assert response.json()["code"] == "not_found"
            elif name == "file":
                assert b"".join(response.streaming_content) == b"secret bytes"
        listed = {row["id"] for row in client.get("/api/v1/submissions/?limit=500").json()["results"]}
        assert (submission.pk in listed) is visible, (role, status, "list")
        listed_runs = {row["id"] for row in client.get("/api/v1/check-runs/?limit=500").json()["results"]}
        assert (run.pk in listed_runs) is visible, (role, status, "check-run list")


def test_outsider_cannot_act_on_or_guess_other_submissions(world):
    users, by_state = world
    client = api_client(users["outsider"])
    submission, version, _ = by_state["draft"]
    for method, url, body in [
        ("post", f"/api/v1/submissions/{submission.pk}/submit/", {}),
        ("post", f"/api/v1/submissions/{submission.pk}/withdraw/", {"reason": "x"}),
        (
            "post",
            "/api/v1/uploads/",
            {"submission": submission.pk, "filename": "a.tar.gz", "size": 1, "sha256": "0" * 64},
        ),
        ("get", "/api/v1/submissions/999999/", None),
    ]:
        response = getattr(client, method)(url, body, format="json") if body is not None else client.get(url)
        assert response.status_code == 404, (url, response.status_code)
    # Unknown and hidden ids answer alike: existence does not leak.
    hidden = client.get(f"/api/v1/versions/{version.pk}/files/0/")
    missing = client.get("/api/v1/versions/999999/files/0/")
    assert hidden.status_code == missing.status_code == 404 and hidden.json() == missing.json()
