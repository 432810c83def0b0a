"""Every route the portal serves is in this access table, generated from the URL configuration.

A new page, endpoint, export or download that is not declared here fails
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
from tests.submissions.support import api_client, make_catalog

pytestmark = pytest.mark.django_db

PUBLIC, LOGIN, ROLE, OBJECT, LIST, FLOW = "public", "login", "role", "object", "list", "flow"
# One object of a submission for auditors and the chair: 404 where the submission is hidden, 403 (or the login
# page) for anyone else, whatever the state.
OVERSEE = "oversee"
# The submitting organisation's and the overseers' (auditors, chair): never anyone else's, never in a draft
# for the overseers.
SHARED = "shared"
# One user's own rows (notifications, API tokens): 404 for everyone else, auditors and the chair included.
OWN = "own"
# A system: its organisation's members, auditors and the chair see it; everyone once it has a published result.
SYSTEM = "system"

# name -> (access class, method, url builder taking the world dict)
ROUTES = {
    "home": (PUBLIC, "get", lambda w: "/"),
    "healthz": (PUBLIC, "get", lambda w: "/healthz"),
    "audit:head": (PUBLIC, "get", lambda w: "/audit/head"),
    "leaderboard:index": (PUBLIC, "get", lambda w: "/leaderboard/"),
    "submissions:rules": (PUBLIC, "get", lambda w: "/rules/"),
    "api-schema": (PUBLIC, "get", lambda w: "/api/schema/"),
    "api-docs": (PUBLIC, "get", lambda w: "/api/docs/"),
    "api-redoc": (PUBLIC, "get", lambda w: "/api/redoc/"),
    "api:api-root": (PUBLIC, "get", lambda w: "/api/v1/"),
    "api:benchmark-list": (PUBLIC, "get", lambda w: "/api/v1/benchmarks/"),
    "api:benchmark-detail": (PUBLIC, "get", lambda w: "/api/v1/benchmarks/llama3_1-8b/"),
    # account flows: reachable by anyone, they reveal nothing about submissions
    "login": (FLOW, "get", lambda w: "/accounts/login/"),
    "logout": (FLOW, "post", lambda w: "/accounts/logout/"),
    "password_reset": (FLOW, "get", lambda w: "/accounts/password_reset/"),
    "password_reset_done": (FLOW, "get", lambda w: "/accounts/password_reset/done/"),
    "password_reset_confirm": (FLOW, "get", lambda w: "/accounts/reset/MQ/set-password/"),
    "password_reset_complete": (FLOW, "get", lambda w: "/accounts/reset/done/"),
    "password_change": (LOGIN, "get", lambda w: "/accounts/password_change/"),
    "password_change_done": (LOGIN, "get", lambda w: "/accounts/password_change/done/"),
    "submissions:dashboard": (LOGIN, "get", lambda w: "/dashboard/"),
    "submissions:create": (LOGIN, "post", lambda w: "/submissions/new/"),
    "submissions:systems": (LOGIN, "get", lambda w: "/systems/"),
    "submissions:system_register": (LOGIN, "post", lambda w: "/systems/new/"),
    "review:queue": (LOGIN, "get", lambda w: "/review/"),
    "api:me": (LOGIN, "get", lambda w: "/api/v1/me/"),
    "audit:event_list": (ROLE, "get", lambda w: "/audit/"),
    # lists: filtered by visibility, never a 404
    "api:submission-list": (LIST, "get", lambda w: "/api/v1/submissions/?limit=500"),
    "api:version-list": (LIST, "get", lambda w: "/api/v1/versions/?limit=500"),
    "api:check-run-list": (LIST, "get", lambda w: "/api/v1/check-runs/?limit=500"),
    "api:upload-list": (LIST, "get", lambda w: "/api/v1/uploads/?limit=500"),
    "api:submission-reviewer-list": (LIST, "get", lambda w: "/api/v1/submission-reviewers/?limit=500"),
    # one object of one submission: 404 outside the visibility table
    "submissions:detail": (OBJECT, "get", lambda w: f"/submissions/{w['sub'].pk}/"),
    "submissions:check_fragment": (OBJECT, "get", lambda w: f"/submissions/{w['sub'].pk}/versions/1/check/"),
    "submissions:download": (OBJECT, "get", lambda w: f"/submissions/{w['sub'].pk}/versions/1/files/0/"),
    "submissions:report_json": (
        OBJECT,
        "get",
        lambda w: f"/submissions/{w['sub'].pk}/versions/1/report.json",
    ),
    "submissions:summary": (OBJECT, "get", lambda w: f"/submissions/{w['sub'].pk}/versions/1/summary/"),
    "submissions:compare": (OBJECT, "get", lambda w: f"/submissions/{w['sub'].pk}/compare/"),
    "submissions:submit": (OBJECT, "post", lambda w: f"/submissions/{w['sub'].pk}/submit/"),
    "submissions:withdraw": (OBJECT, "post", lambda w: f"/submissions/{w['sub'].pk}/withdraw/"),
    "submissions:reject": (OBJECT, "post", lambda w: f"/submissions/{w['sub'].pk}/reject/"),
    "submissions:resubmit": (OBJECT, "post", lambda w: f"/submissions/{w['sub'].pk}/resubmit/"),
    "submissions:recheck": (OBJECT, "post", lambda w: f"/submissions/{w['sub'].pk}/versions/1/recheck/"),
    "api:submission-detail": (OBJECT, "get", lambda w: f"/api/v1/submissions/{w['sub'].pk}/"),
    "api:submission-submit": (OBJECT, "post", lambda w: f"/api/v1/submissions/{w['sub'].pk}/submit/"),
    "api:submission-withdraw": (OBJECT, "post", lambda w: f"/api/v1/submissions/{w['sub'].pk}/withdraw/"),
    "api:submission-reject": (OBJECT, "post", lambda w: f"/api/v1/submissions/{w['sub'].pk}/reject/"),
    "api:submission-resubmit": (OBJECT, "post", lambda w: f"/api/v1/submissions/{w['sub'].pk}/resubmit/"),
    "api:submission-extend": (OBJECT, "post", lambda w: f"/api/v1/submissions/{w['sub'].pk}/extend/"),
    "api:version-detail": (OBJECT, "get", lambda w: f"/api/v1/versions/{w['version'].pk}/"),
    "api:version-file": (OBJECT, "get", lambda w: f"/api/v1/versions/{w['version'].pk}/files/0/"),
    "api:version-recheck": (OBJECT, "post", lambda w: f"/api/v1/versions/{w['version'].pk}/recheck/"),
    "api:check-run-detail": (OBJECT, "get", lambda w: f"/api/v1/check-runs/{w['run'].pk}/"),
    "api:upload-detail": (OBJECT, "get", lambda w: f"/api/v1/uploads/{w['upload'].pk}/"),
    "api:upload-finish": (OBJECT, "post", lambda w: f"/api/v1/uploads/{w['upload'].pk}/finish/"),
    "api:upload-part": (OBJECT, "put", lambda w: f"/api/v1/uploads/{w['upload'].pk}/parts/0/"),
    "api:upload-sign": (OBJECT, "post", lambda w: f"/api/v1/uploads/{w['upload'].pk}/sign/"),
    # systems (visibility of their own, see SYSTEM above)
    "submissions:system_detail": (SYSTEM, "get", lambda w: f"/systems/{w['system'].pk}/"),
    "submissions:system_update_description": (
        SYSTEM,
        "post",
        lambda w: f"/systems/{w['system'].pk}/description/",
    ),
    "api:system-list": (SYSTEM, "get", lambda w: "/api/v1/systems/?limit=500"),
    "api:system-detail": (SYSTEM, "get", lambda w: f"/api/v1/systems/{w['system'].pk}/"),
    "api:system-update-description": (
        SYSTEM,
        "post",
        lambda w: f"/api/v1/systems/{w['system'].pk}/description/",
    ),
    # the auditor's and the chair's pages (review/urls_staff.py), the notifications page
    "review:audit_queue": (ROLE, "get", lambda w: "/review/audit/"),
    "review:chair_dashboard": (ROLE, "get", lambda w: "/review/chair/"),
    "review:conflicts": (LOGIN, "get", lambda w: "/review/conflicts/"),
    "review:conflict_declare": (LOGIN, "post", lambda w: "/review/conflicts/declare/"),
    "accounts:notifications": (LOGIN, "get", lambda w: "/accounts/notifications/"),
    "accounts:notifications_read": (LOGIN, "post", lambda w: "/accounts/notifications/read/"),
    "accounts:notification_preference": (LOGIN, "post", lambda w: "/accounts/notifications/preference/"),
    "accounts:tokens": (LOGIN, "get", lambda w: "/accounts/tokens/"),
    # the account page, two-factor sign-in, e-mail change, organisations run by their admins, global roles
    # (tests/accounts/test_organisations.py and test_two_factor.py hold who may do what on each)
    "accounts:account": (LOGIN, "get", lambda w: "/accounts/"),
    "admin_login": (FLOW, "get", lambda w: "/admin/login/"),
    "accounts:verify": (FLOW, "get", lambda w: "/accounts/login/verify/"),
    "accounts:two_factor": (LOGIN, "get", lambda w: "/accounts/two-factor/"),
    "accounts:recovery_codes": (LOGIN, "post", lambda w: "/accounts/two-factor/recovery-codes/"),
    "accounts:two_factor_off": (LOGIN, "post", lambda w: "/accounts/two-factor/off/"),
    "accounts:email_change": (LOGIN, "get", lambda w: "/accounts/email/"),
    "accounts:email_confirm": (LOGIN, "get", lambda w: "/accounts/email/confirm/not-a-token/"),
    "accounts:email_verify": (LOGIN, "get", lambda w: "/accounts/email/verify/not-a-token/"),
    "accounts:email_verify_send": (LOGIN, "post", lambda w: "/accounts/email/verify/"),
    "accounts:organisations": (LOGIN, "get", lambda w: "/accounts/organisations/"),
    "accounts:organisation": (ROLE, "get", lambda w: "/accounts/organisations/acmecompute/"),
    "accounts:invite": (ROLE, "post", lambda w: "/accounts/organisations/acmecompute/invite/"),
    "accounts:invitation_withdraw": (
        ROLE,
        "post",
        lambda w: "/accounts/organisations/acmecompute/invitations/1/withdraw/",
    ),
    "accounts:member_roles": (ROLE, "post", lambda w: "/accounts/organisations/acmecompute/members/1/"),
    "accounts:global_roles": (ROLE, "get", lambda w: "/accounts/roles/"),
    "accounts:global_role_remove": (ROLE, "post", lambda w: "/accounts/roles/1/remove/"),
    "accounts:invitation_accept": (FLOW, "get", lambda w: "/accounts/invitations/not-a-token/"),
    "review:attestation": (OVERSEE, "get", lambda w: f"/review/audit/{w['sub'].pk}/"),
    "review:attest": (OVERSEE, "post", lambda w: f"/review/audit/{w['sub'].pk}/attest/"),
    "review:evidence_request": (OVERSEE, "post", lambda w: f"/review/audit/{w['sub'].pk}/evidence/"),
    "review:audit_reject": (OVERSEE, "post", lambda w: f"/review/audit/{w['sub'].pk}/reject/"),
    "review:audit_recheck": (OVERSEE, "post", lambda w: f"/review/audit/{w['sub'].pk}/recheck/"),
    "review:waiver_grant": (OVERSEE, "post", lambda w: f"/review/audit/{w['sub'].pk}/waive/"),
    "review:waiver_decide": (OVERSEE, "post", lambda w: f"/review/waivers/{w['waiver'].pk}/decide/"),
    "review:chair_submission": (OVERSEE, "get", lambda w: f"/review/chair/submissions/{w['sub'].pk}/"),
    "review:chair_assign": (OVERSEE, "post", lambda w: f"/review/chair/submissions/{w['sub'].pk}/assign/"),
    "review:chair_draw": (OVERSEE, "post", lambda w: f"/review/chair/submissions/{w['sub'].pk}/draw/"),
    "review:chair_release": (
        OVERSEE,
        "post",
        lambda w: f"/review/chair/assignments/{w['assignment'].pk}/release/",
    ),
    "review:conflict_remove": (OVERSEE, "post", lambda w: f"/review/conflicts/{w['conflict'].pk}/remove/"),
    # @@API_ENTRIES@@
    # the API of the audit, the chair and notifications (review/api_audit.py, review/api_chair.py, accounts/api.py)
    "api:audit-list": (ROLE, "get", lambda w: "/api/v1/audit/"),
    "api:chair-dashboard-list": (ROLE, "get", lambda w: "/api/v1/chair/dashboard/"),
    "api:chair-assignment-list": (ROLE, "get", lambda w: "/api/v1/chair/assignments/"),
    "api:chair-assignment-draw": (LOGIN, "post", lambda w: "/api/v1/chair/assignments/draw/"),
    "api:conflict-list": (LOGIN, "get", lambda w: "/api/v1/conflicts/"),
    "api:waiver-list": (LOGIN, "get", lambda w: "/api/v1/waivers/"),
    "api:waiver-grant": (LOGIN, "post", lambda w: "/api/v1/waivers/grant/"),
    "api:evidence-request-list": (LOGIN, "get", lambda w: "/api/v1/evidence-requests/"),
    "api:notification-list": (LOGIN, "get", lambda w: "/api/v1/notifications/"),
    "api:notification-read-all": (LOGIN, "post", lambda w: "/api/v1/notifications/read-all/"),
    "api:notification-preference": (LOGIN, "get", lambda w: "/api/v1/notification-preference/"),
    "api:audit-detail": (OVERSEE, "get", lambda w: f"/api/v1/audit/{w['sub'].pk}/"),
    "api:audit-attest": (OVERSEE, "post", lambda w: f"/api/v1/audit/{w['sub'].pk}/attest/"),
    "api:audit-request-evidence": (
        OVERSEE,
        "post",
        lambda w: f"/api/v1/audit/{w['sub'].pk}/request-evidence/",
    ),
    "api:audit-recheck": (OVERSEE, "post", lambda w: f"/api/v1/audit/{w['sub'].pk}/recheck/"),
    "api:waiver-decide": (OVERSEE, "post", lambda w: f"/api/v1/waivers/{w['waiver'].pk}/decide/"),
    "api:chair-assignment-release": (
        OVERSEE,
        "post",
        lambda w: f"/api/v1/chair/assignments/{w['assignment'].pk}/release/",
    ),
    "api:conflict-detail": (OVERSEE, "get", lambda w: f"/api/v1/conflicts/{w['conflict'].pk}/"),
    # seen by the submitting organisation and by auditors and the chair (never in a draft)
    "api:waiver-detail": (SHARED, "get", lambda w: f"/api/v1/waivers/{w['waiver'].pk}/"),
    "api:evidence-request-detail": (
        SHARED,
        "get",
        lambda w: f"/api/v1/evidence-requests/{w['evidence'].pk}/",
    ),
    "api:evidence-request-answer": (
        SHARED,
        "post",
        lambda w: f"/api/v1/evidence-requests/{w['evidence'].pk}/answer/",
    ),
    # the submitter's writes from the submission page (review/urls_submitter.py): 403 for auditors and the chair
    "review:submitter_comment": (SHARED, "post", lambda w: f"/review/submissions/{w['sub'].pk}/thread/"),
    "review:waiver_request": (SHARED, "post", lambda w: f"/review/submissions/{w['sub'].pk}/waivers/"),
    "review:evidence_answer": (SHARED, "post", lambda w: f"/review/evidence/{w['evidence'].pk}/answer/"),
    # one user's own
    "api:notification-detail": (OWN, "get", lambda w: f"/api/v1/notifications/{w['notification'].pk}/"),
    "api:notification-read": (OWN, "post", lambda w: f"/api/v1/notifications/{w['notification'].pk}/read/"),
    "accounts:token_revoke": (OWN, "post", lambda w: f"/accounts/tokens/{w['api_token'].pk}/revoke/"),
}
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
    run = CheckRun.objects.create(version=version, status="passed", finished_at=timezone.now(), counts={})
    upload = upload_start(
        actor=role_users["submitter"],
        submission=submission,
        filename="more.tar.gz",
        size=len(payload),
        sha256=digest,
    )
    Submission.objects.filter(pk=submission.pk).update(status=status)
    outsider = UserFactory(username=f"outsider-{status}")
    MembershipFactory(user=outsider, organisation=role_users["organisations"]["nimbus"], role="submitter")
    return {
        "sub": submission,
        "system": system,
        "version": version,
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
    Submission.objects.filter(pk=world["sub"].pk).update(status="peer_reviewed")
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


# --- The reviewer's pages and API (review/urls_reviewer.py, review/api_reviewer.py) -------------------
# A review is read by the submitting organisation, its assigned reviewers, auditors and the chair, from
# `submitted` on; publishing a result does not publish its review. MINE: one reviewer's own assignment.
REVIEW, MINE, REVIEW_LIST = "review", "mine", "review-list"
REVIEWER_ROUTES = {
    "review:review_page": (REVIEW, "get", lambda w: f"/review/submissions/{w['sub'].pk}/"),
    "review:review_create": (REVIEW, "post", lambda w: f"/review/submissions/{w['sub'].pk}/review/"),
    "review:comment_create": (REVIEW, "post", lambda w: f"/review/submissions/{w['sub'].pk}/comments/"),
    "review:objection_close": (
        REVIEW,
        "post",
        lambda w: f"/review/submissions/{w['sub'].pk}/comments/{w['comment'].pk}/close/",
    ),
    "review:file_browser": (
        REVIEW,
        "get",
        lambda w: f"/review/submissions/{w['sub'].pk}/versions/1/files/0/",
    ),
    "api:comment-detail": (REVIEW, "get", lambda w: f"/api/v1/comments/{w['comment'].pk}/"),
    "api:comment-close": (REVIEW, "post", lambda w: f"/api/v1/comments/{w['comment'].pk}/close/"),
    "api:review-version-diff": (REVIEW, "get", lambda w: f"/api/v1/review-versions/{w['version2'].pk}/diff/"),
    "api:review-version-files": (
        REVIEW,
        "get",
        lambda w: f"/api/v1/review-versions/{w['version'].pk}/files/",
    ),
    "api:review-version-lines": (
        REVIEW,
        "get",
        lambda w: f"/api/v1/review-versions/{w['version'].pk}/files/0/lines/?member=bundle",
    ),
    "review:assignment_accept": (MINE, "post", lambda w: f"/review/assignments/{w['assignment'].pk}/accept/"),
    "review:assignment_decline": (
        MINE,
        "post",
        lambda w: f"/review/assignments/{w['assignment'].pk}/decline/",
    ),
    "api:review-assignment-detail": (
        MINE,
        "get",
        lambda w: f"/api/v1/review-assignments/{w['assignment'].pk}/",
    ),
    "api:review-assignment-accept": (
        MINE,
        "post",
        lambda w: f"/api/v1/review-assignments/{w['assignment'].pk}/accept/",
    ),
    "api:review-assignment-decline": (
        MINE,
        "post",
        lambda w: f"/api/v1/review-assignments/{w['assignment'].pk}/decline/",
    ),
    "api:review-assignment-list": (REVIEW_LIST, "get", lambda w: "/api/v1/review-assignments/"),
    "api:review-list": (REVIEW_LIST, "get", lambda w: "/api/v1/reviews/"),
    "api:comment-list": (REVIEW_LIST, "get", lambda w: "/api/v1/comments/"),
}
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
        status=ReviewAssignment.Status.ACCEPTED,
        due_at=timezone.now() + timedelta(days=14),
    )
    Review.objects.create(assignment=assignment, version=version, decision="approve")
    comment = Comment.objects.create(
        submission=submission,
        version=version,
        author=role_users["chair"],
        body="matrix objection",
        kind="objection",
        objection_type="validity",
        objection_status="open",
    )
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
    Submission.objects.filter(pk=world["sub"].pk).update(status="peer_reviewed")
    assert _request(world["outsider"], method, url(world)).status_code == 404, name
    assert _request(world["auditor"], method, url(world)).status_code != 404, name


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
PUBLISHED = "published-result"
LEADERBOARD_ROUTES = {
    "leaderboard:benchmark": (PUBLIC, "get", lambda w: "/leaderboard/llama3_1-8b/"),
    "leaderboard:compare": (PUBLISHED, "get", lambda w: f"/leaderboard/{w['model']}/compare/?ids={w['ids']}"),
    "leaderboard:publication_choose": (LOGIN, "post", lambda w: "/leaderboard/submissions/1/publish/"),
    "leaderboard:extension_open": (LOGIN, "post", lambda w: "/leaderboard/submissions/1/extend/"),
    "results:detail": (PUBLISHED, "get", lambda w: f"/results/{w['public_id']}/"),
    "results:data_json": (PUBLISHED, "get", lambda w: f"/results/{w['public_id']}/points.json"),
    "results:data_csv": (PUBLISHED, "get", lambda w: f"/results/{w['public_id']}/points.csv"),
    "results:file": (PUBLISHED, "get", lambda w: f"/results/{w['public_id']}/files/0/"),
    "results:system_history": (PUBLISHED, "get", lambda w: f"/systems/{w['system_id']}/history/"),
    "results:challenge": (LOGIN, "post", lambda w: "/results/EP-000001/challenge/"),
    "results:challenge_resolve": (LOGIN, "post", lambda w: "/results/challenges/1/resolve/"),
}
ROUTES.update(LEADERBOARD_ROUTES)
HIDDEN_SYSTEM_NAME = "Unreleased-Z9"


def _publication_world(role_users) -> dict:
    """A published result of acme's system, and Unreleased-Z9 with a result scheduled for next week."""
    from tests.factories import PublicationFactory, SystemFactory

    acme = role_users["organisations"]["acme"]
    published = PublicationFactory(submission__system=SystemFactory(organisation=acme))
    other = PublicationFactory(submission__benchmark=published.submission.benchmark)
    hidden_system = SystemFactory(organisation=acme, name=HIDDEN_SYSTEM_NAME)
    scheduled = PublicationFactory(
        scheduled=True,
        submission__system=hidden_system,
        submission__benchmark=published.submission.benchmark,
    )
    model = published.submission.benchmark.model_id
    return {
        "shown": {
            "public_id": published.public_id,
            "system_id": published.submission.system_id,
            "model": model,
            "ids": f"{published.public_id},{other.public_id}",
        },
        "hidden": {
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


# --- The public API and the buyer's pages (leaderboard/api.py, leaderboard/views_query.py) -------------------
# Read-only, no login, the anonymous view whoever asks: the lists and queries answer everyone and never carry an
# unpublished row in any format (the embargoed Unreleased-Z9 included); one result by its public id is a 404 for
# everyone, its owner, auditors and the chair included, until it is published (PUBLISHED_ONLY).
PUBLISHED_ONLY = "published-only"
_SLO_QUERY = "benchmark=llama3_1-8b&ttft_p90_ms_max=100000&interactivity_min=0"
_PROCUREMENT_QUERY = "model_1=llama3_1-8b&ttft_p90_ms_max_1=100000"
PUBLIC_QUERY_ROUTES = {
    "api:public-benchmark-list": (PUBLIC, "get", lambda w: "/api/v1/public/benchmarks/"),
    "api:public-benchmark-detail": (PUBLIC, "get", lambda w: "/api/v1/public/benchmarks/llama3_1-8b/"),
    "api:public-result-list": (PUBLIC, "get", lambda w: "/api/v1/public/results/"),
    "api:public-point-list": (PUBLIC, "get", lambda w: "/api/v1/public/points/"),
    "api:public-curve-list": (PUBLIC, "get", lambda w: "/api/v1/public/curves/"),
    "api:public-slo-list": (PUBLIC, "get", lambda w: f"/api/v1/public/slo/?{_SLO_QUERY}"),
    "api:public-procurement-list": (
        PUBLIC,
        "get",
        lambda w: f"/api/v1/public/procurement/?{_PROCUREMENT_QUERY}",
    ),
    "leaderboard:slo": (PUBLIC, "get", lambda w: f"/leaderboard/slo/?{_SLO_QUERY}"),
    "leaderboard:procurement": (PUBLIC, "get", lambda w: f"/leaderboard/procurement/?{_PROCUREMENT_QUERY}"),
    "api:public-result-detail": (
        PUBLISHED_ONLY,
        "get",
        lambda w: f"/api/v1/public/results/{w['embargoed'].public_id}/",
    ),
}
ROUTES.update(PUBLIC_QUERY_ROUTES)
_SECRETS = ("Unreleased-Z9", "EP-EMBARGO1", "Audited-Secret", "Draft-Secret")


@pytest.fixture
def _public_world(role_users):
    from leaderboard.cache import public_cache_bump
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
    from leaderboard.cache import public_cache_bump
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
    Submission.objects.filter(pk=_public_world["embargoed"].submission_id).update(status="published")
    Publication.objects.filter(pk=_public_world["embargoed"].pk).update(
        status="published", published_at=timezone.now()
    )
    public_cache_bump()
    assert Client().get(url(_public_world)).status_code == 200
