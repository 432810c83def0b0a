"""An invitation is bound to the address it was sent to (issue 19): only an account whose verified e-mail address
is the invited one joins. A forwarded or leaked link taken by another account is refused with a stable code and
the refusal is audited; an account created from the link joins only once its owner opens the confirmation link
e-mailed to the invited address."""

from __future__ import annotations

import re

import pytest
from django.core import mail
from django.test import Client

from accounts.models import Invitation, Membership, VerifiedAddress
from accounts.selectors import user_email_verified
from accounts.services.addresses import email_change_confirm, email_change_request
from accounts.services.invitations import invitation_accept, invitation_create
from accounts.services.invitations import invitation_link as link_of
from audit.models import AuditEvent
from portal.errors import NotAllowedError
from tests.factories import MembershipFactory, UserFactory

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


def _invite(admin, organisation, email: str, roles=("reviewer",)) -> Invitation:
    return invitation_create(organisation=organisation, email=email, roles=list(roles), actor=admin)


def _verify_link(message) -> str:
    return re.search(r"http://[^/\s]+(/accounts/email/verify/[^/\s]+/)", message.body).group(1)


def test_a_leaked_link_accepted_by_another_account_is_refused_and_audited(role_users, acme_admin):
    acme = role_users["organisations"]["acme"]
    invitation = _invite(acme_admin, acme, "newcomer@example.org")
    reviewer = role_users["reviewer"]  # of NimbusCloud, address reviewer@example.com, verified
    VerifiedAddress.objects.create(user=reviewer, email=reviewer.email)
    client = _client(reviewer)

    page = client.get(link_of(invitation)).content.decode()
    assert 'data-code="invitation_wrong_account"' in page and "Join as reviewer" not in page
    refused = client.post(link_of(invitation))
    assert refused.status_code == 403
    assert 'data-code="invitation_wrong_account"' in refused.content.decode()
    assert "sent to newcomer@example.org" in refused.content.decode()
    assert not Membership.objects.filter(user=reviewer, organisation=acme).exists()
    invitation.refresh_from_db()
    assert invitation.accepted_at is None and invitation.is_pending  # still there for its addressee
    event = AuditEvent.objects.get(action="invitation.refused")
    assert event.actor == reviewer and event.data["reason"] == "address_mismatch"
    assert event.object_id == str(invitation.pk)

    with pytest.raises(NotAllowedError) as service_refusal:
        invitation_accept(invitation=invitation, user=reviewer)
    assert service_refusal.value.code == "invitation_wrong_account"
    assert AuditEvent.objects.filter(action="invitation.refused").count() == 2


def test_the_invited_address_must_be_verified_and_the_confirmation_link_joins(
    role_users, acme_admin, django_capture_on_commit_callbacks
):
    acme = role_users["organisations"]["acme"]
    invitee = UserFactory(username="invitee", email="Invitee@Example.org")
    invitation = _invite(acme_admin, acme, "invitee@example.org", roles=("submitter",))
    client = _client(invitee)
    assert not user_email_verified(invitee)

    page = client.get(link_of(invitation)).content.decode()
    assert "Send the confirmation link to invitee@example.org" in page
    unverified = client.post(link_of(invitation))
    assert unverified.status_code == 403 and 'data-code="email_unverified"' in unverified.content.decode()
    assert not Membership.objects.filter(user=invitee).exists()

    with django_capture_on_commit_callbacks(execute=True):
        sent = client.post(link_of(invitation), {"action": "verify"})
    assert sent.status_code == 302
    assert mail.outbox[-1].to == ["Invitee@Example.org"]
    verify = _verify_link(mail.outbox[-1])

    # Another account holding the confirmation link gets nothing from it.
    stranger = _client(role_users["submitter"])
    assert stranger.post(verify).status_code == 403
    assert not Membership.objects.filter(user=invitee).exists() and not user_email_verified(invitee)

    assert client.get(verify).status_code == 200 and not Membership.objects.filter(user=invitee).exists()
    joined = client.post(verify)
    assert joined.status_code == 302 and joined["Location"] == "/accounts/"
    assert list(Membership.objects.filter(user=invitee).values_list("role", flat=True)) == ["submitter"]
    assert user_email_verified(invitee)
    granted = AuditEvent.objects.get(action="membership.granted", data__user="invitee")
    assert granted.actor == invitee and granted.data["added_by"] == "acme-admin"
    assert AuditEvent.objects.get(action="invitation.accepted").actor == invitee
    assert AuditEvent.objects.get(action="account.email_verified").actor == invitee
    assert client.post(verify).status_code == 302  # opening it again changes nothing
    assert Membership.objects.filter(user=invitee).count() == 1


def test_an_account_created_from_a_leaked_link_joins_nothing_until_the_invited_address_confirms(
    role_users, acme_admin, django_capture_on_commit_callbacks
):
    acme = role_users["organisations"]["acme"]
    invitation = _invite(acme_admin, acme, "victim@example.org")
    holder = Client()  # whoever got hold of the link
    with django_capture_on_commit_callbacks(execute=True):
        response = holder.post(
            link_of(invitation),
            {"username": "grabber", "password1": "a-long-passphrase-1", "password2": "a-long-passphrase-1"},
        )
    assert response.status_code == 302
    assert not Membership.objects.filter(user__username="grabber").exists()
    assert mail.outbox[-1].to == ["victim@example.org"]  # the confirmation goes to the invited address only
    assert Invitation.objects.get(pk=invitation.pk).is_pending


def test_a_confirmed_address_change_verifies_the_new_address(role_users, acme_admin):
    acme = role_users["organisations"]["acme"]
    user = role_users["reviewer"]
    invitation = _invite(acme_admin, acme, "reviewer@nimbus.example")
    link = email_change_request(user=user, new_email="reviewer@nimbus.example")
    email_change_confirm(user=user, token=link.rstrip("/").split("/")[-1])
    user.refresh_from_db()
    assert user_email_verified(user)
    invitation_accept(invitation=invitation, user=user)
    assert Membership.objects.filter(user=user, organisation=acme, role="reviewer").exists()


def test_the_account_page_confirms_the_address(role_users, django_capture_on_commit_callbacks):
    user = role_users["submitter"]
    client = _client(user)
    assert 'data-email-verified="no"' in client.get("/accounts/").content.decode()
    with django_capture_on_commit_callbacks(execute=True):
        assert client.post("/accounts/email/verify/").status_code == 302
    assert mail.outbox[-1].to == [user.email]
    assert client.post(_verify_link(mail.outbox[-1])).status_code == 302
    assert 'data-email-verified="yes"' in client.get("/accounts/").content.decode()
    assert AuditEvent.objects.filter(action="account.email_verified", actor=user).count() == 1
