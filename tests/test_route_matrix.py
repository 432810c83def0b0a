"""Every route the portal serves is in the access table of tests/routes.py (shared with the permission matrix),
checked against the URL configuration.

A new page, endpoint, export or download that is not declared there fails
`test_every_route_is_declared`; each declared object route is then exercised against a hidden
draft (another organisation's) and a published submission, as DESIGN.md's visibility table says.
The per-role x per-state matrices live in tests/submissions/test_visibility.py (API) and
tests/submissions/test_pages.py (pages); this file makes sure nothing escapes them.
"""

from __future__ import annotations

import hashlib
from datetime import timedelta

import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver
from django.utils import timezone

from review.models import ReviewAssignment
from submissions.models import CheckRun, Submission, SubmissionVersion, VersionFile
from submissions.uploads import upload_start
from tests.factories import MembershipFactory, UserFactory
from tests.routes import ROUTES as ALL_ROUTES
from tests.routes import Access
from tests.states import put
from tests.submissions.support import api_client, make_catalog

pytestmark = pytest.mark.django_db

PUBLIC, LOGIN, ROLE, OBJECT, LIST, FLOW = (
    Access.PUBLIC,
    Access.LOGIN,
    Access.ROLE,
    Access.OBJECT,
    Access.LIST,
    Access.FLOW,
)
# The access classes (tests/routes.py's `Access` says what each asks).
OVERSEE = Access.OVERSEE
SHARED = Access.SHARED
OWN = Access.OWN
SYSTEM = Access.SYSTEM


def _routes(group: str) -> dict:
    """name -> (access class, method, url builder taking the world dict): one part of tests/routes.py's table."""
    return {
        name: (route.access, route.url_method or route.method, route.url)
        for name, route in ALL_ROUTES.items()
        if route.group == group
    }


ROUTES = _routes(group="")
UPLOAD_ROUTES = {
    "api:upload-detail",
    "api:upload-finish",
    "api:upload-part",
    "api:upload-sign",
}  # members only, any state


def _route_names(patterns, namespace: str | None = None):
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            inner = pattern.namespace or namespace
            if inner == "admin":
                continue  # the Django admin: staff only, guarded by Django itself
            yield from _route_names(pattern.url_patterns, inner if pattern.namespace else namespace)
        elif isinstance(pattern, URLPattern) and pattern.name:
            yield f"{namespace}:{pattern.name}" if namespace else pattern.name


def test_every_route_is_declared():
    served = set(_route_names(get_resolver().url_patterns))
    undeclared = served - set(ROUTES)
    assert not undeclared, f"routes missing from the access table: {sorted(undeclared)}"
    stale = set(ROUTES) - served
    assert not stale, f"declared routes that no longer exist: {sorted(stale)}"


def _spotcheck_of(submission, *, auditor, publication=None):
    """A finished spot-check of the submission (within the margin), its raw output stored."""
    from tests.factories import SpotCheckFactory

    raw = b'{"benchmarks": []}'
    digest = hashlib.sha256(raw).hexdigest()
    key = default_storage.save(f"spotchecks/sha256/{digest[:2]}/{digest}", ContentFile(raw))
    return SpotCheckFactory(
        submission=submission,
        publication=publication,
        source="publication" if publication else "check_run",
        check_run=None,
        status="within",
        finished_at=timezone.now(),
        started_by=auditor,
        evidence=[{"name": "benchmarks.json", "size_bytes": len(raw), "sha256": digest, "storage_key": key}],
    )


def _world(role_users, status: str, settings) -> dict:
    settings.PORTAL_ORG_QUOTA_BYTES = 10**12
    acme = role_users["organisations"]["acme"]
    benchmark, system = make_catalog(acme)
    submission = Submission.objects.create(
        organisation=acme, system=system, benchmark=benchmark, created_by=role_users["submitter"]
    )
    payload = b"stored bytes"
    digest = hashlib.sha256(payload).hexdigest()
    key = default_storage.save(f"blobs/sha256/{digest[:2]}/{digest}", ContentFile(payload))
    version = SubmissionVersion.objects.create(
        submission=submission,
        number=1,
        kind="bundle",
        size_bytes=len(payload),
        sha256=digest,
        uploader=role_users["submitter"],
    )
    VersionFile.objects.create(
        version=version,
        position=0,
        original_filename="b.tar.gz",
        storage_key=key,
        size_bytes=len(payload),
        sha256=digest,
    )
    # A finished check (a published submission always has one): its report download is served, not 409.
    run = put(CheckRun.objects.create(version=version), "passed", finished_at=timezone.now(), counts={})
    upload = upload_start(
        actor=role_users["submitter"],
        submission=submission,
        filename="more.tar.gz",
        size=len(payload),
        sha256=digest,
    )
    put(Submission.objects.filter(pk=submission.pk), status)
    spotcheck = _spotcheck_of(submission, auditor=role_users["auditor"])
    outsider = UserFactory(username=f"outsider-{status}")
    MembershipFactory(user=outsider, organisation=role_users["organisations"]["nimbus"], role="submitter")
    return {
        "sub": submission,
        "system": system,
        "version": version,
        "spotcheck": spotcheck,
        "run": run,
        "upload": upload,
        "outsider": outsider,
        "owner": role_users["submitter"],
        "auditor": role_users["auditor"],
    }


def _request(user, method: str, url: str):
    if url.startswith("/api/"):
        client = api_client(user)
        body = b"x" if method == "put" else {}
        kwargs = {"content_type": "application/octet-stream"} if method == "put" else {"format": "json"}
        return getattr(client, method)(url, body, **kwargs)
    client = Client()
    if user is not None:
        client.force_login(user)
    return getattr(client, method)(url, {"reason": "matrix"} if method == "post" else None)


OBJECT_ROUTES = sorted(name for name, (kind, _, _) in ROUTES.items() if kind == OBJECT)


@pytest.mark.parametrize("name", OBJECT_ROUTES)
def test_hidden_draft_is_404_for_outsiders_and_never_shown_to_anonymous(
    name, role_users, storage_dir, settings
):
    world = _world(role_users, "draft", settings)
    _, method, url = ROUTES[name]
    outsider = _request(world["outsider"], method, url(world))
    assert outsider.status_code == 404, (name, outsider.status_code)
    auditor = _request(world["auditor"], method, url(world))  # drafts are the organisation's own
    assert auditor.status_code == 404, (name, auditor.status_code)
    anonymous = _request(None, method, url(world))
    assert anonymous.status_code in (302, 401, 403, 404), (name, anonymous.status_code)
    if anonymous.status_code == 302:
        assert "/accounts/login/" in anonymous["Location"]
    owner = _request(world["owner"], method, url(world))
    assert owner.status_code != 404, (name, owner.status_code)  # it exists; the others were told it does not


@pytest.mark.parametrize(
    "name", [n for n in OBJECT_ROUTES if ROUTES[n][1] == "get" and n not in UPLOAD_ROUTES]
)
def test_published_reads_are_public(name, role_users, storage_dir, settings):
    world = _world(role_users, "published", settings)
    _, _, url = ROUTES[name]
    for user in (None, world["outsider"]):
        response = _request(user, "get", url(world))
        assert response.status_code == 200, (name, user, response.status_code)


@pytest.mark.parametrize("name", [n for n in OBJECT_ROUTES if n in UPLOAD_ROUTES])
def test_uploads_stay_with_the_organisation_even_when_published(name, role_users, storage_dir, settings):
    world = _world(role_users, "published", settings)
    _, method, url = ROUTES[name]
    assert _request(world["outsider"], method, url(world)).status_code == 404


@pytest.mark.parametrize("name", sorted(n for n, (kind, _, _) in ROUTES.items() if kind == LIST))
def test_lists_never_carry_hidden_rows(name, role_users, storage_dir, settings):
    world = _world(role_users, "draft", settings)
    _, _, url = ROUTES[name]
    ReviewAssignment.objects.create(
        submission=world["sub"],
        reviewer=role_users["reviewer"],
        organisation=role_users["organisations"]["nimbus"],
        due_at=timezone.now() + timedelta(days=14),
    )
    for user in (None, world["outsider"], role_users["reviewer"], world["auditor"]):
        response = _request(user, "get", url(world))
        if response.status_code != 200:
            assert response.status_code in (401, 403), (name, response.status_code)
            continue
        # the only submission in this world is another organisation's draft: nothing may show
        assert response.json()["results"] == [], (name, user)
    owner_rows = _request(world["owner"], "get", url(world)).json()["results"]
    assert owner_rows, name  # the owner does see them: the filter is not simply empty


@pytest.mark.parametrize("name", sorted(n for n, (kind, _, _) in ROUTES.items() if kind == PUBLIC))
def test_public_routes_answer_anonymous(name, db):
    _, method, url = ROUTES[name]
    assert _request(None, method, url({})).status_code == 200, name


@pytest.mark.parametrize("name", sorted(n for n, (kind, _, _) in ROUTES.items() if kind in (LOGIN, ROLE)))
def test_login_routes_refuse_anonymous(name, db):
    _, method, url = ROUTES[name]
    response = _request(None, method, url({}))
    assert response.status_code in (302, 401, 403), (name, response.status_code)
    if response.status_code == 302:
        assert "/accounts/login/" in response["Location"]


def test_audit_log_is_for_auditors_and_the_chair(role_users):
    for role, allowed in (("submitter", False), ("reviewer", False), ("auditor", True), ("chair", True)):
        response = _request(role_users[role], "get", "/audit/")
        assert (response.status_code == 200) is allowed, (role, response.status_code)


SYSTEM_ROUTES = sorted(name for name, (kind, _, _) in ROUTES.items() if kind == SYSTEM)


def _system_ids(response) -> list[int]:
    return [row["id"] for row in response.json()["results"]]


@pytest.mark.parametrize("name", SYSTEM_ROUTES)
def test_system_of_a_draft_only_is_hidden_from_outsiders_and_anonymous(
    name, role_users, storage_dir, settings
):
    world = _world(role_users, "draft", settings)
    _, method, url = ROUTES[name]
    is_list = name.endswith("-list")
    outsider = _request(world["outsider"], method, url(world))
    anonymous = _request(None, method, url(world))
    if is_list:
        assert outsider.status_code == anonymous.status_code == 200
        assert world["system"].pk not in _system_ids(outsider) + _system_ids(anonymous)
    else:
        assert outsider.status_code == 404, (name, outsider.status_code)
        assert anonymous.status_code in (302, 401, 403, 404), (name, anonymous.status_code)
        if anonymous.status_code == 302:
            assert "/accounts/login/" in anonymous["Location"]
    for user in (world["owner"], world["auditor"]):  # auditors see every system, drafts or not
        response = _request(user, method, url(world))
        assert response.status_code != 404, (name, user, response.status_code)
        if is_list:
            assert world["system"].pk in _system_ids(response)


@pytest.mark.parametrize("name", SYSTEM_ROUTES)
def test_system_of_a_published_result_is_public_but_only_its_organisation_writes(
    name, role_users, storage_dir, settings
):
    world = _world(role_users, "published", settings)
    _, method, url = ROUTES[name]
    before = world["system"].description
    for user in (None, world["outsider"]):
        response = _request(user, method, url(world))
        if method == "get":
            assert response.status_code == 200, (name, user, response.status_code)
            if name.endswith("-list"):
                assert world["system"].pk in _system_ids(response)
        else:
            assert response.status_code in (302, 401, 403), (name, user, response.status_code)
    world["system"].refresh_from_db()
    assert world["system"].description == before


# --- the auditor's and the chair's routes -------------------------------------------------------------

OVERSEE_ROUTES = sorted(name for name, (kind, _, _) in ROUTES.items() if kind == OVERSEE)
CHAIR_ONLY = {"review:chair_submission", "review:chair_assign", "review:chair_draw", "review:chair_release"}
CONFLICT_ROUTES = {"review:conflict_remove", "api:conflict-detail"}


def _oversee_world(role_users, status: str, settings) -> dict:
    from accounts.models import Notification
    from review.models import Conflict, EvidenceRequest, Waiver
    from tests.factories import ApiTokenFactory, OrganisationFactory

    world = _world(role_users, status, settings)
    world["waiver"] = Waiver.objects.create(
        version=world["version"], rule="accuracy-sample-count", request_reason="short run"
    )
    world["assignment"] = ReviewAssignment.objects.create(
        submission=world["sub"],
        reviewer=role_users["reviewer"],
        organisation=role_users["organisations"]["nimbus"],
        due_at=timezone.now() + timedelta(days=14),
    )
    left, right = OrganisationFactory(), OrganisationFactory()
    world["conflict"] = Conflict.objects.create(
        organisation=left, other=right, kind="other", reason="x", pinned=True, declared_by=role_users["chair"]
    )
    world["evidence"] = EvidenceRequest.objects.create(
        submission=world["sub"],
        version=world["version"],
        auditor=role_users["auditor"],
        question="Send the power log.",
        due_at=timezone.now() + timedelta(days=5),
    )
    world["notification"] = Notification.objects.create(user=world["owner"], kind="x", subject="Hello")
    world["api_token"] = ApiTokenFactory(user=world["owner"])
    return world


@pytest.mark.parametrize("name", OVERSEE_ROUTES)
def test_oversight_routes_hide_drafts_and_refuse_everyone_else(name, role_users, storage_dir, settings):
    world = _oversee_world(role_users, "draft", settings)
    _, method, url = ROUTES[name]
    if name not in CONFLICT_ROUTES:  # a conflict is no submission's: see the next test
        for user in (world["outsider"], world["auditor"], role_users["reviewer"]):
            response = _request(user, method, url(world))
            assert response.status_code == 404, (name, user, response.status_code)
    assert _anonymous_refused(_request(None, method, url(world))), name
    put(Submission.objects.filter(pk=world["sub"].pk), "peer_reviewed")
    owner = _request(world["owner"], method, url(world))
    expected = (403, 404) if name in CONFLICT_ROUTES else (403,)
    assert owner.status_code in expected, (name, owner.status_code)
    if method == "get":
        allowed = (role_users["chair"],) if name in CHAIR_ONLY else (world["auditor"], role_users["chair"])
        for user in allowed:
            assert _request(user, "get", url(world)).status_code == 200, (name, user)
        if name in CHAIR_ONLY:
            assert _request(world["auditor"], "get", url(world)).status_code == 403, name


def test_conflicts_of_other_organisations_are_hidden_from_members(role_users, storage_dir, settings):
    world = _oversee_world(role_users, "submitted", settings)
    url = f"/review/conflicts/{world['conflict'].pk}/remove/"
    assert _request(world["outsider"], "post", url).status_code == 404
    assert _request(world["owner"], "post", url).status_code == 404
    response = _request(
        world["auditor"], "post", url
    )  # auditors see conflicts, only the chair removes this one
    assert response.status_code == 302
    from review.models import Conflict

    assert Conflict.objects.filter(pk=world["conflict"].pk).exists()
    _request(role_users["chair"], "post", url)
    assert not Conflict.objects.filter(pk=world["conflict"].pk).exists()


# --- The reviewer's pages and API (review/views/reviewer.py, review/api/reviewer.py) --------------------
# A review is read by the submitting organisation, its assigned reviewers, auditors and the chair, from
# `submitted` on; publishing a result does not publish its review. MINE: one reviewer's own assignment.
REVIEW, MINE, REVIEW_LIST = Access.REVIEW, Access.MINE, Access.REVIEW_LIST
REVIEWER_ROUTES = _routes(group="reviewer")
ROUTES.update(REVIEWER_ROUTES)


def _review_world(role_users, status: str) -> dict:
    """acme's submission in `status` with a frozen version (one stored file, a check), the reviewer's accepted
    assignment and review, an objection, an unassigned reviewer and another organisation's member."""
    from review.models import Comment, Review
    from tests.factories import (
        OrganisationFactory,
        SubmissionFactory,
        SubmissionVersionFactory,
        SystemFactory,
    )

    acme, nimbus = role_users["organisations"]["acme"], role_users["organisations"]["nimbus"]
    submission = SubmissionFactory(
        status=status, system=SystemFactory(organisation=acme), frozen_version=False
    )
    version = SubmissionVersionFactory(submission=submission, files=[("bundle", b"line one\nline two\n")])
    Submission.objects.filter(pk=submission.pk).update(submitted_version=version)
    version2 = SubmissionVersionFactory(submission=submission, files=[("bundle", b"line one\n")])
    assignment = ReviewAssignment.objects.create(
        submission=submission,
        reviewer=role_users["reviewer"],
        organisation=nimbus,
        due_at=timezone.now() + timedelta(days=14),
    )
    put(assignment, ReviewAssignment.Status.ACCEPTED)
    Review.objects.create(assignment=assignment, version=version, decision="approve")
    comment = Comment.objects.create(
        submission=submission,
        version=version,
        author=role_users["chair"],
        body="matrix objection",
        kind="objection",
        objection_type="validity",
    )
    put(comment, "open", field="objection_status")
    unassigned = UserFactory(username=f"unassigned-{status}")
    MembershipFactory(
        user=unassigned, organisation=OrganisationFactory(slug=f"third-{status}"), role="reviewer"
    )
    outsider = UserFactory(username=f"outsider-{status}")
    MembershipFactory(user=outsider, organisation=nimbus, role="submitter")
    return {
        "sub": submission,
        "version": version,
        "version2": version2,
        "assignment": assignment,
        "comment": comment,
        "owner": role_users["submitter"],
        "reviewer": role_users["reviewer"],
        "auditor": role_users["auditor"],
        "chair": role_users["chair"],
        "unassigned": unassigned,
        "outsider": outsider,
    }


def _assert_hidden(response, name):
    assert response.status_code == 404, (name, response.status_code)


def _assert_login(response, name):
    assert response.status_code in (302, 401, 403), (name, response.status_code)
    if response.status_code == 302:
        assert "/accounts/login/" in response["Location"]


@pytest.mark.parametrize("name", sorted(n for n, (kind, _, _) in REVIEWER_ROUTES.items() if kind == REVIEW))
@pytest.mark.parametrize("status", ["in_review", "published"])
def test_review_routes_are_for_the_organisation_its_reviewers_auditors_and_the_chair(
    name, status, role_users, storage_dir
):
    world = _review_world(role_users, status)
    _, method, url = ROUTES[name]
    for user in (world["outsider"], world["unassigned"]):
        _assert_hidden(_request(user, method, url(world)), name)
    _assert_login(_request(None, method, url(world)), name)
    for user in (world["owner"], world["reviewer"], world["auditor"], world["chair"]):
        response = _request(user, method, url(world))
        assert response.status_code != 404, (name, user, response.status_code)
        if method == "get":
            assert response.status_code == 200, (name, user, response.status_code)


@pytest.mark.parametrize("name", sorted(n for n, (kind, _, _) in REVIEWER_ROUTES.items() if kind == REVIEW))
def test_a_draft_has_no_review_for_anyone(name, role_users, storage_dir):
    world = _review_world(role_users, "draft")
    _, method, url = ROUTES[name]
    for user in (world["owner"], world["reviewer"], world["auditor"], world["outsider"]):
        _assert_hidden(_request(user, method, url(world)), name)


@pytest.mark.parametrize("name", sorted(n for n, (kind, _, _) in REVIEWER_ROUTES.items() if kind == MINE))
def test_an_assignment_is_its_reviewers_own(name, role_users, storage_dir):
    world = _review_world(role_users, "in_review")
    _, method, url = ROUTES[name]
    for user in (world["owner"], world["outsider"], world["unassigned"]):
        _assert_hidden(_request(user, method, url(world)), name)
    _assert_login(_request(None, method, url(world)), name)
    assert _request(world["reviewer"], method, url(world)).status_code != 404, name


@pytest.mark.parametrize(
    "name", sorted(n for n, (kind, _, _) in REVIEWER_ROUTES.items() if kind == REVIEW_LIST)
)
def test_review_lists_never_carry_hidden_rows(name, role_users, storage_dir):
    world = _review_world(role_users, "in_review")
    _, _, url = ROUTES[name]
    for user in (world["outsider"], world["unassigned"]):
        response = _request(user, "get", url(world))
        assert response.status_code == 200 and response.json()["results"] == [], (name, user)
    _assert_login(_request(None, "get", url(world)), name)
    assert _request(world["reviewer"], "get", url(world)).json()["results"], name


SHARED_ROUTES = sorted(name for name, (kind, _, _) in ROUTES.items() if kind == SHARED)
OWN_ROUTES = sorted(name for name, (kind, _, _) in ROUTES.items() if kind == OWN)


def _anonymous_refused(response) -> bool:
    if response.status_code == 302:
        return "/accounts/login/" in response["Location"]
    return response.status_code in (401, 403)


@pytest.mark.parametrize("name", SHARED_ROUTES)
def test_shared_rows_are_the_organisations_and_the_overseers(name, role_users, storage_dir, settings):
    world = _oversee_world(role_users, "draft", settings)
    _, method, url = ROUTES[name]
    for user in (world["outsider"], world["auditor"], role_users["reviewer"]):
        assert _request(user, method, url(world)).status_code == 404, (name, user)
    assert _anonymous_refused(_request(None, method, url(world))), name
    assert _request(world["owner"], method, url(world)).status_code != 404, name
    put(Submission.objects.filter(pk=world["sub"].pk), "peer_reviewed")
    assert _request(world["outsider"], method, url(world)).status_code == 404, name
    assert _request(world["auditor"], method, url(world)).status_code != 404, name


SPOTCHECK_ROUTES = sorted(name for name, (kind, _, _) in ROUTES.items() if kind == Access.SPOTCHECK)


@pytest.mark.parametrize("name", SPOTCHECK_ROUTES)
def test_a_spotcheck_is_the_organisations_and_the_overseers_until_its_curve_is_published(
    name, role_users, storage_dir, settings
):
    from leaderboard.models import Publication
    from tests.factories import PublicationFactory

    world = _oversee_world(role_users, "draft", settings)
    _, method, url = ROUTES[name]
    for user in (None, world["outsider"], world["auditor"], role_users["chair"], role_users["reviewer"]):
        assert _request(user, method, url(world)).status_code == 404, (name, user)
    assert _request(world["owner"], method, url(world)).status_code == 200, name
    put(Submission.objects.filter(pk=world["sub"].pk), "peer_reviewed")
    for user in (None, world["outsider"], role_users["reviewer"]):
        assert _request(user, method, url(world)).status_code == 404, (name, user)
    for user in (world["owner"], world["auditor"], role_users["chair"]):
        assert _request(user, method, url(world)).status_code == 200, (name, user)
    # a finished re-measurement of the published curve is everyone's; one still under embargo is nobody else's
    put(Submission.objects.filter(pk=world["sub"].pk), "published")
    publication = PublicationFactory(submission=world["sub"], version=world["version"], scheduled=True)
    world["spotcheck"].__class__.objects.filter(pk=world["spotcheck"].pk).update(publication=publication)
    assert _request(None, method, url(world)).status_code == 404, name
    put(Publication.objects.filter(pk=publication.pk), "published", published_at=timezone.now())
    for user in (None, world["outsider"], role_users["reviewer"]):
        response = _request(user, method, url(world))
        assert response.status_code == 200, (name, user)
        assert response.json()["endpoint_url"] is None and "credential" not in response.content.decode()


PREVIEW_ROUTES = sorted(name for name, (kind, _, _) in ROUTES.items() if kind == Access.PREVIEW)


@pytest.mark.parametrize("name", PREVIEW_ROUTES)
def test_a_preview_is_its_organisations_only(name, role_users, storage_dir, settings):
    from previews.models import Preview
    from tests.previews.support import VLLM

    world = _oversee_world(role_users, "published", settings)
    world["preview"] = Preview.objects.create(
        organisation=world["sub"].organisation,
        system=world["system"],
        benchmark=world["sub"].benchmark,
        name="acme preview",
        files=[{"name": VLLM[0].name, "size_bytes": 1, "sha256": "", "storage_key": ""}],
    )
    _, method, url = ROUTES[name]
    for user in (world["outsider"], world["auditor"], role_users["chair"], role_users["reviewer"]):
        assert _request(user, method, url(world)).status_code == 404, (name, user)
    assert _anonymous_refused(_request(None, method, url(world))), name
    assert _request(world["owner"], method, url(world)).status_code != 404, name
    assert Preview.objects.filter(pk=world["preview"].pk).exists() or name.endswith("delete")


TENDER_ROUTES = sorted(name for name, (kind, _, _) in ROUTES.items() if kind == Access.TENDER)


@pytest.mark.parametrize("name", TENDER_ROUTES)
def test_a_saved_tender_is_its_organisations_until_shared(name, role_users, storage_dir, settings):
    from leaderboard.models import SavedTender
    from tests.factories import SavedTenderFactory

    world = _oversee_world(role_users, "published", settings)
    world["tender"] = SavedTenderFactory(organisation=world["sub"].organisation, created_by=world["owner"])
    _, method, url = ROUTES[name]
    for user in (world["outsider"], world["auditor"], role_users["chair"], role_users["reviewer"]):
        assert _request(user, method, url(world)).status_code == 404, (name, user)
    anonymous = _request(None, method, url(world))
    assert anonymous.status_code == 404 if method == "get" else _anonymous_refused(anonymous), name
    assert _request(world["owner"], method, url(world)).status_code not in (403, 404), name
    if not SavedTender.objects.filter(pk=world["tender"].pk).exists():
        return  # deleted by its organisation
    put(SavedTender.objects.filter(pk=world["tender"].pk), "shared")
    for user in (None, world["outsider"], world["auditor"], role_users["chair"]):
        code = _request(user, method, url(world)).status_code
        if method == "get":
            assert code == 200, (name, user)
        else:  # read-only for everyone else: refused (a page's redirect with the refusal, or the login page)
            assert code in (302, 403), (name, user)
    assert SavedTender.objects.filter(pk=world["tender"].pk, status="shared").exists(), name


@pytest.mark.parametrize("name", OWN_ROUTES)
def test_notifications_are_their_users_only(name, role_users, storage_dir, settings):
    world = _oversee_world(role_users, "peer_reviewed", settings)
    _, method, url = ROUTES[name]
    for user in (world["outsider"], world["auditor"], role_users["chair"], role_users["reviewer"]):
        assert _request(user, method, url(world)).status_code == 404, (name, user)
    assert _anonymous_refused(_request(None, method, url(world))), name
    # an API answer, or a page's form redirecting back to the page
    assert _request(world["owner"], method, url(world)).status_code == (
        302 if "/api/" not in url(world) and method == "post" else 200
    ), name


# --- The public leaderboard (leaderboard/urls.py, leaderboard/urls_results.py) ---------------------------
# PUBLISHED: a page of one published result (or its system): 200 for everyone, anonymous included, and a 404
# for everyone while the result is only scheduled (under embargo, waiting for its cohort) or the system has
# nothing published. The hidden system's name never shows, on any public page, in any format.
PUBLISHED = Access.PUBLISHED
LEADERBOARD_ROUTES = _routes(group="leaderboard")
ROUTES.update(LEADERBOARD_ROUTES)
HIDDEN_SYSTEM_NAME = "Unreleased-Z9"


def _publication_world(role_users) -> dict:
    """A published result of acme's system (with its revision's and an annotation's evidence packs), and
    Unreleased-Z9 with a result scheduled for next week."""
    from leaderboard.models import Annotation
    from leaderboard.publishing.evidence import evidence_pack_build_annotation, evidence_pack_build_revision
    from tests.factories import PublicationFactory, PublicationRevisionFactory, SystemFactory

    acme = role_users["organisations"]["acme"]
    published = PublicationFactory(submission__system=SystemFactory(organisation=acme))
    evidence_pack_build_revision(revision=PublicationRevisionFactory(publication=published))
    annotation = Annotation.objects.create(
        publication=published, text="A note.", created_by=role_users["chair"]
    )
    evidence_pack_build_annotation(annotation=annotation)
    other = PublicationFactory(submission__benchmark=published.submission.benchmark)
    hidden_system = SystemFactory(organisation=acme, name=HIDDEN_SYSTEM_NAME)
    scheduled = PublicationFactory(
        scheduled=True,
        submission__system=hidden_system,
        submission__benchmark=published.submission.benchmark,
    )
    model = published.submission.benchmark.model_id
    from tests.factories import EndpointFactory

    EndpointFactory(submission=published.submission, public=True)
    shown_check = _spotcheck_of(published.submission, auditor=role_users["auditor"], publication=published)
    hidden_check = _spotcheck_of(scheduled.submission, auditor=role_users["auditor"], publication=scheduled)
    return {
        "shown": {
            "annotation_id": annotation.pk,
            "spotcheck_id": shown_check.pk,
            "public_id": published.public_id,
            "system_id": published.submission.system_id,
            "model": model,
            "ids": f"{published.public_id},{other.public_id}",
        },
        "hidden": {
            "annotation_id": annotation.pk,
            "spotcheck_id": hidden_check.pk,
            "public_id": scheduled.public_id,
            "system_id": hidden_system.pk,
            "model": model,
            "ids": f"{published.public_id},{scheduled.public_id}",
        },
    }


@pytest.mark.parametrize("name", sorted(n for n, (kind, _, _) in ROUTES.items() if kind == PUBLISHED))
def test_published_result_pages_are_public_and_scheduled_ones_do_not_exist(name, role_users, storage_dir):
    world = _publication_world(role_users)
    _, _, url = ROUTES[name]
    for user in (
        None,
        role_users["reviewer"],
        role_users["submitter"],
        role_users["auditor"],
        role_users["chair"],
    ):
        shown = _request(user, "get", url(world["shown"]))
        assert shown.status_code == 200, (name, user, shown.status_code)
        body = b"".join(shown.streaming_content) if shown.streaming else shown.content
        assert HIDDEN_SYSTEM_NAME.encode() not in body, (name, user)
        hidden = _request(user, "get", url(world["hidden"]))
        assert hidden.status_code in (400, 404), (name, user, hidden.status_code)
        assert HIDDEN_SYSTEM_NAME.encode() not in hidden.content, (name, user)


def test_public_leaderboard_pages_never_name_an_unpublished_system(role_users, storage_dir):
    world = _publication_world(role_users)
    model = world["shown"]["model"]
    for url in ("/", "/leaderboard/", f"/leaderboard/{model}/", "/leaderboard/llama3_1-8b/"):
        for user in (None, role_users["submitter"], role_users["chair"]):
            response = _request(user, "get", url)
            assert response.status_code == 200 and HIDDEN_SYSTEM_NAME.encode() not in response.content, url


# --- The public API and the buyer's pages (leaderboard/api/results.py, leaderboard/views/buyer.py) -------------------
# Read-only, no login, the anonymous view whoever asks: the lists and queries answer everyone and never carry an
# unpublished row in any format (the embargoed Unreleased-Z9 included); one result by its public id is a 404 for
# everyone, its owner, auditors and the chair included, until it is published (PUBLISHED_ONLY).
PUBLISHED_ONLY = Access.PUBLISHED_ONLY
PUBLIC_QUERY_ROUTES = _routes(group="public-query")
ROUTES.update(PUBLIC_QUERY_ROUTES)


# --- The public transparency log (leaderboard/urls_log.py, docs/evidence.md) ----------------------------------------
# Public facts only, the same for everyone and every role: checkpoints (the empty log's too), keys, leaves, proofs.
LOG_ROUTES = _routes(group="log")
ROUTES.update(LOG_ROUTES)


@pytest.mark.parametrize("name", sorted(LOG_ROUTES))
def test_the_public_log_answers_everyone_alike(name, role_users):
    from leaderboard.publishing.evidence import log_append

    _, method, url = ROUTES[name]
    log_append(b'{"payload": "first"}', "EP-T00001")
    log_append(b'{"payload": "second"}', "EP-T00002")
    bodies = set()
    for user in (
        None,
        role_users["submitter"],
        role_users["reviewer"],
        role_users["auditor"],
        role_users["chair"],
    ):
        response = _request(user, method, url({}))
        assert response.status_code == 200, (name, user, response.status_code)
        assert "public" in response["Cache-Control"], name
        bodies.add(response.content)
    assert len(bodies) == 1, name


_SECRETS = ("Unreleased-Z9", "EP-EMBARGO1", "Audited-Secret", "Draft-Secret")


@pytest.fixture
def _public_world(role_users):
    from leaderboard.board.cache import public_cache_bump
    from tests.factories import BenchmarkFactory, PublicationFactory, SubmissionFactory, SystemFactory
    from tests.leaderboard.support import make_curve, publish

    public_cache_bump()  # this test's database, not an earlier test's cached answers
    acme = role_users["organisations"]["acme"]
    benchmark = BenchmarkFactory(sample=True)
    embargoed = PublicationFactory(
        scheduled=True,
        submission__benchmark=benchmark,
        submission__system=SystemFactory(organisation=acme, name="Unreleased-Z9"),
        curve=make_curve("Unreleased-Z9", benchmark.model_id, scale=40.0),
        public_id="EP-EMBARGO1",
    )
    SubmissionFactory(
        audited=True, benchmark=benchmark, system=SystemFactory(organisation=acme, name="Audited-Secret")
    )
    SubmissionFactory(
        draft=True, benchmark=benchmark, system=SystemFactory(organisation=acme, name="Draft-Secret")
    )
    return {"embargoed": embargoed, "shown": publish(benchmark=benchmark), "role_users": role_users}


def _with_format(url: str, fmt: str) -> str:
    return url if fmt == "html" else f"{url}{'&' if '?' in url else '?'}format={fmt}"


@pytest.mark.parametrize(
    "name", sorted(n for n, (kind, _, _) in PUBLIC_QUERY_ROUTES.items() if kind == PUBLIC)
)
def test_public_queries_never_show_an_unpublished_result_in_any_format(name, _public_world):
    _, _, url = ROUTES[name]
    formats = ("html",) if name.startswith("leaderboard:") else ("json", "csv")
    users = [
        "anonymous",
        "submitter",
        "auditor",
        "chair",
    ]  # the owner, auditors and the chair see it elsewhere
    for fmt in formats:
        for who in users:
            client = Client()
            if who != "anonymous":
                client.force_login(_public_world["role_users"][who])
            response = client.get(_with_format(url(_public_world), fmt))
            assert response.status_code == 200, (name, fmt, who, response.status_code)
            body = response.content.decode()
            assert not [s for s in _SECRETS if s in body], (name, fmt, who)
            if "benchmark" not in name:
                assert _public_world["shown"].public_id in body, (name, fmt, who)


@pytest.mark.parametrize(
    "name", sorted(n for n, (k, _, _) in PUBLIC_QUERY_ROUTES.items() if k == PUBLISHED_ONLY)
)
def test_a_public_result_is_404_for_everyone_until_published(name, _public_world):
    from leaderboard.board.cache import public_cache_bump
    from leaderboard.models import Publication

    _, _, url = ROUTES[name]
    for fmt in ("json", "csv"):
        for who in ("anonymous", "submitter", "auditor", "chair"):
            client = Client()
            if who != "anonymous":
                client.force_login(_public_world["role_users"][who])
            response = client.get(_with_format(url(_public_world), fmt))
            assert response.status_code == 404, (name, fmt, who)
            assert "Unreleased-Z9" not in response.content.decode()
    put(Submission.objects.filter(pk=_public_world["embargoed"].submission_id), "published")
    put(
        Publication.objects.filter(pk=_public_world["embargoed"].pk), "published", published_at=timezone.now()
    )
    public_cache_bump()
    assert Client().get(url(_public_world)).status_code == 200
