"""Organisations run themselves: an admin invites by e-mail (a signed link that expires and works once), chooses
roles, changes and removes memberships; the chair creates organisations with their first admin and grants the
global roles. Nobody grants what they may not: every escalation is refused. Every change is audited."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.core import mail
from django.test import Client
from django.utils import timezone

from accounts.models import GlobalRole, Invitation, Membership, Organisation, VerifiedAddress
from accounts.services.invitations import (
    invitation_accept,
    invitation_create,
    invitation_from_token,
    invitation_link,
    organisation_create_with_admin,
)
from accounts.services.organisations import (
    global_role_grant,
    membership_grant,
    membership_remove,
    membership_roles_set,
)
from audit.models import AuditEvent
from portal.errors import ApplicationError, NotAllowedError
from tests.factories import InvitationFactory, MembershipFactory, UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def acme_admin(role_users):
    admin = UserFactory(username="acme-admin")
    MembershipFactory(user=admin, organisation=role_users["organisations"]["acme"], role="org_admin")
    return admin


def _client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _link_in(message) -> str:
    return re.search(r"http://[^/\s]+(/accounts/invitations/[^/\s]+/)", message.body).group(1)


def test_invite_accept_as_a_new_account_and_the_member_list_shows_who_invited_whom(
    role_users, acme_admin, django_capture_on_commit_callbacks
):
    admin = _client(acme_admin)
    with django_capture_on_commit_callbacks(execute=True):
        response = admin.post(
            "/accounts/organisations/acmecompute/invite/",
            {"email": "newcomer@example.org", "roles": ["submitter", "reviewer"]},
        )
    assert response.status_code == 302
    assert len(mail.outbox) == 1 and mail.outbox[0].to == ["newcomer@example.org"]
    assert "acme-admin invites you to join AcmeCompute" in mail.outbox[0].body
    link = _link_in(mail.outbox[0])
    assert "newcomer@example.org" in admin.get("/accounts/organisations/acmecompute/").content.decode()

    visitor = Client()
    page = visitor.get(link).content.decode()
    assert "Join AcmeCompute" in page and "Reviewer, Submitter" in page
    weak = visitor.post(link, {"username": "newcomer", "password1": "short", "password2": "short"})
    assert weak.status_code == 200 and "too short" in weak.content.decode()
    with django_capture_on_commit_callbacks(execute=True):
        registered = visitor.post(
            link,
            {"username": "newcomer", "password1": "a-long-passphrase-1", "password2": "a-long-passphrase-1"},
        )
    assert registered.status_code == 302 and registered["Location"] == "/accounts/"
    assert not Membership.objects.filter(
        user__username="newcomer"
    ).exists()  # not before the address confirms
    assert mail.outbox[-1].to == ["newcomer@example.org"]
    confirm = re.search(r"http://[^/\s]+(/accounts/email/verify/[^/\s]+/)", mail.outbox[-1].body).group(1)
    joined = visitor.post(confirm)
    assert joined.status_code == 302 and joined["Location"] == "/accounts/"
    assert "AcmeCompute" in visitor.get("/accounts/").content.decode()
    newcomer = Membership.objects.filter(user__username="newcomer").select_related("user")
    assert sorted(newcomer.values_list("role", flat=True)) == ["reviewer", "submitter"]
    assert {m.added_by for m in newcomer} == {acme_admin} and newcomer[0].user.email == "newcomer@example.org"

    members = admin.get("/accounts/organisations/acmecompute/").content.decode()
    row = re.search(r'<tr data-member="newcomer">.*?</tr>', members, re.S).group(0)
    assert "invited by acme-admin" in row and timezone.now().strftime("%Y-%m-%d") in row
    actions = set(AuditEvent.objects.values_list("action", flat=True))
    assert {"invitation.created", "invitation.accepted", "membership.granted", "user.created"} <= actions


def test_an_invitation_works_once(role_users, acme_admin):
    invitation = invitation_create(
        organisation=role_users["organisations"]["acme"],
        email="reviewer@example.com",
        roles=["reviewer"],
        actor=acme_admin,
    )
    VerifiedAddress.objects.create(user=role_users["reviewer"], email="reviewer@example.com")
    link = invitation_link(invitation)
    first = _client(role_users["reviewer"]).post(link)
    assert first.status_code == 302
    second = _client(role_users["reviewer"]).post(link)
    assert second.status_code == 410 and "already been used" in second.content.decode()
    assert not Membership.objects.filter(user=role_users["submitter"], role="reviewer").exists()
    assert Client().get(link).status_code == 410
    with pytest.raises(ApplicationError) as refused:
        invitation_accept(invitation=invitation, user=role_users["submitter"])
    assert refused.value.code == "invitation_used"


def test_an_expired_withdrawn_or_forged_invitation_is_refused(role_users, acme_admin, settings):
    acme = role_users["organisations"]["acme"]
    expired = InvitationFactory(organisation=acme, invited_by=acme_admin)
    Invitation.objects.filter(pk=expired.pk).update(expires_at=timezone.now() - timedelta(minutes=1))
    response = Client().get(invitation_link(expired))
    assert response.status_code == 410 and "has expired" in response.content.decode()

    old = InvitationFactory(organisation=acme, invited_by=acme_admin)
    token = invitation_link(old).split("/")[-2]
    settings.PORTAL_INVITATION_DAYS = 0  # the signature itself is older than the limit
    with pytest.raises(ApplicationError) as too_old:
        invitation_from_token(token)
    assert too_old.value.code == "invitation_expired"
    settings.PORTAL_INVITATION_DAYS = 7

    withdrawn = InvitationFactory(organisation=acme, invited_by=acme_admin)
    _client(acme_admin).post(f"/accounts/organisations/acmecompute/invitations/{withdrawn.pk}/withdraw/")
    assert "was withdrawn" in Client().get(invitation_link(withdrawn)).content.decode()
    assert AuditEvent.objects.filter(action="invitation.revoked").count() == 1

    forged = Client().get(invitation_link(old)[:-6] + "xxxxx/")
    assert forged.status_code == 410 and "not valid" in forged.content.decode()


# --- Escalations, each refused ---------------------------------------------------------------------------


@pytest.mark.parametrize("role", ["auditor", "chair"])
def test_an_org_admin_cannot_invite_or_make_anyone_auditor_or_chair(role_users, acme_admin, role):
    acme = role_users["organisations"]["acme"]
    with pytest.raises(NotAllowedError) as refused:
        invitation_create(organisation=acme, email="x@example.org", roles=[role], actor=acme_admin)
    assert refused.value.code == "role_not_grantable"
    with pytest.raises(NotAllowedError):
        membership_roles_set(user=role_users["submitter"], organisation=acme, roles=[role], actor=acme_admin)
    with pytest.raises(NotAllowedError):
        membership_grant(user=role_users["submitter"], organisation=acme, role=role, actor=acme_admin)
    with pytest.raises(NotAllowedError):
        global_role_grant(user=role_users["submitter"], role=role, actor=acme_admin)
    client = _client(acme_admin)
    page = client.post(
        "/accounts/organisations/acmecompute/invite/",
        {"email": "x@example.org", "roles": [role]},
        follow=True,
    )
    assert page.status_code == 200 and not Invitation.objects.exists()
    changed = client.post(
        f"/accounts/organisations/acmecompute/members/{role_users['submitter'].pk}/",
        {"roles": [role]},
        follow=True,
    )
    assert "is not a role an organisation can give" in changed.content.decode()
    assert client.get("/accounts/roles/").status_code == 404
    client.post("/accounts/roles/", {"user": "submitter", "role": role})
    assert not GlobalRole.objects.filter(user=role_users["submitter"]).exists()
    assert list(Membership.objects.filter(user=role_users["submitter"]).values_list("role", flat=True)) == [
        "submitter"
    ]


def test_an_org_admin_cannot_act_on_another_organisation(role_users, acme_admin):
    nimbus = role_users["organisations"]["nimbus"]
    with pytest.raises(NotAllowedError):
        invitation_create(organisation=nimbus, email="x@example.org", roles=["reviewer"], actor=acme_admin)
    with pytest.raises(NotAllowedError):
        membership_grant(user=acme_admin, organisation=nimbus, role="reviewer", actor=acme_admin)
    with pytest.raises(NotAllowedError):
        membership_remove(user=role_users["reviewer"], organisation=nimbus, actor=acme_admin)
    client = _client(acme_admin)
    assert client.get("/accounts/organisations/nimbuscloud/").status_code == 404
    assert (
        client.post(
            "/accounts/organisations/nimbuscloud/invite/", {"email": "x@example.org", "roles": ["reviewer"]}
        ).status_code
        == 404
    )
    member = f"/accounts/organisations/nimbuscloud/members/{role_users['reviewer'].pk}/"
    assert client.post(member, {"remove": "1"}).status_code == 404
    assert client.post(member, {"roles": ["org_admin"]}).status_code == 404
    # a member of acme is not someone the acme admin can act on through nimbus, nor vice versa
    assert (
        client.post(
            f"/accounts/organisations/acmecompute/members/{role_users['reviewer'].pk}/", {"remove": "1"}
        ).status_code
        == 404
    )
    assert Membership.objects.filter(user=role_users["reviewer"], organisation=nimbus).exists()
    assert not Membership.objects.filter(user=acme_admin, organisation=nimbus).exists()


@pytest.mark.parametrize("role", ["submitter", "reviewer", "auditor"])
def test_members_who_are_not_admins_cannot_invite(role_users, role):
    acme = role_users["organisations"]["acme"]
    user = role_users[role]
    with pytest.raises(NotAllowedError):
        invitation_create(organisation=acme, email="x@example.org", roles=["submitter"], actor=user)
    client = _client(user)
    assert client.get("/accounts/organisations/acmecompute/").status_code == 404
    assert (
        client.post(
            "/accounts/organisations/acmecompute/invite/", {"email": "x@example.org", "roles": ["submitter"]}
        ).status_code
        == 404
    )
    assert (
        client.post(
            "/accounts/organisations/", {"name": "Sneaky", "kind": "neocloud", "admin_email": "a@b.org"}
        ).status_code
        == 404
    )
    assert not Invitation.objects.exists() and not Organisation.objects.filter(name="Sneaky").exists()


def test_a_submitter_cannot_promote_themself(role_users):
    client = _client(role_users["submitter"])
    response = client.post(
        f"/accounts/organisations/acmecompute/members/{role_users['submitter'].pk}/", {"roles": ["org_admin"]}
    )
    assert response.status_code == 404
    assert not Membership.objects.filter(user=role_users["submitter"], role="org_admin").exists()


# --- Changing and removing memberships ---------------------------------------------------------------------


def test_the_admin_changes_roles_and_removes_a_member_each_audited(role_users, acme_admin):
    submitter = role_users["submitter"]
    client = _client(acme_admin)
    client.post(f"/accounts/organisations/acmecompute/members/{submitter.pk}/", {"roles": ["reviewer"]})
    assert list(Membership.objects.filter(user=submitter).values_list("role", flat=True)) == ["reviewer"]
    granted = Membership.objects.get(user=submitter)
    assert granted.added_by == acme_admin
    client.post(f"/accounts/organisations/acmecompute/members/{submitter.pk}/", {"remove": "1"})
    assert not Membership.objects.filter(user=submitter).exists()
    revoked = AuditEvent.objects.filter(action="membership.revoked").order_by("sequence")
    assert [(e.actor, e.data["role"]) for e in revoked] == [
        (acme_admin, "submitter"),
        (acme_admin, "reviewer"),
    ]


def test_the_last_admin_stays(role_users, acme_admin):
    acme = role_users["organisations"]["acme"]
    with pytest.raises(ApplicationError) as refused:
        membership_roles_set(user=acme_admin, organisation=acme, roles=["submitter"], actor=acme_admin)
    assert refused.value.code == "last_admin"
    page = _client(acme_admin).post(
        f"/accounts/organisations/acmecompute/members/{acme_admin.pk}/", {"remove": "1"}, follow=True
    )
    assert "needs an admin" in page.content.decode()
    assert Membership.objects.filter(user=acme_admin, role="org_admin").exists()


# --- The chair ------------------------------------------------------------------------------------------------


def test_the_chair_creates_an_organisation_with_its_first_admin(
    role_users, django_capture_on_commit_callbacks
):
    client = _client(role_users["chair"])
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            "/accounts/organisations/",
            {"name": "Helix Compute", "kind": "neocloud", "admin_email": "boss@helix.example"},
        )
    assert response.status_code == 302 and response["Location"] == "/accounts/organisations/helix-compute/"
    invitation = Invitation.objects.get(organisation__slug="helix-compute")
    assert invitation.roles == ["org_admin"] and invitation.invited_by == role_users["chair"]
    assert mail.outbox[-1].to == ["boss@helix.example"]
    boss = UserFactory(username="boss", email="boss@helix.example")
    VerifiedAddress.objects.create(user=boss, email="boss@helix.example")
    _client(boss).post(_link_in(mail.outbox[-1]))
    assert _client(boss).get("/accounts/organisations/helix-compute/").status_code == 200  # now its admin
    assert AuditEvent.objects.filter(action="organisation.created", actor=role_users["chair"]).exists()


def test_only_the_chair_grants_and_revokes_global_roles(role_users, acme_admin):
    chair = _client(role_users["chair"])
    response = chair.post("/accounts/roles/", {"user": "reviewer@example.com", "role": "auditor"})
    assert response.status_code == 302
    held = GlobalRole.objects.get(user=role_users["reviewer"], role="auditor")
    assert "reviewer" in chair.get("/accounts/roles/").content.decode()
    chair.post(f"/accounts/roles/{held.pk}/remove/")
    assert not GlobalRole.objects.filter(pk=held.pk).exists()
    assert {"global_role.granted", "global_role.revoked"} <= set(
        AuditEvent.objects.values_list("action", flat=True)
    )
    with pytest.raises(NotAllowedError):
        organisation_create_with_admin(name="X", kind="neocloud", admin_email="a@b.org", actor=acme_admin)
    auditor_grant = _client(role_users["auditor"]).post(
        "/accounts/roles/", {"user": "reviewer", "role": "chair"}
    )
    assert (
        auditor_grant.status_code == 404
        and not GlobalRole.objects.filter(user=role_users["reviewer"]).exists()
    )
