"""Services for organisations, members, global roles and API tokens: chair-only rules, and every write audited."""

import pytest
from django.core.exceptions import ValidationError

from accounts.models import Membership, Organisation
from accounts.services.organisations import global_role_grant, membership_grant, organisation_create
from accounts.services.tokens import api_token_create
from audit.models import AuditEvent
from portal.errors import NotAllowedError
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def test_chair_creates_organisation_and_it_is_audited(role_users):
    chair = role_users["chair"]
    organisation = organisation_create(name="Orbital Neocloud", kind="neocloud", actor=chair)
    assert organisation.slug == "orbital-neocloud"
    event = AuditEvent.objects.get(action="organisation.created")
    assert (event.actor, event.object_id, event.data) == (
        chair,
        str(organisation.pk),
        {"name": "Orbital Neocloud", "kind": "neocloud"},
    )


@pytest.mark.parametrize("role", ["submitter", "reviewer", "auditor"])
def test_only_the_chair_creates_organisations(role_users, role):
    with pytest.raises(NotAllowedError):
        organisation_create(name="Sneaky", kind="neocloud", actor=role_users[role])
    assert not Organisation.objects.filter(name="Sneaky").exists()


def test_organisation_kind_is_validated(role_users):
    with pytest.raises(ValidationError):
        organisation_create(name="Odd", kind="mainframe", actor=role_users["chair"])


def test_membership_grant_by_org_admin_only_in_own_org(role_users):
    acme, nimbus = role_users["organisations"]["acme"], role_users["organisations"]["nimbus"]
    org_admin = UserFactory()
    Membership.objects.create(user=org_admin, organisation=acme, role="org_admin")
    newcomer = UserFactory()
    membership_grant(user=newcomer, organisation=acme, role="submitter", actor=org_admin)
    with pytest.raises(NotAllowedError):
        membership_grant(user=newcomer, organisation=nimbus, role="submitter", actor=org_admin)
    # granting twice is a no-op, audited once
    membership_grant(user=newcomer, organisation=acme, role="submitter", actor=org_admin)
    assert AuditEvent.objects.filter(action="membership.granted").count() == 1


def test_global_role_grant_is_chair_only(role_users):
    user = UserFactory()
    with pytest.raises(NotAllowedError):
        global_role_grant(user=user, role="auditor", actor=role_users["auditor"])
    global_role_grant(user=user, role="auditor", actor=role_users["chair"])
    assert AuditEvent.objects.filter(action="global_role.granted", actor=role_users["chair"]).exists()


def test_api_token_is_never_written_to_the_audit_log(role_users):
    token, key = api_token_create(user=role_users["submitter"], name="laptop", actor=role_users["submitter"])
    event = AuditEvent.objects.get(action="api_token.created")
    assert key not in str(event.data) and token.digest not in str(event.data)
    assert event.data["name"] == "laptop" and event.data["scope"] == "read"
    with pytest.raises(NotAllowedError):
        api_token_create(user=role_users["submitter"], name="x", actor=role_users["reviewer"])
    with pytest.raises(NotAllowedError):  # not even the chair makes tokens for someone else
        api_token_create(user=role_users["submitter"], name="x", actor=role_users["chair"])
